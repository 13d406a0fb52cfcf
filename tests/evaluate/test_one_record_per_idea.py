"""One record type per idea: a fold report is its FoldRange plus results, an epoch is the trainer's
EpochFigures, and every collapse verdict comes from the one rule (`epoch_figures.policy_collapse`)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest
from support.telemetry_cases import fold_report

from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.reports import FoldReport
from foxhunt.train.epoch_figures import COLLAPSE_SHARE, EpochFigures, fold_flags, fold_warnings

RANGE_KEYS = ["fold", "train_start", "train_end", "val_start", "val_end", "difficulty_score"]


def test_a_fold_report_is_its_fold_range_and_writes_its_keys_first():
    report = fold_report(1)
    assert isinstance(report, FoldRange)
    assert report.range == FoldRange(1, 1000, 1801, 1810, 2001, 0.5)
    assert list(report.to_dict())[:8] == [*RANGE_KEYS, "train_rows", "val_rows"]
    assert (report.train_rows, report.val_rows) == (801, 191)


def test_a_fold_report_reads_back_equal_to_what_it_wrote():
    report = fold_report(2)
    assert FoldReport.from_dict(report.to_dict()).to_dict() == report.to_dict()


def epoch(shares: list[float]) -> EpochFigures:
    return EpochFigures(0, 0.0, 0.0, 1, 0.0, 0.0, 0.0, action_shares=shares)


@pytest.mark.parametrize(
    ("shares", "collapsed"),
    [
        ([0.0, 1 - COLLAPSE_SHARE, COLLAPSE_SHARE], True),
        ([0.0, 0.06, 0.94], False),
        ([0.96, 0.04, 0.0], True),
    ],
)
def test_the_epoch_the_fold_flags_and_the_warnings_give_one_collapse_verdict(shares, collapsed):
    last = epoch(shares)
    assert last.collapsed is collapsed
    assert fold_flags([last])[0] is collapsed
    assert any("collapsed to one action" in w for w in fold_warnings(0, [last])) is collapsed


def test_the_verdict_reads_the_last_epoch_only():
    assert fold_flags([epoch([1.0, 0.0, 0.0]), epoch([0.3, 0.3, 0.4])]) == (False, False)


def test_reading_a_report_loads_no_torch():
    code = "import sys, foxhunt.evaluate.reports, foxhunt.train.epoch_figures; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_an_epoch_keeps_its_tail_sharpe_in_memory_but_not_on_disk():
    report = replace(fold_report(0), epochs=[replace(epoch([0.3, 0.3, 0.4]), tail_sharpe=0.5)])
    assert report.epochs[0].tail_sharpe == 0.5 and "tail_sharpe" not in report.to_dict()["epochs"][0]
