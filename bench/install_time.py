"""How long the README's first command takes to install: a fresh venv, torch 2.13.0, then the package.

    python bench/install_time.py [--repeats 3] [--out bench/results/install_time-DATE-COMMIT.json]

Each repeat is the README's install as cold processes in a new temporary folder: `python3 -m venv`,
`pip install torch==2.13.0` (the CPU wheel pip's configuration finds on disk, evicted from the page
cache first where it can be), then `pip install -e '.[train]'` of this checkout, with pip's cache off
(PIP_NO_CACHE_DIR) so no repeat reuses another's downloads or built wheels. It prints each step's
seconds and writes them as JSON with the medians, the load average around each repeat (a loaded
machine installs slower; the JSON says how loaded it was), the CPU, the commit and the date.
`tests/test_readme_install_time.py` checks the README's stated figure against the newest JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from provenance import cpu_model, git_commit

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
TORCH = "torch==2.13.0"  # the README's pin
STEPS = ("venv", "torch", "package")
WHAT = "the README's install: python3 -m venv, pip install torch==2.13.0, pip install -e '.[train]'"


def torch_wheel() -> Path | None:
    """The torch 2.13.0 wheel in pip's find-links folders (PIP_FIND_LINKS or pip's config), if any."""
    links = os.environ.get("PIP_FIND_LINKS", "")
    if not links:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
            capture_output=True,
            text=True,
        )
        links = listed.stdout.strip()
    for folder in links.split():
        found = sorted(Path(folder).glob("torch-2.13.0*.whl"))
        if found:
            return found[0]
    return None


def evict(path: Path | None) -> dict | None:
    """Drop `path` from the page cache (bench/page_cache.py); what was resident before and after."""
    if path is None:
        return None
    from page_cache import evict as drop

    return drop(path)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one process; its output goes to the log only when it fails."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(
            f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return seconds


def one_install(python: str, wheel: Path | None) -> dict:
    """One repeat: the README's three install steps in a new folder; seconds per step and the load."""
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    load_before = os.getloadavg()
    eviction = evict(wheel)
    with tempfile.TemporaryDirectory(prefix="foxhunt-install-") as tmp:
        venv = Path(tmp) / ".venv"
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        seconds = {
            "venv": timed([python, "-m", "venv", str(venv)], env, ROOT),
            "torch": timed([*pip, TORCH], env, ROOT),
            "package": timed([*pip, "-e", ".[train]"], env, ROOT),
        }
        check = subprocess.run(
            [str(venv / "bin" / "foxhunt"), "--version"], capture_output=True, text=True, env=env
        )
        if check.returncode != 0:
            sys.exit(f"the installed foxhunt does not start: {check.stderr}")
    return {
        "seconds": {**seconds, "total": sum(seconds.values())},
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "torch_wheel_eviction": eviction,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--python", default="python3", help="the interpreter the README's venv is made with")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    wheel = torch_wheel()
    python_version = subprocess.run(
        [args.python, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    print(
        f"{args.repeats} cold installs with {python_version}; torch from {wheel or 'the index'}", flush=True
    )
    runs = []
    for i in range(args.repeats):
        run = one_install(args.python, wheel)
        runs.append(run)
        s = run["seconds"]
        print(
            f"repeat {i + 1}: venv {s['venv']:.1f} s, {TORCH} {s['torch']:.1f} s, package {s['package']:.1f} s, "
            f"total {s['total']:.1f} s (load {run['load_before'][0]:.2f} → {run['load_after'][0]:.2f})",
            flush=True,
        )
    median = {step: statistics.median(r["seconds"][step] for r in runs) for step in (*STEPS, "total")}
    now = datetime.now(timezone.utc)
    commit = git_commit()
    result = {
        "what": WHAT,
        "date": now.isoformat(timespec="seconds"),
        "commit": commit,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": python_version,
        "torch_source": str(wheel) if wheel else "index",
        "pip_cache": "off (PIP_NO_CACHE_DIR=1)",
        "repeats": runs,
        "median_seconds": median,
        "load_average_1min": {
            "min": min(min(r["load_before"][0], r["load_after"][0]) for r in runs),
            "max": max(max(r["load_before"][0], r["load_after"][0]) for r in runs),
        },
    }
    print(
        f"median: venv {median['venv']:.1f} s, torch {median['torch']:.1f} s, package {median['package']:.1f} s, "
        f"total {median['total']:.1f} s",
        flush=True,
    )
    out = args.out or RESULTS / f"install_time-{now:%Y-%m-%dT%H%M}-{commit[:7]}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
