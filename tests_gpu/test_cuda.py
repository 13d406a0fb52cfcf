"""CUDA twins of the trainer's CPU tests: graph capture, device reductions, upload, zero copy.

These run on the GPU machine (`bash bench/gpu_run.sh`); CI has no GPU and collects only tests/.
"""

import numpy as np
import pytest
import torch
from trainer_cases import FOLDS, SMALL, planted_arrays, run_fold

from foxhunt.bars import generate_sample_bars
from foxhunt.config import DQNConfig, FoldConfig
from foxhunt.features import compute_features
from foxhunt.trainer import (
    DQNTrainer,
    periods_per_year,
    policy_metrics,
    rollout_positions,
    rollout_positions_reference,
    to_device,
)
from foxhunt.walk_forward import generate_walk_forward_indices

if not torch.cuda.is_available():  # an error, not a skip: this file exists to run on a GPU
    raise RuntimeError("tests_gpu needs CUDA; run it on the GPU machine")

CUDA = torch.device("cuda")


@pytest.fixture(scope="module")
def synthetic():
    return planted_arrays()


def test_upload_through_pinned_staging_is_exact(synthetic):
    features, targets, timestamp = synthetic
    data = to_device(features, targets, timestamp, CUDA)
    assert data.features.is_cuda and data.uploaded_bytes == features.nbytes + targets.nbytes
    assert torch.equal(data.features.cpu(), torch.from_numpy(features))
    assert torch.equal(data.targets.cpu(), torch.from_numpy(targets))


def test_training_step_is_one_captured_graph_kept_across_folds(synthetic):
    trainer = DQNTrainer(to_device(*synthetic, CUDA), SMALL, max_train_rows=8000)
    graph = trainer.graph
    assert graph is not None and trainer.graph_captures == 1
    for fold_range in FOLDS:
        run_fold(trainer, fold_range, epochs=1)
    assert trainer.graph is graph and trainer.graph_captures == 1


def test_reset_for_fold_makes_a_reused_cuda_trainer_equal_a_fresh_one(synthetic):
    data = to_device(*synthetic, CUDA)
    persistent = DQNTrainer(data, SMALL, max_train_rows=8000, seed=3)
    for fold_range in FOLDS[:2]:
        run_fold(persistent, fold_range)
    reused = run_fold(persistent, FOLDS[2])
    fresh = DQNTrainer(data, SMALL, max_train_rows=8000, seed=3)
    fresh_metrics = run_fold(fresh, FOLDS[2])
    for name, tensor in fresh.online.state_dict().items():
        assert torch.equal(tensor, persistent.online.state_dict()[name]), name
    assert reused == fresh_metrics
    assert persistent.history.loss == fresh.history.loss


def test_reset_keeps_graph_static_buffers_in_place(synthetic):
    trainer = DQNTrainer(to_device(*synthetic, CUDA), SMALL, max_train_rows=8000)
    run_fold(trainer, FOLDS[0], epochs=1)
    pointers = ([p.data_ptr() for p in trainer.online.parameters()],
                [v.data_ptr() for s in trainer.optimizer.state.values() for v in s.values()],
                trainer.mean.data_ptr(), trainer.replay_reward.data_ptr(), trainer.loss_sum.data_ptr())
    trainer.reset_for_fold(1)
    for state in trainer.optimizer.state.values():
        for value in state.values():
            assert not torch.any(value)
    assert pointers == ([p.data_ptr() for p in trainer.online.parameters()],
                        [v.data_ptr() for s in trainer.optimizer.state.values() for v in s.values()],
                        trainer.mean.data_ptr(), trainer.replay_reward.data_ptr(), trainer.loss_sum.data_ptr())


def test_graph_replay_matches_eager_steps(synthetic):
    data = to_device(*synthetic, CUDA)
    graphed = DQNTrainer(data, SMALL, max_train_rows=8000, seed=5)
    eager = DQNTrainer(data, SMALL, max_train_rows=8000, seed=5)
    eager.graph = None  # same trainer, steps run eagerly and uncompiled
    eager._td_loss = eager._td_loss_eager
    for trainer in (graphed, eager):
        trainer.set_fold_range(FOLDS[0])
        trainer.reset_for_fold(0)
        trainer.compute_norm_stats()
        trainer.collect(0.5)
        for _ in range(5):
            trainer._replay_steps()
    torch.cuda.synchronize()
    for name, tensor in eager.online.state_dict().items():
        torch.testing.assert_close(graphed.online.state_dict()[name], tensor, rtol=1e-3, atol=1e-5)
    torch.testing.assert_close(graphed.loss_sum, eager.loss_sum, rtol=1e-4, atol=1e-6)


