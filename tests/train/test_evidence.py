"""The pooled trading decision (foxhunt.train.evidence): a fold trades on its own tail and the earlier folds'
out-of-sample windows, pooled by bars, with a guard on its own tail and no window from its validation on."""

import json
import math
from dataclasses import replace

import pytest

from foxhunt import strict_json
from foxhunt.config import DQNConfig
from foxhunt.errors import ConfigError
from foxhunt.train.evidence import (
    PooledDecision,
    WindowEvidence,
    decision_dict,
    effective_share,
    evidence_bars,
    evidence_dict,
    evidence_from_dict,
    pooled_decision,
    usable,
    zero_sharpe_error,
)
from foxhunt.train.selection import tail_gate

PER_YEAR = 362_880.0  # 252 days of 1440 minute bars
TAIL = 30_000
VAL_START = 10_000_000  # fold 3's first validation bar, ns
POOLED = replace(DQNConfig(), select_pool="pooled")


def tail(sharpe: float, bars: int = TAIL, fold: int = 3, end_ns: int = VAL_START - 61) -> WindowEvidence:
    return WindowEvidence(fold, "tail", bars, sharpe, end_ns)


def oos(fold: int, sharpe: float, bars: int = TAIL, end_ns: int | None = None) -> WindowEvidence:
    return WindowEvidence(
        fold, "out_of_sample", bars, sharpe, VAL_START - 1 - fold if end_ns is None else end_ns
    )


def decide(own: WindowEvidence, earlier=(), config: DQNConfig = POOLED, **kw) -> PooledDecision:
    return pooled_decision(own, earlier, config, PER_YEAR, VAL_START, **kw)


@pytest.mark.parametrize("sharpe", [-5.0, 0.0, 9.0, 10.4, 10.5, 11.0, 30.0])
def test_without_earlier_evidence_it_is_todays_tail_gate(sharpe):
    today = tail_gate(DQNConfig(), TAIL, PER_YEAR)  # 3 · sqrt(362,880 / 30,000) = 10.43
    decision = decide(tail(sharpe))
    assert decision.gate == today
    assert decision.trade == (sharpe > today)


def test_a_pooled_sharpe_equal_to_the_gate_does_not_trade():
    # The gate is a bar the pooled Sharpe must exceed: at t = 0 it is select_min_sharpe itself.
    config = replace(POOLED, select_pool_t=0.0, select_min_sharpe=2.5)
    decision = decide(tail(2.5), config=config)
    assert decision.gate == decision.pooled_sharpe == 2.5
    assert not decision.trade
    assert decide(tail(math.nextafter(2.5, 3.0)), config=config).trade


def test_three_earlier_windows_of_the_tails_length_halve_the_gates_errors():
    config = replace(POOLED, select_min_sharpe=1.0)
    alone = decide(tail(0.0), config=config).gate
    pooled = decide(tail(0.0), [oos(0, 0.0), oos(1, 0.0), oos(2, 0.0)], config=config).gate
    assert pooled - 1.0 == pytest.approx((alone - 1.0) / 2)  # four times the bars: sqrt(4)
    assert pooled - 1.0 == pytest.approx(3 * zero_sharpe_error(4 * TAIL, PER_YEAR))


def test_the_pooled_sharpe_is_weighted_by_bars():
    # 10,000 bars at 0 and 30,000 at 8: 6 by bars; an unweighted mean would say 4.
    decision = decide(tail(0.0, bars=10_000), [oos(1, 8.0, bars=30_000)])
    assert decision.pooled_sharpe == pytest.approx(6.0)
    assert decision.bars == 40_000


def test_evidence_a_fold_alone_misses_trades_when_pooled():
    # Tail Sharpe 6 (gate 10.4 alone); with five earlier months at 6 the gate is 4.26.
    earlier = [oos(j, 6.0) for j in range(3)] + [oos(j, 6.0, end_ns=VAL_START - 100 - j) for j in range(3, 5)]
    assert not decide(tail(6.0)).trade
    assert decide(tail(6.0), [replace(w, fold=min(w.fold, 2)) for w in earlier]).trade


