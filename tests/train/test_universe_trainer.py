"""A trainer over several instruments learns a fold as spans: transitions never cross an instrument,
held returns stop at each span's end, each row is normalised with its own instrument's stats, and an
instrument without a part in the fold is never read.

Poisoned rows (NaN features and returns) sit between the spans: a next state, a held return or a norm
stat that reached into them would turn a target, a reward or a stat into NaN.
"""

from dataclasses import replace

import numpy as np
import pytest
import torch
from support.dqn_cases import TINY, draw_for, member_q_and_target, readout_net, sign_net
from support.trainer_cases import DEVICES, FOLDS, MINUTE_NS, SMALL, planted_arrays, run_fold

from foxhunt.config import DQNConfig
from foxhunt.data.folds import FoldRange
from foxhunt.train import DQNTrainer
from foxhunt.train.device_data import FoldWindow, SpanPart, to_device, universe_to_device
from foxhunt.train.held_returns import held_returns_

N = 40  # rows per instrument
POISON = 6  # rows at the start of instrument 1 (and 2) that no span holds


def arrays(seed: int, scale: float = 1.0, shift: float = 0.0):
    rng = np.random.default_rng(seed)
    features = (rng.normal(size=(N, 2)) * scale + shift).astype(np.float32)
    targets = np.zeros((N, 4), np.float32)
    targets[:, 0] = rng.normal(scale=1e-3, size=N)
    return features, targets, np.arange(N, dtype=np.int64) * MINUTE_NS


def poisoned(seed: int, **kwargs):
    features, targets, ts = arrays(seed, **kwargs)
    features[:POISON] = np.nan
    targets[:POISON] = np.nan
    return features, targets, ts


def universe_trainer(config=TINY, k: int = 2, device: str = "cpu") -> DQNTrainer:
    """Instruments 0, 1(, 2): 0 clean, the others poisoned in their first POISON rows; no norm stats yet."""
    parts = [arrays(0)] + [poisoned(i) for i in range(1, k)]
    data = universe_to_device([f"i{i}" for i in range(k)], parts, torch.device(device))
    return DQNTrainer(data, config, max_train_rows=k * N, seed=0)


def part(instrument: int, start: int, learn_end: int, end: int = 30) -> SpanPart:
    """Instrument `instrument`'s part: training rows [start, end) of its own, learnt up to `learn_end`."""
    base = instrument * N
    fold = FoldRange(0, base + start, base + end, base + end, base + N, 0.0)
    return SpanPart(instrument, fold, base + learn_end)


def test_the_transition_rows_are_each_span_but_its_last_row():
    trainer = universe_trainer()
    trainer.window.set_parts([part(0, 0, N, N), part(1, POISON, 30)])
    rows = trainer.window.rows[: int(trainer.window.n_valid)].tolist()
    assert rows == list(range(0, N - 1)) + list(range(N + POISON, N + 29))


