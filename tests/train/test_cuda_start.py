"""The CUDA context's start in a background thread: concurrent with the caller's work, joined before the
first device call, its error raised in the caller's thread, nothing at all for a CPU run. The starts here
are stand-ins (CI has no GPU); tests_gpu/test_cuda_start_cuda.py starts the real context."""

import threading

import pytest
import torch

from foxhunt.train.cuda_start import start_cuda_context

CUDA = torch.device("cuda")


def test_a_cpu_run_starts_nothing():
    calls = []
    join = start_cuda_context(torch.device("cpu"), calls.append)
    assert join() == 0.0 and calls == []


def test_the_start_runs_in_another_thread_while_the_caller_reads():
    reading, started = threading.Event(), threading.Event()
    seen = {}

    def initialize(device):
        seen["device"], seen["thread"] = device, threading.current_thread()
        started.set()
        seen["overlapped"] = reading.wait(timeout=10)  # ends only once the caller reads: they overlap

    join = start_cuda_context(CUDA, initialize)
    assert started.wait(timeout=10)  # begun before the caller's work, with no join asked for
    reading.set()  # the caller's read
    join()
    assert seen["device"] == CUDA and seen["overlapped"] is True
    assert seen["thread"] is not threading.current_thread()


def test_join_returns_only_once_the_start_has_finished():
    release, done = threading.Event(), []

    def initialize(device):
        release.wait(timeout=10)
        done.append(device)

    join = start_cuda_context(CUDA, initialize)
    threading.Timer(0.2, release.set).start()
    waited = join()
    assert done == [CUDA] and waited >= 0.1


def test_an_error_of_the_start_is_raised_by_join_in_the_callers_thread():
    def initialize(device):
        raise RuntimeError("CUDA error: no kernel image is available for execution on the device")

    join = start_cuda_context(CUDA, initialize)
    with pytest.raises(RuntimeError, match="no kernel image"):
        join()
    join()  # raised once: the run's error path joins again and finds nothing left to raise
