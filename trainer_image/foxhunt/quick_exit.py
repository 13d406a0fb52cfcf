"""The end of a console command's process: once its work is written, skip the interpreter's teardown.

After `main` returns, Python joins threads, runs the exit handlers (torch's compile workers, logging), frees
every module's objects and, on a GPU, tears down the CUDA context: about a second on an H100 (0.73 s of it in
the exit handlers, torch's compile workers), 0.14 s on a CPU, all after the last file is written and pushed. A pod is done when its process is, so
that second is the cluster's and the user's. `leave` ends the process at once with `os._exit` instead, after
flushing what Python buffers (stdout, stderr, logging's handlers). The kernel still reclaims memory, files and
the device. The helper processes still running under it (torch's compile workers: a sidecar and its pool, idle
once the steps are compiled) are killed first, as a pod's end kills them: left alone they would tear down on
their own, a few CPU-seconds each, under whatever runs next on the node.

It leaves only where nothing else is owed: the console command's own process (`collector.owned`), no thread
still running that is not a daemon, no child process of `multiprocessing` alive, and `FOXHUNT_FULL_TEARDOWN`
unset (set it to 1 for the interpreter's full exit, e.g. under a tool that reads exit handlers).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import threading
from pathlib import Path

from foxhunt import collector

FULL_TEARDOWN_ENV = "FOXHUNT_FULL_TEARDOWN"


def full_teardown_wanted() -> bool:
    """Whether the environment asks for the interpreter's full exit (`FOXHUNT_FULL_TEARDOWN` set, not 0)."""
    return os.environ.get(FULL_TEARDOWN_ENV, "") not in ("", "0")


def owed_work() -> list[str]:
    """What a quick exit would cut short: the running non-daemon threads and live child processes, by name."""
    main = threading.main_thread()
    threads = [t.name for t in threading.enumerate() if t is not main and t.is_alive() and not t.daemon]
    children = [p.name for p in multiprocessing.active_children()]
    return threads + children


def helper_processes(root: int | None = None) -> list[int]:
    """The processes under `root` (this one by default), children before their own; none without /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:  # "PID (COMMAND) STATE PPID …": the command may hold spaces and parentheses
            parent = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # a process that ended while read
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [os.getpid() if root is None else root]
    while pending:
        below = children.get(pending.pop(0), [])
        found += below
        pending += below
    return found


def leave(code: int) -> None:
    """End this process now with `code` when it may (see the module's notes); else return and exit as usual."""
    if not collector.owned() or full_teardown_wanted() or owed_work():
        return
    for pid in helper_processes():
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can reach it anyway
            pass
    os._exit(code)
