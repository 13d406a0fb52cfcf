"""`foxhunt` commands as processes of their own, forked from one that has already imported the training stack.

A fresh `python -m foxhunt train` spends seconds importing torch, the compiler front end its optimiser
loads, Optuna, matplotlib and the package before any work; the suite starts some twenty such processes
to kill them, signal them or run them side by side. `python tests/support/forked_runs.py` (the fork
server) imports all of that once and runs nothing itself. For each request it forks a child that is the
command: a process of its own (its pid is what the test signals), with the request's environment,
working folder and console file and one torch thread, running `foxhunt.cli.main(argv)` and exiting with what it returns, as
`python -m foxhunt` does. The pytest process talks to the server over a pipe, one JSON line per request
and reply; `start_foxhunt` returns a `ForkedProcess`, the part of `subprocess.Popen` the tests use.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve()
# What a train, search or pipeline command imports; a name that no longer imports only costs the child
# its own import of what it needs.
PRELOAD = (
    "foxhunt.cli",
    "foxhunt.cli.commands",
    "torch",
    "torch._dynamo",
    "foxhunt.run.pipeline",
    "foxhunt.search.driver",
    "foxhunt.evaluate.plot",
    "foxhunt.evaluate.run_scores",
    "foxhunt.evaluate.stitched_report",
    "foxhunt.evaluate.plot_run",
    "foxhunt.evaluate.supervised",
    "optuna",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
)


# ---- the server (this file as a script) ------------------------------------------------------------------
def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _status(pid: int, wait_s: float, ended: dict[int, int]) -> int | None:
    """The child's exit code (negative: the signal that ended it), waiting up to `wait_s`; None if running."""
    deadline = time.monotonic() + wait_s
    while pid not in ended:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            ended[pid] = os.waitstatus_to_exitcode(status)
        elif time.monotonic() >= deadline:
            return None
        else:
            time.sleep(0.005)
    return ended[pid]


def serve() -> dict | None:
    """Answer requests until the pipe closes (None); in a forked child, return the child's request."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # anything printed here goes to the server's log
    ended: dict[int, int] = {}
    children: list[int] = []
    for line in requests:
        request = json.loads(line)
        if "start" in request:
            pid = os.fork()
            if pid == 0:
                requests.close()
                os.close(replies)
                os.close(null)
                return request["start"]
            children.append(pid)
            reply: dict = {"pid": pid}
        else:
            reply = {"code": _status(request["pid"], request["wait_s"], ended)}
        os.write(replies, (json.dumps(reply) + "\n").encode())
    for pid in children:  # the session is over: nothing outlives it
        if pid not in ended:
            os.kill(pid, signal.SIGKILL)
            _status(pid, 10.0, ended)
    return None


def become(request: dict) -> list[str]:
    """In the child: take the request's folder, environment and console; the argv to run."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    console = os.open(request["console"], os.O_WRONLY | os.O_APPEND)  # the client has created it
    os.dup2(console, 1)
    os.dup2(console, 2)
    os.close(console)
    sys.path[0] = os.getcwd()  # as `python -m` has it
    sys.argv = [
        str(Path(sys.modules["foxhunt"].__file__ or "foxhunt").parent / "__main__.py"),
        *request["argv"],
    ]
    # One torch thread, as the pytest process has (tests/conftest.py): the tests' tensors are tiny, and
    # runs side by side on 2 cores would otherwise wait on each other's intra-op threads.
    import torch

    torch.set_num_threads(1)
    poll_s = request.get("trial_poll_s")
    if poll_s is not None:  # a worker waiting for another's trial looks again this often, not every heartbeat
        from foxhunt.search import slot_loop, trial_loop

        for loop in (trial_loop.run_trials, slot_loop.run_slot_trials):
            defaults = loop.__kwdefaults__
            assert defaults is not None and "poll_seconds" in defaults, (
                f"{loop.__name__} takes no poll_seconds"
            )
            defaults["poll_seconds"] = poll_s
    return request["argv"]


# ---- the client (in the pytest process) ------------------------------------------------------------------
class ForkServer:
    """The fork server process and its pipe."""

    def __init__(self, log: Path) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with log.open("ab") as sink:
            self.process = subprocess.Popen(
                [sys.executable, str(SERVER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=sink,
                env=env,
            )

    def ask(self, request: dict) -> dict:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server ended ({self.process.poll()}); see its log")
        return json.loads(line)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


class ForkedProcess:
    """A `foxhunt` command forked by the server: pid, returncode, poll, wait, send_signal, kill, terminate."""

    def __init__(self, server: ForkServer, pid: int, argv: Sequence[str]) -> None:
        self.server, self.pid, self.args, self.returncode = server, pid, list(argv), None

    def _status(self, wait_s: float) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.ask({"pid": self.pid, "wait_s": wait_s})["code"]
        return self.returncode

    def poll(self) -> int | None:
        return self._status(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._status(1e9 if timeout is None else timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


_server: ForkServer | None = None
_log_dir: Path | None = None


@pytest.fixture(scope="session", autouse=True)
def fork_server(tmp_path_factory):
    """Where the server logs; it starts at the first forked command and stops with the session."""
    global _server, _log_dir
    _log_dir = tmp_path_factory.mktemp("fork-server")
    yield
    if _server is not None:
        _server.close()
        _server = None


def start_foxhunt(
    argv: Sequence[str],
    console: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    trial_poll_s: float | None = None,
) -> ForkedProcess:
    """`foxhunt ARGV` as a process of its own, stdout and stderr into `console` (the test's environment and
    folder unless given); `trial_poll_s`: how often a search worker waiting for another's trial looks."""
    global _server
    if _server is None:
        assert _log_dir is not None, "the fork_server fixture (tests/conftest.py) is not active"
        _server = ForkServer(_log_dir / "server.log")
    console.write_bytes(b"")  # there (empty) before the command starts, as a Popen's output file is
    request = {
        "argv": list(argv),
        "console": str(console),
        "env": dict(os.environ if env is None else env),
        "cwd": str(cwd or os.getcwd()),
        "trial_poll_s": trial_poll_s,
    }
    return ForkedProcess(_server, _server.ask({"start": request})["pid"], argv)


if __name__ == "__main__":
    _preload()
    started = serve()
    if started is not None:  # a forked child: run the command as `python -m foxhunt` would, and exit
        argv = become(started)
        from foxhunt.cli import main

        sys.exit(main(argv))
