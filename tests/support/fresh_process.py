"""What a fresh Python process imports: the import-cost tests' one way to ask."""

import ast
import subprocess
import sys
from collections.abc import Iterable


def loaded_after(code: str, packages: Iterable[str], timeout: float = 120) -> list[str]:
    """Which of `packages` (top-level names) a fresh interpreter has imported after running `code`
    (a failure of `code` fails the caller's test with its stderr)."""
    wanted = sorted(set(packages))
    probe = f"{code}\nimport sys\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & set({wanted!r})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])
