"""On CUDA: a trained fold loads as the run's own policy, and `foxhunt evaluate` in a fresh process
reproduces the run's evaluation."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from support.run_cases import TINY_DQN

from foxhunt.cli import main


def test_a_cuda_run_is_reproduced_by_its_loaded_policies_and_by_evaluate(tmp_path):
    from foxhunt.data.fxcache import read_fxcache
    from foxhunt.evaluate.fold_policy import load_policy
    from foxhunt.run.precompute import precompute

    tiny_fxcache = tmp_path / "tiny.fxcache"
    precompute(None, str(tiny_fxcache), sample_bars=20_000, seed=3, progress=lambda _: None)

    params = tmp_path / "params.json"
    params.write_text(json.dumps({"dqn": TINY_DQN}))
    out = tmp_path / "out"
    argv = ["train", "--fxcache", str(tiny_fxcache), "--out", str(out), "--hyperopt-params", str(params),
            "--epochs", "2", "--train-days", "5", "--val-days", "2", "--step-days", "2", "--max-folds", "2",
            "--device", "cuda", "--seed", "5"]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    features = read_fxcache(str(tiny_fxcache)).features
    for report in summary["folds"]:
        fold_dir = out / f"fold_{report['fold']}"
        policy = load_policy(str(fold_dir), device="cuda")
        rows = features[report["val_start"] : report["val_end"]]
        assert np.array_equal(policy.rollout(rows), np.load(fold_dir / "positions.npy"))
    done = subprocess.run(
        [sys.executable, "-m", "foxhunt", "evaluate", "--run", str(out), "--fxcache", str(tiny_fxcache),
         "--out", str(tmp_path / "ev"), "--device", "cuda"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    scored = json.loads((tmp_path / "ev" / "evaluation.json").read_text())
    assert differences(scored["folds"], [f["evaluation"] for f in summary["folds"]]) == []
    assert differences(scored["stitched"], summary["stitched"]) == []


def differences(a, b, path: str = "") -> list[str]:
    """The leaf paths where two JSON values differ (with both values), so a failure names the figure."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b))
        return [d for k in keys for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]
