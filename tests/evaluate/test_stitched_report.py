"""The stitched record in words: each figure the console prints is read from the right place."""

from __future__ import annotations

import dataclasses

import numpy as np
from support.evaluation_cases import MINUTE, T0, window

from foxhunt.evaluate.evaluation import MODEL, Scoring, WindowEvaluation, evaluate_window, fold_record
from foxhunt.evaluate.standing import Standing
from foxhunt.evaluate.stitched_report import stitched_report, verdict_line


def standing(name: str, baseline: float, low: float, high: float, verdict: str) -> Standing:
    """The model at a net Sharpe of 1.00 against `name` at `baseline`, with the paired interval [low, high]."""
    return Standing(name, 1.0, baseline, 1.0 - baseline, low, high, 0.5, 0.0, 0.0, 0.0, verdict)


def hand_stood() -> WindowEvaluation:
    """`window`'s stitched record with hand-set standings: ridge_15 (2.00) is the best baseline."""
    standings = {
        "buy_and_hold": standing("buy_and_hold", 0.5, 0.1, 0.9, "above"),
        "ridge_15": standing("ridge_15", 2.0, -1.5, -0.5, "below"),
    }
    return dataclasses.replace(window(-1), standings=standings, best_baseline="ridge_15")


def test_the_verdict_line_reads_the_best_baselines_standing_with_the_model_first():
    # Catches: buy-and-hold's standing read for the best baseline's, or the two Sharpes swapped.
    assert verdict_line(hand_stood()) == (
        "model net Sharpe 1.00 vs best baseline ridge_15 2.00: below "
        "(paired interval of the difference [-1.50, -0.50])"
    )


def test_only_the_best_baselines_line_is_marked_best_baseline():
    marked = [line for line in stitched_report(hand_stood(), 1) if "(best baseline)" in line]
    assert len(marked) == 1 and marked[0].startswith("  vs ridge_15 (best baseline): its Sharpe 2.00")


def test_the_models_bootstrap_interval_is_printed_low_then_high():
    stitched = window(-1)
    net = dataclasses.replace(stitched.policies[MODEL].net, sharpe_ci_low=-0.25, sharpe_ci_high=1.75)
    policies = {**stitched.policies, MODEL: dataclasses.replace(stitched.policies[MODEL], net=net)}
    text = "\n".join(stitched_report(dataclasses.replace(stitched, policies=policies), 1))
    assert "95% bootstrap [-0.25, 1.75]" in text


def test_a_feature_oracle_with_no_sharpe_gets_no_share_of_it_said():
    # Catches: the model's share of a zero Sharpe printed (inf% or a division by zero).
    rng = np.random.default_rng(0)
    returns = rng.normal(0.0, 4e-4, 500)
    timestamp = T0 + np.arange(500, dtype=np.int64) * MINUTE
    positions = {MODEL: np.sign(returns), "buy_and_hold": np.ones(500), "ridge_15": np.zeros(500)}
    records = {name: fold_record(-1, 0, pos, timestamp, returns) for name, pos in positions.items()}
    stitched = evaluate_window(records, Scoring(cost=0.0, resamples=0))
    line = next(x for x in stitched_report(stitched, 1) if "feature oracle" in x)
    assert line.endswith("ridge_15): Sharpe 0.00 after costs")
