"""A fold's selection (`foxhunt.train.fold_selection.FoldSelection`) is one typed record from the trainer to
report.json and back: written under the file's keys in the file's order, read back equal, an undefined
figure (null in the file) read as NaN."""

from __future__ import annotations

import json
import math
from dataclasses import replace

from foxhunt import strict_json
from foxhunt.evaluate.reports import FoldReport
from foxhunt.train.evidence import PooledDecision, WindowEvidence, WindowName
from foxhunt.train.fold_selection import FoldSelection, out_of_sample_windows

DECISION = PooledDecision(
    trade=False,
    pooled_sharpe=1.25,
    gate=2.5,
    bars=50_000.0,
    own_tail_sharpe=3.0,
    guard=0.0,
    windows=(WindowName(2, "tail"), WindowName(0, "out_of_sample"), WindowName(1, "out_of_sample")),
    ignored=1,
    reason="flat: pooled Sharpe 1.25 over 3 windows does not clear the gate 2.50",
)
POOLED = FoldSelection(
    epoch=3,
    tail_sharpe=3.0,
    flat=True,
    tail_sharpes=(0.5, 1.0, -2.0, 3.0),
    gate=2.5,
    pooled=DECISION,
    out_of_sample=WindowEvidence(2, "out_of_sample", 4_320, 0.75, 1_700_000_000_000_000_000),
)


def written(selection: FoldSelection) -> dict:
    """The selection as report.json holds it (strict JSON, read by a plain parser)."""
    return json.loads(strict_json.json_bytes(selection.to_dict()))


def test_a_pooled_selection_is_written_under_the_files_keys_in_its_order():
    record = written(POOLED)
    assert list(record) == [
        "selected_epoch", "tail_sharpe", "went_flat", "tail_sharpes", "gate_sharpe", "pooled", "out_of_sample",
    ]  # fmt: skip
    assert (record["selected_epoch"], record["went_flat"], record["gate_sharpe"]) == (3, True, 2.5)
    assert record["pooled"]["windows"] == [[2, "tail"], [0, "out_of_sample"], [1, "out_of_sample"]]
    assert record["out_of_sample"]["bars"] == 4_320


def test_a_selection_without_a_pooled_decision_writes_neither_pooled_part():
    assert list(written(replace(POOLED, pooled=None, out_of_sample=None))) == [
        "selected_epoch", "tail_sharpe", "went_flat", "tail_sharpes", "gate_sharpe",
    ]  # fmt: skip


def test_a_written_selection_reads_back_as_the_same_record():
    assert FoldSelection.from_dict(written(POOLED)) == POOLED
    alone = replace(POOLED, pooled=None, out_of_sample=None)
    assert FoldSelection.from_dict(written(alone)) == alone


def test_a_fold_with_no_scored_epoch_reads_back_its_undefined_figures_as_nan():
    none_scored = FoldSelection(None, -math.inf, True, (), math.inf)
    record = written(none_scored)
    assert (record["tail_sharpe"], record["gate_sharpe"]) == (None, None)  # strict JSON: undefined is null
    back = FoldSelection.from_dict(record)
    assert back.epoch is None and back.flat and math.isnan(back.tail_sharpe) and math.isnan(back.gate)


def test_a_fold_report_reads_its_selection_back_typed(tmp_path):
    from support.evaluation_cases import window

    from foxhunt.evaluate.reports import FoldDates

    phases = dict.fromkeys(
        ("reset", "normalize", "collect", "train", "select", "validate", "checkpoint"), 0.0
    )
    report = FoldReport(2, 0, 10, 10, 20, 1.0, FoldDates("a", "b", "c", "d"), phases, 1.0, 1e4, 16, [],
                        window(2), selection=POOLED)  # fmt: skip
    back = FoldReport.from_dict(json.loads(strict_json.json_bytes(report.to_dict())))
    assert isinstance(back.selection, FoldSelection) and back.selection == POOLED


def test_the_out_of_sample_windows_are_the_selections_own_in_order_skipping_folds_without_one():
    later = replace(
        POOLED, out_of_sample=WindowEvidence(5, "out_of_sample", 100, -0.5, 1_800_000_000_000_000_000)
    )
    without = replace(POOLED, out_of_sample=None)
    windows = out_of_sample_windows([later, None, without, POOLED])
    assert windows == [later.out_of_sample, POOLED.out_of_sample]
