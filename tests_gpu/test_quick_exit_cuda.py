"""A CUDA console command's quick exit (`foxhunt.quick_exit`): torch's compile workers, started for the
compiled step, do not outlive the process that ends without the interpreter's teardown; its files are whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from support.run_cases import PROCESS_TIMEOUT_S, tiny_fxcache, tiny_params, train_argv

from foxhunt.quick_exit import FULL_TEARDOWN_ENV, helper_processes

__all__ = ["tiny_fxcache", "tiny_params"]  # the CPU suite's fixtures: the same fxcache and parameters

ROOT = Path(__file__).resolve().parents[1]


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie awaiting its reaping is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def compile_workers_of(parent: int) -> set[int]:
    """torch's compile sidecars of `parent` (their command line says `--parent=PID`) and their pools."""
    sidecars = set()
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if f"--parent={parent}".encode() in command:
            sidecars.add(int(entry.name))
    return {pid for sidecar in sidecars for pid in (sidecar, *helper_processes(sidecar)) if alive(pid)}


def test_a_cuda_console_run_takes_its_compile_workers_with_it(tiny_fxcache, tiny_params, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != FULL_TEARDOWN_ENV}
    env.update(PYTHONPATH=str(ROOT / "trainer_image"), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               TRITON_CACHE_DIR=str(tmp_path / "triton"))  # fmt: skip
    argv = train_argv(tiny_fxcache, tmp_path / "out", tiny_params, "--epochs", "2", "--device", "cuda")
    run = subprocess.Popen([sys.executable, "-m", "foxhunt", *argv], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)  # fmt: skip
    seen: set[int] = set()
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    while run.poll() is None and time.monotonic() < deadline:
        seen |= compile_workers_of(run.pid)
        time.sleep(0.2)
    _, errors = run.communicate(timeout=60)
    assert run.returncode == 0, errors[-4000:]
    assert seen, "no compile worker started: this test proves nothing"
    assert not [pid for pid in seen if alive(pid)]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())  # whole: it parses
    assert summary["status"] == "succeeded" and len(summary["folds"]) == 3
