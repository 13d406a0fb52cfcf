"""The end of a console command's process: once its work is written, skip the interpreter's teardown.

After `main` returns, Python joins threads, runs the exit handlers (torch's compile workers, logging), frees
every module's objects and, on a GPU, tears down the CUDA context: 1.1–1.2 s on an H100, 0.14 s on a CPU,
all of it after the last file is written and the last figure pushed. A pod is done when its process is, so
that second is the cluster's and the user's. `leave` ends the process at once with `os._exit` instead, after
flushing what Python buffers (stdout, stderr, logging's handlers). The kernel still reclaims memory, files and
the device; torch's compile workers see their pipe close and stop.

It leaves only where nothing else is owed: the console command's own process (`collector.owned`), no thread
still running that is not a daemon, no child process of `multiprocessing` alive, and `FOXHUNT_FULL_TEARDOWN`
unset (set it to 1 for the interpreter's full exit, e.g. under a tool that reads exit handlers).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading

from foxhunt import collector

FULL_TEARDOWN_ENV = "FOXHUNT_FULL_TEARDOWN"


def owed_work() -> list[str]:
    """What a quick exit would cut short: the running non-daemon threads and live child processes, by name."""
    main = threading.main_thread()
    threads = [t.name for t in threading.enumerate() if t is not main and t.is_alive() and not t.daemon]
    children = [p.name for p in multiprocessing.active_children()]
    return threads + children


def leave(code: int) -> None:
    """End this process now with `code` when it may (see the module's notes); else return and exit as usual."""
    if not collector.owned() or os.environ.get(FULL_TEARDOWN_ENV, "") not in ("", "0") or owed_work():
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can reach it anyway
            pass
    os._exit(code)
