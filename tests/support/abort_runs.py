"""Run one `foxhunt` command many times, each in a new process with torch loaded before pyarrow.

    python tests/support/abort_runs.py RUNS ARG... ("{run}" in an argument becomes the run's number)

This process imports torch and the CLI once, as the trainer image does (torch first), then forks a
child per run: each child starts with torch loaded and pyarrow not yet imported, the order that made
pyarrow's threaded CSV reader abort, without paying for a torch import per run. Prints one JSON list:
per run, the child's exit code (negative: the signal that ended it, -6 for an abort) and its stderr.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import torch  # noqa: F401 (loaded first: the order under test)

from foxhunt.cli import main


def run_once(argv: list[str]) -> tuple[int, str]:
    """`foxhunt ARGV` in a forked child; its exit code and stderr (stdout is dropped)."""
    with tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: its own stderr, then the command, then out without the parent's cleanup
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(err.fileno(), 2)
            code = 1
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's refusals
                code = exc.code if isinstance(exc.code, int) else 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), err.read().decode(errors="replace")


if __name__ == "__main__":
    runs, template = int(sys.argv[1]), sys.argv[2:]
    results = [run_once([a.replace("{run}", str(i)) for a in template]) for i in range(runs)]
    print(json.dumps(results))
