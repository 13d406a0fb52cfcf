"""An epoch's figures travel from the trainer to report.json as one dataclass, with the keys on disk unchanged."""

from dataclasses import asdict, replace

import pytest
from support.telemetry_cases import fold_report

from foxhunt.evaluate.reports import FoldReport
from foxhunt.run.fold import _epoch_line
from foxhunt.train.epoch_figures import COLLAPSE_SHARE, IGNORED_AGREEMENT, EpochFigures

# The keys of an epoch in fold_N/report.json (what resume, rescoring and the dashboards read).
REPORT_EPOCH_KEYS = [
    "epoch",
    "loss",
    "epsilon",
    "steps",
    "collect_seconds",
    "train_seconds",
    "samples_per_second",
    "q_mean",
    "q_max",
    "action_shares",
    "train_sharpe",
    "val_sharpe",
    "feature_agreement",
    "select_seconds",
]
FIGURES = EpochFigures(
    epoch=2,
    loss=0.25,
    epsilon=0.1,
    steps=60,
    collect_seconds=0.5,
    train_seconds=1.5,
    samples_per_second=4096.0,
    q_mean=3.0,
    q_max=9.0,
    action_shares=[0.2, 0.5, 0.3],
    train_sharpe=1.25,
    val_sharpe=-0.5,
    feature_agreement=0.4,
    tail_sharpe=0.75,
    select_seconds=0.125,
)


def test_the_report_keeps_every_figure_of_the_epoch_under_its_keys_but_the_tail_sharpe():
    report = replace(fold_report(0), epochs=[FIGURES])
    (record,) = report.to_dict()["epochs"]
    assert list(record) == REPORT_EPOCH_KEYS
    assert record == {k: v for k, v in asdict(FIGURES).items() if k != "tail_sharpe"}


def test_the_report_record_reads_back_as_written_without_the_tail_sharpe():
    report = replace(fold_report(0), epochs=[FIGURES])
    (record,) = FoldReport.from_dict(report.to_dict()).epochs
    assert record == replace(FIGURES, tail_sharpe=None) and record.seconds == FIGURES.seconds == 2.0


def test_an_epoch_takes_collection_plus_training_seconds():
    assert FIGURES.seconds == FIGURES.collect_seconds + FIGURES.train_seconds


@pytest.mark.parametrize(("shares", "collapsed"), [([0.0, 0.05, 0.95], True), ([0.0, 0.06, 0.94], False)])
def test_an_epoch_is_collapsed_when_one_action_takes_the_collapse_share(shares, collapsed):
    assert COLLAPSE_SHARE == 0.95
    assert EpochFigures(0, 0.0, 0.0, 1, 0.0, 0.0, 0.0, action_shares=shares).collapsed is collapsed


@pytest.mark.parametrize(("agreement", "ignored"), [(IGNORED_AGREEMENT, True), (0.98, False), (None, False)])
def test_features_are_ignored_when_actions_agree_with_the_features_at_their_mean(agreement, ignored):
    assert (
        EpochFigures(0, 0.0, 0.0, 1, 0.0, 0.0, 0.0, feature_agreement=agreement).features_ignored is ignored
    )


def test_the_console_line_reads_the_epochs_figures():
    line = _epoch_line(0, 2, 5, [FIGURES])
    assert line == "fold 0 epoch 3/5: loss 0.2500 eps 0.10 60 steps 2.00s 4,096 samples/s"
    together = _epoch_line(1, 0, 5, [FIGURES, None, FIGURES])
    assert together.endswith("2 members, loss 0.2500 0.2500; 60 steps 2.00s 8,192 samples/s together")
