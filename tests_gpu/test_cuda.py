"""CUDA-only trainer tests: pinned upload, graph capture, compile, settings read by the captured step,
no host-to-device copies. The cases both devices share are in tests/ (collected here by
test_device_twins.py).

These run on the GPU machine (`bash bench/gpu_run.sh`); CI has no GPU and collects only tests/.
"""

import json
from dataclasses import replace

import pytest
import torch
from support.trainer_cases import FOLDS, SMALL, planted_arrays, run_fold, target_network

from foxhunt.train import DQNTrainer, to_device

if not torch.cuda.is_available():  # an error, not a skip: this file exists to run on a GPU
    raise RuntimeError("tests_gpu needs CUDA; run it on the GPU machine")

CUDA = torch.device("cuda")


@pytest.fixture(scope="module")
def synthetic():
    return planted_arrays()


def five_steps(trainer: DQNTrainer) -> None:
    """The trainer pointed at the first fold, its replay collected half at random, then 5 captured steps."""
    trainer.window.set_fold_range(FOLDS[0])
    trainer.reset_for_fold(0)
    trainer.window.compute_norm_stats()
    trainer.collect(0.5)
    for _ in range(5):
        trainer.step.run()


def test_upload_through_pinned_staging_is_exact(synthetic):
    features, targets, timestamp = synthetic
    data = to_device(features, targets, timestamp, CUDA)
    assert data.features.is_cuda and data.uploaded_bytes == features.nbytes + targets.nbytes
    assert torch.equal(data.features.cpu(), torch.from_numpy(features))
    assert torch.equal(data.targets.cpu(), torch.from_numpy(targets))


def test_training_step_is_one_captured_graph_kept_across_folds(synthetic):
    trainer = DQNTrainer(to_device(*synthetic, CUDA), SMALL, max_train_rows=8000)
    graph = trainer.step.graph
    assert graph is not None and trainer.graph_captures == 1 and trainer.compiles == 1
    for fold_range in FOLDS:
        run_fold(trainer, fold_range, epochs=1)
    assert trainer.step.graph is graph and trainer.graph_captures == 1 and trainer.compiles == 1


def test_graph_replay_matches_eager_steps(synthetic):
    data = to_device(*synthetic, CUDA)
    graphed = DQNTrainer(data, SMALL, max_train_rows=8000, seed=5)
    eager = DQNTrainer(data, replace(SMALL, compile=False), max_train_rows=8000, seed=5)
    eager.step.graph = None  # the same plain steps, run eagerly and uncompiled
    for trainer in (graphed, eager):
        five_steps(trainer)
    torch.cuda.synchronize()
    for name, tensor in eager.networks[0].state_dict().items():
        torch.testing.assert_close(graphed.networks[0].state_dict()[name], tensor, rtol=1e-3, atol=1e-5)
    torch.testing.assert_close(graphed.loss_sum, eager.loss_sum, rtol=1e-4, atol=1e-6)


def test_shape_free_settings_reuse_one_capture_and_one_compile_across_trials(synthetic):
    trainer = DQNTrainer(to_device(*synthetic, CUDA), SMALL, max_train_rows=8000, seed=1)
    graph = trainer.step.graph
    trials = [
        SMALL,
        replace(SMALL, lr=1e-3, gamma=0.5),
        replace(SMALL, tau=0.05, huber_delta=0.5, cost=3e-4),
        replace(SMALL, grad_clip=1.0, weight_decay=1e-4, reward_scale=5e3, eps_start=0.5),
    ]
    losses = []
    for settings in trials:
        trainer.apply_settings(settings)
        run_fold(trainer, FOLDS[0], epochs=1)
        losses.append(trainer.histories[0].loss[0])
    assert trainer.step.graph is graph
    assert (trainer.graph_captures, trainer.compiles) == (1, 1)
    assert len(set(losses)) == len(trials), losses  # every trial trained with its own settings


def test_every_trainer_of_a_process_runs_a_compiled_step(synthetic, caplog):
    """Dynamo compiles each trainer's step anew; past its default limit of 8 it would run them eagerly."""
    data = to_device(*synthetic, CUDA)
    with caplog.at_level("WARNING", logger="torch._dynamo"):
        trainers = [DQNTrainer(data, SMALL, max_train_rows=8000, seed=i) for i in range(10)]
    assert all(t.compiles == 1 and t.graph_captures == 1 for t in trainers)
    assert not [r for r in caplog.records if "recompile_limit" in r.getMessage()]


def _one_replay_update(trainer: DQNTrainer, lr: float) -> float:
    """Largest weight change of one graph replay from the fold's fresh start, at learning rate `lr`."""
    trainer.apply_settings(replace(trainer.config, lr=lr))
    trainer.reset_for_fold(0)
    trainer.collect(0.5)
    before = [p.detach().clone() for p in trainer.params]
    trainer.step.run()
    return max(float((p.detach() - b).abs().max()) for p, b in zip(trainer.params, before, strict=True))


def test_captured_step_reads_the_learning_rate_from_the_device(synthetic):
    trainer = DQNTrainer(to_device(*synthetic, CUDA), SMALL, max_train_rows=8000)
    trainer.window.set_fold_range(FOLDS[0])
    trainer.window.compute_norm_stats()
    # Adam's first step moves each weight by about lr (m / sqrt(v) = ±1).
    assert _one_replay_update(trainer, 1e-4) == pytest.approx(1e-4, rel=0.05)
    assert _one_replay_update(trainer, 1e-2) == pytest.approx(1e-2, rel=0.05)
    assert trainer.graph_captures == 1