def test_one_part_is_the_single_range_of_today():
    trainer = universe_trainer()
    trainer.window.set_fold_range(FoldRange(0, 3, 30, 30, N, 0.0), learn_end=25)
    assert trainer.window.rows[: int(trainer.window.n_valid)].tolist() == list(range(3, 24))
    assert trainer.window.left[:21].tolist() == list(range(21, 0, -1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n_step", [1, 3, 8])
def test_no_target_reads_a_next_state_or_return_across_instruments(device, n_step):
    trainer = universe_trainer(replace(TINY, n_step=n_step), device=device)
    # Instrument 0 learns up to its very last row; instrument 1's span starts past its poisoned rows.
    trainer.window.set_parts([part(0, 0, N, N), part(1, POISON, 30)])
    trainer.window.compute_norm_stats()
    trainer.collect(epsilon=1.0)
    n = int(trainer.window.n_valid)
    assert torch.isfinite(trainer.replay.reward[0, :n]).all()
    readout_net(trainer.networks[0], 1.0, 16.0, [0.0, 0.0, 1.0])
    q, y, _ = member_q_and_target(trainer, draw_for(trainer, list(range(n))))
    assert torch.isfinite(q).all() and torch.isfinite(y).all()


@pytest.mark.parametrize("device", DEVICES)
def test_the_learning_step_draws_only_within_the_spans(device):
    # The step as the epoch runs it (captured on CUDA): every transition drawn, none reaching the poison.
    trainer = universe_trainer(replace(TINY, n_step=3, batch_size=64), k=3, device=device)
    trainer.window.set_parts([part(0, 0, N, N), part(1, POISON, 30), part(2, POISON, 25, 30)])
    trainer.window.compute_norm_stats()
    trainer.collect(epsilon=1.0)
    for _ in range(20):
        trainer.step.run()
    assert torch.isfinite(trainer.loss_sum).all() and float(trainer.loss_sum[0]) > 0
    assert all(torch.isfinite(p).all() for p in trainer.networks[0].parameters())


def test_held_returns_stop_at_each_spans_end():
    trainer = universe_trainer(replace(TINY, n_step=4))
    spans = [part(0, 2, 20, 20), part(1, POISON, 28)]
    trainer.window.set_parts(spans)
    held = trainer.replay.held_returns(trainer.window, [0.9], [4])
    assert held is not None
    targets = trainer.data.targets[:, 0]
    want = []
    for p in spans:  # by hand: each span's own returns, the hold cut at the span's last transition
        start, n = p.fold_range.train_start, p.learn_rows - 1
        out = torch.zeros(1, n)
        held_returns_(out, targets[start : start + n], [0.9], [4])
        want.append(out[0])
    torch.testing.assert_close(held[0, : int(trainer.window.n_valid)], torch.cat(want), rtol=0, atol=0)


def test_each_row_is_normalised_with_its_own_instruments_stats():
    # Instrument 1 is instrument 0's features ×100 + 5 (its first rows poisoned): normalised, the same rows.
    features, targets, ts = arrays(0)
    shifted = features * 100 + 5
    shifted[:POISON] = np.nan
    data = universe_to_device(
        ["a", "b"], [(features, targets, ts), (shifted, targets, ts)], torch.device("cpu")
    )
    trainer = DQNTrainer(data, TINY, max_train_rows=2 * N, seed=0)
    trainer.window.set_parts([part(0, POISON, 30), part(1, POISON, 30)])
    trainer.window.compute_norm_stats()
    readout_net(trainer.networks[0], 1.0, 16.0, [0.0, 0.0, 1.0])
    n_each = 30 - POISON - 1
    q, _, _ = member_q_and_target(trainer, draw_for(trainer, list(range(2 * n_each))))
    torch.testing.assert_close(q[:n_each], q[n_each:], rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(
        trainer.window.means[1], trainer.window.means[0] * 100 + 5, rtol=1e-5, atol=1e-3
    )


def test_the_norm_stats_of_an_instrument_are_over_its_learnt_rows_only():
    trainer = universe_trainer()
    trainer.window.set_parts([part(1, POISON, 20)])
    trainer.window.compute_norm_stats()
    learnt = trainer.data.features[N + POISON : N + 20]
    torch.testing.assert_close(trainer.window.means[1], learnt.mean(0))
    assert torch.isfinite(trainer.window.stds[1]).all()


def test_an_instrument_absent_from_the_fold_takes_no_part():
    trainer = universe_trainer(k=3)
    trainer.window.set_parts([part(0, 0, 30), part(2, POISON, 30)])
    trainer.window.compute_norm_stats()
    n = int(trainer.window.n_valid)
    rows = trainer.window.rows[:n]
    assert not ((rows >= N) & (rows < 2 * N)).any()  # nothing of instrument 1
    assert torch.equal(trainer.window.means[1], torch.zeros(2)) and torch.equal(
        trainer.window.stds[1], torch.ones(2)
    )
    trainer.collect(epsilon=1.0)
    assert torch.isfinite(trainer.replay.reward[0, :n]).all()


def test_a_universe_of_one_is_the_upload_of_one():
    features, targets, ts = arrays(3)
    one = universe_to_device(["x"], [(features, targets, ts)], torch.device("cpu"))
    plain = to_device(features, targets, ts, torch.device("cpu"))
    assert torch.equal(one.features, plain.features) and one.instruments == plain.instruments == 1
    assert one.universe.names == ("x",)


def test_a_fold_part_crossing_its_instruments_end_is_refused():
    trainer = universe_trainer()
    with pytest.raises(ValueError, match="cross"):
        trainer.window.set_parts([SpanPart(0, FoldRange(0, 10, N + 5, N + 5, N + 10, 0.0), N)])


def test_the_tail_figure_is_the_instruments_tails_pooled_by_bars():
    trainer = universe_trainer(replace(TINY, select_tail_share=0.25, select_pool="fold"))
    sign_net(trainer.networks[0])  # long or short by the sign of the first feature
    trainer.window.set_parts([part(0, 0, 20, 30), part(1, POISON, 22, 38)])  # tails of 10 and 16 bars
    trainer.window.compute_norm_stats()
    alone = []
    for instrument in (0, 1):
        trainer.window.focus(instrument)
        alone.append(trainer.policies.tail_score(0))
    trainer.window.focus(0)
    assert alone[0] != pytest.approx(alone[1])
    pooled = trainer.policies.pooled_tail_score(0)
    assert pooled == pytest.approx((10 * alone[0] + 16 * alone[1]) / 26, rel=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_a_fold_of_one_instrument_in_a_universe_learns_what_that_instrument_alone_learns(device):
    # The universe's path (stats gathered by instrument id, rows through the transition tensor) does the
    # same arithmetic as one instrument's: the same weights, bit for bit.
    alone_arrays, other = planted_arrays(), planted_arrays(seed=8)
    alone = DQNTrainer(to_device(*alone_arrays, torch.device(device)), SMALL, max_train_rows=8000, seed=4)
    data = universe_to_device(["a", "b"], [alone_arrays, other], torch.device(device))
    together = DQNTrainer(data, SMALL, max_train_rows=8000, seed=4)
    for trainer in (alone, together):
        run_fold(trainer, FOLDS[0], epochs=2)
    for name, weights in alone.networks[0].state_dict().items():
        assert torch.equal(together.networks[0].state_dict()[name], weights), name


def hand_window(column: list[float], capacity: int = 40) -> FoldWindow:
    """A window over one instrument whose two features are `column` and a constant 5."""
    features = np.full((len(column), 2), 5.0, np.float32)
    features[:, 0] = column
    targets = np.zeros((len(column), 4), np.float32)
    data = to_device(
        features, targets, np.arange(len(column), dtype=np.int64) * MINUTE_NS, torch.device("cpu")
    )
    return FoldWindow(data, capacity)


def test_the_norm_std_is_the_population_std_of_the_learnt_rows():
    # Learnt rows 2..5 hold 1, 3, 1, 3: mean 2, population std 1 (the sample std would be √(4/3)).
    window = hand_window([9.0, 9.0, 1.0, 3.0, 1.0, 3.0, 9.0, 9.0, 9.0, 9.0])
    window.set_fold_range(FoldRange(0, 2, 8, 8, 10, 0.0), learn_end=6)
    mean, std = window.compute_norm_stats()
    assert mean.tolist() == [2.0, 5.0]
    assert std.tolist() == [1.0, 1.0]


def test_a_part_must_learn_from_at_least_two_rows():
    window = hand_window([0.0] * 10)
    window.set_fold_range(FoldRange(0, 2, 8, 8, 10, 0.0), learn_end=4)  # two rows: one transition
    assert int(window.n_valid) == 1
    with pytest.raises(ValueError, match="learning rows end 3"):
        window.set_fold_range(FoldRange(0, 2, 8, 8, 10, 0.0), learn_end=3)


def test_a_fold_whose_transitions_exactly_fill_the_replay_fits():
    window = hand_window([0.0] * 20, capacity=10)
    window.set_fold_range(FoldRange(0, 0, 11, 11, 20, 0.0))  # 11 rows, 10 transitions
    assert int(window.n_valid) == 10
    with pytest.raises(ValueError, match="11 transitions exceed the replay.s 10"):
        window.set_fold_range(FoldRange(0, 0, 12, 12, 20, 0.0))


def test_an_epoch_takes_enough_steps_to_cover_every_learnt_row_once():
    window = hand_window([0.0] * 40)
    window.set_fold_range(FoldRange(0, 3, 30, 30, 40, 0.0), learn_end=28)  # 25 learnt rows
    assert window.steps_per_epoch(DQNConfig(batch_size=8, steps_per_epoch=0)) == 4  # ⌈25 / 8⌉
    assert window.steps_per_epoch(DQNConfig(batch_size=8, steps_per_epoch=7)) == 7


def test_an_instrument_that_leaves_the_fold_gets_its_stats_back_to_zero_and_one():
    trainer = universe_trainer(k=3)
    trainer.window.set_parts([part(0, 0, 30), part(1, POISON, 30), part(2, POISON, 30)])
    trainer.window.compute_norm_stats()
    assert not torch.equal(trainer.window.means[1], torch.zeros(2))
    trainer.window.set_parts([part(0, 0, 30), part(2, POISON, 30)])
    trainer.window.compute_norm_stats()
    assert torch.equal(trainer.window.means[1], torch.zeros(2))
    assert torch.equal(trainer.window.stds[1], torch.ones(2))
