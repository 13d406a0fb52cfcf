# The CUDA tests reuse the CPU tests' inputs and device-parametrised cases (tests/).
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
# tests/ for `support.*`; the stage folders whose device-parametrised cases TWINS collects, and run/ for
# the CPU repeat test's helpers (test_repeat_cuda.py).
for folder in (TESTS, TESTS / "train", TESTS / "search", TESTS / "run"):
    sys.path.insert(0, str(folder))

TWINS = "test_device_twins.py"


def _cpu_case_of_a_twin(item) -> bool:
    """A test collected from tests/ through TWINS that is not its CUDA case (CI runs those)."""
    if item.path.name != TWINS:
        return False
    callspec = getattr(item, "callspec", None)
    return callspec is None or callspec.params.get("device") != "cuda"


def pytest_collection_modifyitems(config, items):
    """Keep only the CUDA cases of the device-parametrised tests collected from tests/."""
    cpu_cases = [item for item in items if _cpu_case_of_a_twin(item)]
    if cpu_cases:
        config.hook.pytest_deselected(items=cpu_cases)
        items[:] = [item for item in items if not _cpu_case_of_a_twin(item)]
