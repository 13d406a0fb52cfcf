"""Where and on what a benchmark ran: the commit measured and the device's name."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    """HEAD's hash (with -dirty for uncommitted changes); FOXHUNT_GIT_COMMIT where the tree has no .git."""
    if os.environ.get("FOXHUNT_GIT_COMMIT"):
        return os.environ["FOXHUNT_GIT_COMMIT"]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty.strip() else "")


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, else what platform reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device) -> str:
    """The GPU's name for a CUDA device, else the CPU model."""
    if getattr(device, "type", "cpu") == "cuda":
        import torch

        return torch.cuda.get_device_name(device)
    return cpu_model()


def write_result(out: str | None, result: dict, indent: int = 2) -> None:
    """Write a benchmark's JSON to `out` (its folder made as needed) and say so; nothing without `out`."""
    if not out:
        return
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=indent) + "\n")
    print(f"wrote {out}")