def test_captured_step_reads_gamma_from_the_device(synthetic):
    trainer = DQNTrainer(to_device(*synthetic, CUDA), SMALL, max_train_rows=8000)
    trainer.window.set_fold_range(FOLDS[0])
    trainer.window.compute_norm_stats()
    losses = {}
    for gamma in (0.9, 0.0, 0.9):
        trainer.apply_settings(replace(SMALL, gamma=gamma))
        trainer.reset_for_fold(0)
        trainer.collect(0.5)
        trainer.loss_sum.zero_()
        trainer.step.run()
        losses.setdefault(gamma, []).append(float(trainer.loss_sum))
    assert losses[0.9][0] == losses[0.9][1], "same settings, same draws: the same loss"
    assert losses[0.0][0] != losses[0.9][0]
    assert trainer.graph_captures == 1


def test_no_host_to_device_copy_of_features_after_the_load(synthetic, tmp_path):
    from torch.profiler import ProfilerActivity, profile

    features, targets, timestamp = synthetic
    data = to_device(features, targets, timestamp, CUDA)
    trainer = DQNTrainer(data, SMALL, max_train_rows=8000)
    storage = (data.features.untyped_storage().data_ptr(), data.targets.untyped_storage().data_ptr())
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for fold_range in FOLDS:
            run_fold(trainer, fold_range, epochs=1)
        trainer.apply_settings(replace(SMALL, lr=1e-3))
        torch.cuda.synchronize()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    uploads = [e for e in events if "HtoD" in e.get("name", "") and e.get("cat") == "gpu_memcpy"]
    uploaded = sum(int(e.get("args", {}).get("bytes", 0)) for e in uploads)
    # One feature row is 168 bytes; a per-fold upload of the training slice would be megabytes.
    assert uploaded < 168, (uploaded, len(uploads))
    assert storage == (
        trainer.data.features.untyped_storage().data_ptr(),
        trainer.data.targets.untyped_storage().data_ptr(),
    )


# float32 keeps the arithmetic to TF32's digits; bf16 (the default) rounds each product's output to about 3.
@pytest.mark.parametrize("bf16, close", [(False, (1e-3, 1e-5)), (True, (5e-2, 5e-3))])
def test_paired_next_state_values_train_like_two_separate_forwards(synthetic, bf16, close):
    data = to_device(*synthetic, CUDA)
    config = replace(SMALL, bf16=bf16)
    paired = DQNTrainer(data, config, max_train_rows=8000, seed=5)
    separate = DQNTrainer(data, replace(config, paired_next_state=False), max_train_rows=8000, seed=5)
    assert paired.pairs is not None and separate.pairs is None
    for trainer in (paired, separate):
        five_steps(trainer)
    torch.cuda.synchronize()
    rtol, atol = close
    for name, tensor in separate.networks[0].state_dict().items():
        torch.testing.assert_close(paired.networks[0].state_dict()[name], tensor, rtol=rtol, atol=atol)
    for name, tensor in target_network(separate).state_dict().items():
        torch.testing.assert_close(target_network(paired).state_dict()[name], tensor, rtol=rtol, atol=atol)
    torch.testing.assert_close(paired.loss_sum, separate.loss_sum, rtol=rtol / 10, atol=atol / 10)
    assert (paired.graph_captures, paired.compiles) == (1, 1)


def test_bf16_steps_with_padded_products_train_like_float32_steps(synthetic):
    data = to_device(*synthetic, CUDA)
    full = DQNTrainer(data, replace(SMALL, bf16=False), max_train_rows=8000, seed=5)
    half = DQNTrainer(data, SMALL, max_train_rows=8000, seed=5)  # bf16 is the default
    for trainer in (full, half):
        five_steps(trainer)
    torch.cuda.synchronize()
    assert (half.graph_captures, half.compiles) == (1, 1)
    for name, tensor in full.networks[0].state_dict().items():
        torch.testing.assert_close(half.networks[0].state_dict()[name], tensor, rtol=5e-2, atol=5e-3)
    torch.testing.assert_close(half.loss_sum, full.loss_sum, rtol=1e-1, atol=1e-4)  # bf16: about 3 digits
    assert not torch.equal(half.loss_sum, full.loss_sum)  # the products did run in bf16


def test_the_paired_buffers_are_the_weights_the_graph_updates(synthetic):
    trainer = DQNTrainer(to_device(*synthetic, CUDA), SMALL, max_train_rows=8000, seed=2)
    run_fold(trainer, FOLDS[0], epochs=1)
    online = [m for m in trainer.networks[0] if isinstance(m, torch.nn.Linear)]
    target = [m for m in target_network(trainer) if isinstance(m, torch.nn.Linear)]
    for layer, (on, tg) in enumerate(zip(online, target, strict=True)):
        weights, biases = (
            trainer.pairs[2 * layer],
            trainer.pairs[2 * layer + 1],
        )  # (2, P, ...): online, target
        assert torch.equal(weights[0][0], on.weight) and torch.equal(biases[1][0], tg.bias)
        assert not torch.equal(weights[0], weights[1])  # trained: the target lags the online network


def test_fused_activations_collect_the_same_replay(synthetic):
    data = to_device(*synthetic, CUDA)
    fused = DQNTrainer(data, SMALL, max_train_rows=8000, seed=4)
    plain = DQNTrainer(data, replace(SMALL, fused_activation=False), max_train_rows=8000, seed=4)
    for trainer in (fused, plain):
        trainer.window.set_fold_range(FOLDS[0])
        trainer.reset_for_fold(0)
        trainer.window.compute_norm_stats()
        trainer.collect(0.0)  # greedy: every action comes from the forward pass
    n = FOLDS[0].train_rows - 1
    same = (fused.replay.action[0, :n] == plain.replay.action[0, :n]).float().mean().item()
    assert same > 0.999, same  # only exact ties between two actions may break differently
    torch.testing.assert_close(fused.replay.position[0, :n], plain.replay.position[0, :n])
