"""The CUDA context started in a background thread (foxhunt.train.cuda_start) exists once `join()` returns:
in a fresh process, before the main thread makes any device call of its own, and serves that thread."""

import json
import subprocess
import sys

import torch

if not torch.cuda.is_available():  # an error, not a skip: this file exists to run on a GPU
    raise RuntimeError("tests_gpu needs CUDA; run it on the GPU machine")

PROBE = """
import json, torch
from foxhunt.train.cuda_start import start_cuda_context
before = torch.cuda.is_initialized()
waited = start_cuda_context(torch.device("cuda"))()
after, reserved = torch.cuda.is_initialized(), torch.cuda.memory_reserved()
square = torch.ones(4, 4, device="cuda")
print(json.dumps({"before": before, "after": after, "reserved": reserved, "waited": waited,
                  "sum": torch.mm(square, square).sum().item()}))
"""


def test_the_context_exists_after_the_join_before_any_device_call_of_the_main_thread():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-4000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["before"] is False and probe["after"] is True
    assert probe["reserved"] > 0  # the thread's first allocation: the caching allocator's block
    assert probe["sum"] == 64.0 and probe["waited"] >= 0.0
