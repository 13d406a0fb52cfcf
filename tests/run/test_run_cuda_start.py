"""`foxhunt train` starts the CUDA context for its device before it reads the fxcache, and joins it after
the read, before its first device call; an error of the start fails the run in one line (exit 1). The
start is a stand-in here (CI has no GPU): tests/train/test_cuda_start.py holds the thread's contract."""

import torch
from support.run_cases import train_argv

from foxhunt.cli import main
from foxhunt.run import pipeline


def _record(monkeypatch, events: list, join_error: Exception | None = None) -> None:
    """Stand-ins around the start, its join, the fxcache's read and the first device call."""

    def start(device):
        events.append(("start", device))

        def join():
            events.append(("join",))
            if join_error is not None:
                raise join_error
            return 0.0

        return join

    def read(uri):
        events.append(("read",))
        return real_read(uri)

    def device_call(device, *args, **kwargs):
        events.append(("device", device))
        return real_check(device, *args, **kwargs)

    real_read, real_check = pipeline.read_fxcache, pipeline.check_device_memory
    monkeypatch.setattr(pipeline, "start_cuda_context", start)
    monkeypatch.setattr(pipeline, "read_fxcache", read)
    monkeypatch.setattr(pipeline, "check_device_memory", device_call)


def test_the_start_comes_before_the_read_and_its_join_after_it_before_the_first_device_call(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch
):
    events: list = []
    _record(monkeypatch, events)
    argv = train_argv(tiny_fxcache, tmp_path / "out", tiny_params, "--epochs", "1", "--max-folds", "1")
    assert main(argv) == 0
    cpu = torch.device("cpu")
    assert events == [("start", cpu), ("read",), ("join",), ("device", cpu)]


def test_an_error_of_the_start_fails_the_run_in_one_line_and_releases_the_out(
    tiny_fxcache, tiny_params, tmp_path, monkeypatch, capsys
):
    events: list = []
    _record(monkeypatch, events, RuntimeError("CUDA error: initialization error"))
    argv = train_argv(tiny_fxcache, tmp_path / "out", tiny_params, "--epochs", "1", "--max-folds", "1")
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "CUDA error: initialization error" in err and len(err.splitlines()) == 1
    assert ("device", torch.device("cpu")) not in events  # no device call after a failed start
    assert not (tmp_path / "out").exists()  # refused before work: the lock released, no --out left