def test_a_window_ending_at_the_validation_start_is_not_used():
    # A window whose last bar is the fold's first validation bar would decide it: it must be ignored.
    late = oos(2, 50.0, end_ns=VAL_START)
    decision = decide(tail(8.0), [late])
    assert not decision.trade and decision.windows == (tail(8.0).name,) and decision.ignored == 1
    assert decide(tail(8.0), [replace(late, end_ns=VAL_START - 1)]).trade  # one ns earlier: used


def test_only_the_folds_own_tail_of_its_windows_is_usable_to_it():
    # A fold's out-of-sample window is its validation: even were one to end before the validation start
    # (a malformed record), the rule takes the fold's own tail and earlier folds' windows, nothing else.
    assert usable(tail(8.0), 3, VAL_START) and usable(oos(2, 8.0), 3, VAL_START)
    assert not usable(oos(3, 8.0, end_ns=0), 3, VAL_START)


def test_a_later_folds_window_is_not_used_even_when_it_ends_earlier():
    decision = decide(tail(8.0), [oos(3, 50.0), oos(4, 50.0, end_ns=0)])
    assert not decision.trade and decision.ignored == 2


def test_changing_windows_at_or_after_the_validation_start_changes_nothing():
    earlier = [oos(0, 2.0), oos(1, 9.0), oos(2, 4.0)]
    base = decide(tail(7.0), earlier)
    for sharpe in (-100.0, 0.0, 100.0):
        later = [oos(1, sharpe, end_ns=VAL_START), oos(2, sharpe, end_ns=VAL_START + 5)]
        changed = decide(tail(7.0), earlier + later)
        assert (changed.trade, changed.pooled_sharpe, changed.gate) == (
            base.trade,
            base.pooled_sharpe,
            base.gate,
        )


def test_a_fold_whose_own_tail_does_not_beat_the_guard_stays_flat_on_strong_evidence():
    strong = [oos(j, 20.0) for j in range(3)]
    decision = decide(tail(-1.0), strong)
    assert decision.pooled_sharpe > decision.gate and not decision.trade
    assert "guard" in decision.reason
    assert decide(tail(0.5), strong).trade  # above the guard of 0
    assert not decide(tail(0.5), strong, config=replace(POOLED, select_pool_guard=1.0)).trade


def test_a_fold_whose_own_tail_is_exactly_flat_does_not_trade_on_the_others_evidence():
    # The guard is strict: a tail Sharpe of exactly the default guard (0: the kept epoch stayed flat on
    # its tail) has shown nothing of its own, however strong the earlier windows.
    decision = decide(tail(0.0), [oos(j, 40.0) for j in range(3)])
    assert decision.pooled_sharpe > decision.gate and not decision.trade and "guard" in decision.reason


def test_earlier_tails_are_left_out_unless_weighted():
    biased = [tail(12.0, fold=j, end_ns=j) for j in range(3)]  # best-of-E tails of folds 0-2
    assert decide(tail(8.0), biased).windows == (tail(8.0).name,)
    weighted = decide(tail(8.0), biased, earlier_tail_weight=0.5)
    assert weighted.bars == TAIL * 2.5 and weighted.pooled_sharpe == pytest.approx((8 + 1.5 * 12) / 2.5)


def test_a_fold_with_no_scored_epoch_never_trades():
    assert not decide(tail(-math.inf), [oos(0, 50.0)]).trade


def test_the_own_tail_must_be_a_tail_before_the_validation_start():
    with pytest.raises(ValueError, match="own tail"):
        decide(tail(1.0, end_ns=VAL_START))
    with pytest.raises(ValueError, match="own tail"):
        decide(oos(3, 1.0))


