"""The universe simulation (foxhunt.evaluate.universe_simulation): one shared policy over K independent
instruments, kept on the pooled tail, decided on evidence counted at the effective share, scored as the
equal-weighted book; one instrument is gate_simulation's run exactly."""

import math
import statistics
from types import SimpleNamespace

import numpy as np
import pytest

from foxhunt.config import DQNConfig
from foxhunt.evaluate.gate_simulation import (
    KeptFold,
    Scenario,
    _Market,
    coarsened,
    decide,
    kept_folds,
    stitched_record,
    window_sharpe,
)
from foxhunt.evaluate.universe_simulation import (
    UniverseFold,
    UniverseRun,
    _member_positions,
    book_record,
    decide_universe,
    pool_by_bars,
    stitched_net,
    universe_folds,
)
from foxhunt.train.evidence import WindowEvidence

EDGE = Scenario(holding_bars=240.0, drift_sharpe=3.0, skill=0.8)


def test_the_pooled_tail_sharpe_is_the_bar_weighted_mean_of_the_instruments():
    # 100 bars at Sharpe 2 and 300 at Sharpe -1: (200 - 300) / 400.
    pooled = pool_by_bars(np.array([100, 300]), np.array([[2.0, 1.0], [-1.0, 1.0]]))
    assert pooled.tolist() == [-0.25, 1.0]


def _hand_run() -> tuple[UniverseRun, float]:
    """Two instruments, one fold of 4 bars in two pieces of 2: A holds 1 then −1, B flat then 1."""
    returns = {"a": np.array([0.01, 0.02, -0.01, 0.03]), "b": np.array([0.02, -0.02, 0.01, 0.01])}
    members = []
    for name, kept in (("a", [1, -1]), ("b", [0, 1])):
        r = returns[name]
        val = (np.array([0, 1]), np.array([2, 2]), np.array([r[:2].sum(), r[2:].sum()]), None, r[[0, 2]])
        evidence = WindowEvidence(0, "out_of_sample", 4, 0.0, 3)
        members.append(KeptFold(evidence, evidence, 0, 4, val, np.array(kept, np.int8), np.ones(2, np.int8)))
    tail = WindowEvidence(0, "tail", 8, 0.0, 0)
    fold = UniverseFold(tail, tail, 0, 4, tuple(members))
    markets = tuple(SimpleNamespace(r=returns[n]) for n in ("a", "b"))
    return UniverseRun(markets, [fold], 1.0), 0.001  # type: ignore[arg-type]


def test_an_instruments_stitched_net_pays_each_change_at_its_pieces_first_bar():
    run, cost = _hand_run()
    a = stitched_net(run.markets[0], [run.folds[0].members[0]], np.array([True]), cost)
    # 1 × 0.01 − entry 0.001, 1 × 0.02, −1 × −0.01 − change 2 × 0.001, −1 × 0.03.
    assert a.tolist() == pytest.approx([0.009, 0.02, 0.008, -0.03], abs=1e-15)


def test_the_books_sharpe_is_the_per_bar_mean_over_instruments():
    run, cost = _hand_run()
    # A [0.009, 0.02, 0.008, −0.03], B [0, 0, 0.01 − 0.001, 0.01]: their mean per bar.
    book = [0.0045, 0.01, 0.0085, -0.01]
    record = book_record(run, np.array([True]), cost, per_year=1.0)
    assert record.sharpe == pytest.approx(0.00325 / statistics.pstdev(book), rel=1e-12)
    assert record.bars == 4


def test_the_book_oracle_holds_every_instruments_oracle_positions():
    run, cost = _hand_run()
    # Both long throughout: A [0.009, 0.02, −0.01, 0.03], B [0.019, −0.02, 0.01, 0.01].
    book = [0.014, 0.0, 0.0, 0.02]
    record = book_record(run, np.array([True]), cost, per_year=1.0, oracle=True)
    assert record.sharpe == pytest.approx(statistics.mean(book) / statistics.pstdev(book), rel=1e-12)


def test_a_flat_book_scores_zero():
    run, cost = _hand_run()
    assert book_record(run, np.array([False]), cost, per_year=1.0).sharpe == 0.0


def test_one_instrument_is_gate_simulations_run_exactly():
    shape, s = coarsened(EDGE, 60)
    alone = kept_folds(shape, s, np.random.default_rng(5))
    run = universe_folds(shape, s, 1, np.random.default_rng(5))
    assert [f.own for f in run.folds] == [f.own for f in alone]
    assert [f.shadow for f in run.folds] == [f.shadow for f in alone]
    trades = decide(alone, DQNConfig(), shape.bars_per_year)[1]
    assert trades.any() and not trades.all()
    assert decide_universe(run.folds, DQNConfig(), shape.bars_per_year).tolist() == trades.tolist()
    for oracle in (False, True):
        want = stitched_record(alone, trades, s.cost, shape.bars_per_year, oracle=oracle)
        got = book_record(run, trades, s.cost, shape.bars_per_year, oracle=oracle)
        assert got.sharpe == pytest.approx(want.sharpe, rel=1e-9)
        assert (got.low, got.bars) == (pytest.approx(want.low, rel=1e-9), want.bars)


def test_the_kept_epoch_is_the_best_on_the_pooled_tail_not_on_one_instruments():
    shape, s = coarsened(EDGE, 60)
    run = universe_folds(shape, s, 3, np.random.default_rng(7))
    rng = np.random.default_rng(7)  # the same draws, replayed
    markets = [_Market(shape, s, rng) for _ in range(3)]
    differs = 0
    for fold, window in zip(run.folds, shape.folds, strict=True):
        drawn = [_member_positions(m, window, s, rng) for m in markets]
        tails = np.stack([window_sharpe(tp, tail, s.cost, shape.bars_per_year) for tail, _, tp, _ in drawn])
        best = int(np.argmax(tails.mean(axis=0)))
        assert all((k.kept == d[3][best]).all() for k, d in zip(fold.members, drawn, strict=True))
        assert fold.own.sharpe == pytest.approx(tails[:, best].mean(), rel=1e-12)
        differs += best != int(np.argmax(tails[0]))
    assert differs > 0


def test_the_evidence_counts_every_instruments_bars_at_the_effective_share():
    shape, s = coarsened(Scenario(holding_bars=240.0), 60)
    run = universe_folds(shape, s, 4, np.random.default_rng(3))
    assert 0.8 < run.share < 1.0  # independent instruments: below 1 by the sampled correlations only
    t0, t1, v0, v1 = shape.folds[2]
    assert run.folds[2].own.bars == round(4 * (t1 - t0) * run.share)
    assert run.folds[2].shadow.bars == round(4 * (v1 - v0) * run.share)


def test_the_shadow_is_the_bar_weighted_mean_of_the_instruments_validation_sharpes():
    shape, s = coarsened(EDGE, 60)
    run = universe_folds(shape, s, 3, np.random.default_rng(2))
    for fold in run.folds:
        members = [k.shadow.sharpe for k in fold.members]
        assert fold.shadow.sharpe == pytest.approx(statistics.fmean(members), rel=1e-12)
        assert not math.isnan(fold.shadow.sharpe)
