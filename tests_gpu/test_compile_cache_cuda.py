"""The compiled step's cache between two fresh processes on CUDA: the first compiles and saves it, the
second (with empty Inductor and Triton caches, like a new pod) loads it and compiles nothing."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

if not torch.cuda.is_available():  # an error, not a skip: this file exists to run on a GPU
    raise RuntimeError("tests_gpu needs CUDA; run it on the GPU machine")

PROBE = Path(__file__).with_name("compile_cache_probe.py")


def _fresh_process(folder: Path, scratch: Path, members: int = 1) -> dict:
    """Run the probe (a trainer of `members`) with its own empty Inductor and Triton caches; its JSON report."""
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor"),
        "TRITON_CACHE_DIR": str(scratch / "triton"),
        "FOXHUNT_COMPILE_CACHE_KEY": "key-of-the-gpu-test-0123456789",  # in a pod: from a Secret
    }
    done = subprocess.run(
        [sys.executable, str(PROBE), str(folder), str(members)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_fresh_process_loads_the_saved_step_and_compiles_nothing(tmp_path):
    folder = tmp_path / "fx.arrow.torch-compile"
    first = _fresh_process(folder, tmp_path / "pod1")
    assert not first["loaded"] and first["saved_bytes"] > 0
    assert first["inductor"].get("fxgraph_cache_miss", 0) >= 1
    second = _fresh_process(folder, tmp_path / "pod2")
    assert second["loaded"] and second["saved_bytes"] == 0 and second["compiles"] == 1
    assert second["inductor"].get("fxgraph_cache_hit", 0) >= 1, second
    assert second["inductor"].get("fxgraph_cache_miss", 0) == 0, second


def test_a_population_keeps_its_own_step_beside_one_members(tmp_path):
    # 7f3befe: `--seeds 3` loaded one seed's blob, compiled its own step anyway and never saved it.
    folder = tmp_path / "fx.arrow.torch-compile"
    assert _fresh_process(folder, tmp_path / "one", members=1)["saved_bytes"] > 0
    first = _fresh_process(folder, tmp_path / "pod1", members=3)
    assert not first["loaded"] and first["saved_bytes"] > 0
    second = _fresh_process(folder, tmp_path / "pod2", members=3)
    assert second["loaded"] and second["saved_bytes"] == 0
    assert second["inductor"].get("fxgraph_cache_miss", 0) == 0, second
    assert len(list(folder.glob("*.bin"))) == 2