def test_a_window_needs_a_known_kind_and_a_bar():
    with pytest.raises(ValueError, match="kind"):
        WindowEvidence(0, "validation", 10, 1.0, 0)
    with pytest.raises(ValueError, match="bars"):
        WindowEvidence(0, "tail", 0, 1.0, 0)


def test_the_default_pools_the_evidence_at_3_errors_and_the_settings_are_checked():
    # Chosen on the H200 (bench/results/power-h200-2026-12-04-6361c9a.json): at 1x pooled keeps 91% of the
    # feature oracle against the per-fold gate's 73%; t = 2 traded noise below flat.
    assert (DQNConfig().select_pool, DQNConfig().select_pool_t, DQNConfig().select_pool_guard) == (
        "pooled",
        3.0,
        0.0,
    )
    with pytest.raises(ConfigError, match="select_pool"):
        DQNConfig(select_pool="run")
    with pytest.raises(ConfigError, match="select_pool_t"):
        DQNConfig(select_pool_t=-1.0)


def test_a_windows_evidence_reads_back_from_report_json_as_written():
    window = oos(1, 2.5, bars=4_321, end_ns=VAL_START - 7)
    written = json.loads(strict_json.json_bytes(evidence_dict(window)))
    assert written == {
        "fold": 1,
        "kind": "out_of_sample",
        "bars": 4_321,
        "sharpe": 2.5,
        "end_ns": VAL_START - 7,
    }
    assert evidence_from_dict(written) == window
    assert evidence_from_dict({**written, "sharpe": None}) is None  # an undefined Sharpe is no evidence


def test_a_pooled_decision_is_written_under_report_jsons_keys_in_its_order():
    decision = decide(tail(12.0), [oos(0, 4.0), oos(1, 1.0)])
    written = json.loads(strict_json.json_bytes(decision_dict(decision)))
    assert list(written) == [
        "trade", "pooled_sharpe", "gate_sharpe", "bars", "own_tail_sharpe", "guard_sharpe", "windows",
        "ignored", "reason",
    ]  # fmt: skip
    assert (written["gate_sharpe"], written["guard_sharpe"]) == (decision.gate, decision.guard)
    assert written["windows"] == [[3, "tail"], [0, "out_of_sample"], [1, "out_of_sample"]]
    assert (written["trade"], written["bars"], written["reason"]) == (
        decision.trade,
        decision.bars,
        decision.reason,
    )


# ---- several instruments: correlated bars are not independent evidence -----------------------------


def test_one_instrument_counts_every_bar():
    assert effective_share([[1.0]]) == 1.0


def test_uncorrelated_instruments_count_every_bar():
    assert effective_share([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]) == 1.0


def test_k_copies_of_one_series_count_as_one():
    assert effective_share([[1.0] * 4 for _ in range(4)]) == pytest.approx(1 / 4)


def test_correlations_rounded_above_one_count_as_copies_never_as_less_than_one_instrument():
    above = [[1.0, 1.0 + 1e-3], [1.0 + 1e-3, 1.0]]  # a correlation a float sum carried past 1
    assert effective_share(above) == pytest.approx(1 / 2)  # K_eff is never below one instrument


def test_the_share_is_one_over_one_plus_k_minus_one_times_the_mean_absolute_correlation():
    # K = 3, |rho| 0.5, 0.2 (negative: a short of one is the long of the other), 0.2: mean 0.3.
    rho = [[1.0, 0.5, -0.2], [0.5, 1.0, 0.2], [-0.2, 0.2, 1.0]]
    assert effective_share(rho) == pytest.approx(1 / (1 + 2 * 0.3))


def test_a_universes_bars_count_at_their_share_rounded_and_never_below_one():
    assert evidence_bars(7, 1.0) == 7  # one instrument: every bar
    assert evidence_bars(1_000, 0.625) == 625 and evidence_bars(7, 0.5) == 4  # round half to even: 3.5 → 4
    assert evidence_bars(3, 0.01) == 1  # a share of a bar still counts one
