"""A run or a fold whose model held no position is said in words (the tail gate's figures), in the table,
the stitched report and summary.json, instead of a PSR of 0 and a hit rate of 0% that read as a fault."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.evaluation_cases import flat_window, window
from test_reports import report, summary

from foxhunt.evaluate.reports import RunSummary, flat_fold_note, flat_run_reading, fold_table
from foxhunt.evaluate.stitched_report import stitched_report
from foxhunt.train.evidence import PooledDecision, WindowName
from foxhunt.train.fold_selection import FoldSelection


def gated(fold: int, tail: float, gate: float, epoch: int | None = 1):
    """A fold the tail gate made flat: its best tail Sharpe `tail` did not clear `gate`."""
    selection = FoldSelection(epoch, tail, flat=True, gate=gate)
    return dataclasses.replace(report(fold), evaluation=flat_window(fold), selection=selection)


def test_a_run_gated_flat_in_its_one_fold_says_so_with_its_tail_sharpe_and_gate():
    assert flat_run_reading([gated(0, -1.5, 0.8)]) == (
        "flat in every fold: the gate found no edge; learned tail Sharpe -1.50 against a gate of 0.80"
    )


def test_a_run_gated_flat_in_every_fold_gives_each_folds_figures():
    got = flat_run_reading([gated(0, -1.5, 0.8), gated(1, 0.25, 0.9)])
    assert got == (
        "flat in every fold: the gate found no edge; learned tail Sharpe -1.50 against 0.80 (fold 0), "
        "0.25 against 0.90 (fold 1)"
    )


def test_a_run_with_one_fold_that_traded_has_no_flat_reading():
    # Catches: the words on a run that is flat in some folds only.
    assert flat_run_reading([gated(0, -1.5, 0.8), report(1)]) is None


def test_a_result_that_traded_has_no_flat_reading_though_the_first_seeds_folds_were_flat():
    # --result majority: the seeds' vote traded where seed 0 held nothing. Catches: "flat in every fold"
    # said of the vote's record.
    folds = [gated(0, -1.5, 0.8), gated(1, -2.0, 0.9)]
    assert flat_run_reading(folds, window(-1, n=480)) is None
    assert flat_run_reading(folds, flat_window(-1, n=480)) is not None
    assert "flat_reading" not in summary(folds=folds, stitched=window(-1, n=480)).to_dict()


def test_a_run_flat_without_the_gate_says_the_policy_took_no_position():
    flat = dataclasses.replace(report(0), evaluation=flat_window(0))
    assert flat_run_reading([flat]) == "flat in every fold: the policy took no position"


def test_a_flat_fold_is_said_in_words_in_the_fold_table():
    lines = fold_table(summary(folds=[gated(0, -1.5, 0.8), report(1)])).splitlines()
    assert lines[2].endswith("flat: the gate found no edge; learned tail Sharpe -1.50 against a gate of 0.80")
    assert "flat" not in lines[3]
    assert flat_fold_note(report(1)) == ""


def test_the_stitched_row_of_a_flat_run_says_flat_in_every_fold():
    flat_run = summary(folds=[gated(0, -1.5, 0.8), gated(1, -2.0, 0.9)], stitched=flat_window(-1, n=480))
    assert fold_table(flat_run).splitlines()[-1].endswith("flat in every fold")
    traded = summary(stitched=window(-1, n=480))
    assert "flat" not in fold_table(traded).splitlines()[-1]


def test_the_stitched_report_of_a_flat_run_reads_in_words_not_psr_and_hit_rate():
    # Catches: `PSR(>0) 0.00` and `hit rate 0.0%` printed for a run that never traded.
    reading = flat_run_reading([gated(0, -1.5, 0.8)])
    lines = stitched_report(flat_window(-1), 1, flat=reading)
    text = "\n".join(lines)
    assert reading in text and "PSR(>0)" not in text and "hit rate 0.0%" not in text
    assert "PSR(>0)" in "\n".join(stitched_report(window(-1), 1))


def test_summary_json_keeps_the_figures_and_adds_the_words_of_a_flat_run():
    flat_run = summary(folds=[gated(0, -1.5, 0.8)], stitched=flat_window(-1))
    data = json.loads(json.dumps(flat_run.to_dict(), allow_nan=False))
    assert data["flat_reading"].startswith("flat in every fold: the gate found no edge")
    assert data["stitched"]["policies"]["model"]["net"]["psr_zero"] == 0.0  # the figure stays a number
    assert RunSummary.from_dict(data) == flat_run
    assert "flat_reading" not in summary().to_dict()


def test_the_summary_file_as_written_holds_the_words_of_a_flat_run():
    # The file renders its folds apart from the rest: catches the words lost there.
    from foxhunt.run.summary_file import SummaryText

    flat_run = summary(folds=[gated(0, -1.5, 0.8), gated(1, -2.0, 0.9)], stitched=flat_window(-1, n=480))
    written = json.loads(SummaryText().render(flat_run))
    assert written == flat_run.to_dict() and written["flat_reading"].startswith("flat in every fold")


def pooled_flat(fold: int, pooled: float, gate: float, own: float, windows: int):
    """A fold the pooled decision made flat: its pooled Sharpe over `windows` windows against `gate`."""
    decision = PooledDecision(
        trade=False,
        pooled_sharpe=pooled,
        gate=gate,
        bars=1000.0,
        own_tail_sharpe=own,
        guard=-1.0,
        windows=(WindowName(0, "tail"),) * windows,
        ignored=0,
        reason="",
    )
    selection = FoldSelection(1, own, flat=True, gate=gate, pooled=decision)
    return dataclasses.replace(report(fold), evaluation=flat_window(fold), selection=selection)


def test_a_fold_the_pooled_decision_made_flat_says_its_pooled_sharpe_not_its_tails():
    # Catches: the own tail (15.22) read against the pooled gate (7.86), which would look like a fault.
    assert flat_fold_note(pooled_flat(2, 5.10, 7.86, 15.22, 3)) == (
        "flat: the gate found no edge; pooled Sharpe 5.10 over 3 window(s) against a gate of 7.86"
    )


def test_a_fold_whose_pooled_sharpe_cleared_the_gate_but_not_the_guard_says_the_guard():
    assert flat_fold_note(pooled_flat(1, 9.0, 7.0, -2.5, 2)).endswith(
        "pooled Sharpe 9.00 over 2 window(s) cleared its gate, but the own tail -2.50 not the guard"
    )


def test_a_pooled_run_flat_in_every_fold_names_each_folds_evidence():
    got = flat_run_reading([pooled_flat(0, 2.36, 14.81, 2.36, 1), pooled_flat(1, 1.69, 9.84, 4.05, 2)])
    assert got == (
        "flat in every fold: the gate found no edge; fold 0: pooled Sharpe 2.36 over 1 window(s) against a "
        "gate of 14.81; fold 1: pooled Sharpe 1.69 over 2 window(s) against a gate of 9.84"
    )


def test_the_one_bar_noise_is_of_the_validation_rows_first_target_on_the_host_or_a_tensor():
    # Catches: training rows in it, another horizon, or the sample standard deviation for the population's.
    import numpy as np
    import torch

    from foxhunt.data.folds import FoldRange
    from foxhunt.evaluate.stitched_report import one_bar_noise

    targets = np.full((40, 4), 50.0)
    targets[10:20, 0] = [1.0, -1.0] * 5
    targets[30:40, 0] = [3.0, -3.0] * 5
    folds = [FoldRange(0, 0, 10, 10, 20, 0.0), FoldRange(1, 20, 30, 30, 40, 0.0)]
    assert one_bar_noise(targets, folds) == pytest.approx(np.sqrt(5.0), rel=1e-12)  # ±1 and ±3, ten each
    assert one_bar_noise(torch.as_tensor(targets), folds) == pytest.approx(np.sqrt(5.0), rel=1e-12)


def test_the_cost_line_gives_the_cost_in_basis_points_and_as_a_multiple_of_the_noise():
    from foxhunt.evaluate.stitched_report import cost_noise_line

    line = cost_noise_line(1e-4, 1.1e-4)
    assert (
        "cost: 1.00 bp a unit of position change, 0.91× the validation bars' one-bar noise (1.10 bp" in line
    )
    assert "no noise to compare" in cost_noise_line(1e-4, 0.0)