def test_no_host_to_device_copy_of_features_after_the_load(synthetic, tmp_path):
    import json

    from torch.profiler import ProfilerActivity, profile

    features, targets, timestamp = synthetic
    data = to_device(features, targets, timestamp, CUDA)
    trainer = DQNTrainer(data, SMALL, max_train_rows=8000)
    storage = (data.features.untyped_storage().data_ptr(), data.targets.untyped_storage().data_ptr())
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for fold_range in FOLDS:
            run_fold(trainer, fold_range, epochs=1)
        torch.cuda.synchronize()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    uploads = [e for e in events if "HtoD" in e.get("name", "") and e.get("cat") == "gpu_memcpy"]
    uploaded = sum(int(e.get("args", {}).get("bytes", 0)) for e in uploads)
    # One feature row is 168 bytes; a per-fold upload of the training slice would be megabytes.
    assert uploaded < 168, (uploaded, len(uploads))
    assert storage == (trainer.data.features.untyped_storage().data_ptr(),
                       trainer.data.targets.untyped_storage().data_ptr())


def test_norm_stats_on_the_device_match_numpy(synthetic):
    features, targets, timestamp = synthetic
    trainer = DQNTrainer(to_device(features, targets, timestamp, CUDA), SMALL, max_train_rows=8000)
    trainer.set_fold_range(FOLDS[1])
    mean, std = trainer.compute_norm_stats()
    train = features[4000:12_000].astype(np.float64)
    np.testing.assert_allclose(mean.cpu().numpy(), train.mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(std.cpu().numpy(), train.std(axis=0), rtol=1e-4)


def test_scan_rollout_on_the_device_equals_the_sequential_loop():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 64, 1000, 4097, 100_003):
        maps = rng.integers(0, 3, size=(n, 3))
        for start in range(3):
            scanned = rollout_positions(torch.from_numpy(maps).to(CUDA), start).cpu().numpy()
            np.testing.assert_array_equal(scanned, rollout_positions_reference(maps, start))


def test_policy_metrics_on_the_device_equal_the_cpu(synthetic):
    rng = np.random.default_rng(1)
    positions = torch.from_numpy(rng.integers(-1, 2, 50_000).astype(np.float32))
    returns = torch.from_numpy((rng.standard_normal(50_000) * 1e-3).astype(np.float32))
    cpu = policy_metrics(positions, returns, 1e-4, 525_960.0)
    gpu = policy_metrics(positions.to(CUDA), returns.to(CUDA), 1e-4, 525_960.0)
    for key, value in cpu.items():
        assert gpu[key] == pytest.approx(value, rel=1e-6, abs=1e-9), key


def test_validation_on_cuda_equals_a_sequential_greedy_loop(synthetic):
    features, targets, timestamp = synthetic
    trainer = DQNTrainer(to_device(features, targets, timestamp, CUDA), SMALL, max_train_rows=8000)
    run_fold(trainer, FOLDS[0], epochs=1)
    start, end = 9000, 9300
    position, pnl = 0.0, []
    with torch.no_grad():
        for t in range(start, end):
            x = (torch.from_numpy(features[t]).to(CUDA) - trainer.mean) / trainer.std
            q = trainer.online(torch.cat([x, torch.tensor([position], device=CUDA)]).unsqueeze(0))
            new = float(q.argmax()) - 1.0
            pnl.append(new * float(targets[t, 0]) - SMALL.cost * abs(new - position))
            position = new
    got = trainer.validate(start, end)
    assert got["total_return"] == pytest.approx(float(np.sum(pnl)), rel=1e-5, abs=1e-8)


def test_it_learns_a_planted_signal_on_cuda():
    ar = 0.3
    bars = generate_sample_bars(150_000, seed=11, ar_coef=ar, sigma=1e-3)
    table = compute_features(bars)
    fold = generate_walk_forward_indices(table.timestamp, FoldConfig(train_days=60, val_days=15, step_days=15,
                                                                     max_folds=1), close_returns=table.targets[:, 0])[0]
    config = DQNConfig(hidden=64, batch_size=2048, steps_per_epoch=150)
    trainer = DQNTrainer(to_device(table.features, table.targets, table.timestamp, CUDA), config,
                         max_train_rows=fold.train_rows, seed=0)
    got = run_fold(trainer, fold, epochs=4)
    returns = torch.from_numpy(table.targets[fold.val_start:fold.val_end, 0].copy())
    expected = ar * torch.from_numpy(table.features[fold.val_start:fold.val_end, 0].copy())
    oracle = torch.where(expected.abs() > config.cost, torch.sign(expected), torch.zeros_like(expected))
    oracle_sharpe = policy_metrics(oracle, returns, config.cost,
                                   periods_per_year(table.timestamp[fold.val_start:fold.val_end]))["sharpe"]
    assert got["sharpe"] > got["flat"]["sharpe"] + 1.0
    assert got["sharpe"] >= 0.5 * oracle_sharpe
