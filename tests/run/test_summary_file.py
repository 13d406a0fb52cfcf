"""summary.json's text (run/summary_file.py): readable, parses to the summary's dict, and cheap to rewrite
after every fold because a finished fold's text is reused."""

from __future__ import annotations

import json
from dataclasses import replace

from support import strict_json

from foxhunt.evaluate.reports import RunSummary
from foxhunt.run.summary_file import SummaryText, readable_json


def written_summary(quick_run) -> RunSummary:
    return RunSummary.from_dict(quick_run.summary)


def test_a_quick_runs_summary_file_parses_to_its_dict(quick_run):
    text = (quick_run.out / "summary.json").read_text()
    assert json.loads(text) == RunSummary.from_dict(json.loads(text)).to_dict()


def test_the_rendered_text_parses_to_the_summarys_dict(quick_run):
    summary = written_summary(quick_run)
    assert strict_json.loads(SummaryText().render(summary)) == summary.to_dict()


def test_a_render_after_a_new_fold_holds_the_new_fold_and_the_kept_ones(quick_run):
    summary = written_summary(quick_run)
    last = summary.folds.pop()
    text = SummaryText()
    text.render(summary)
    summary.folds.append(last)
    summary.status = "interrupted"
    assert strict_json.loads(text.render(summary)) == summary.to_dict()


def test_a_kept_folds_text_is_reused_until_its_report_is_another(quick_run):
    summary = written_summary(quick_run)
    text = SummaryText()
    first = text.fold_text(summary.folds[0], 0)
    assert text.fold_text(summary.folds[0], 0) is first
    other = replace(summary.folds[0], fold_seconds=summary.folds[0].fold_seconds + 1.0)
    assert json.loads(text.fold_text(other, 0))["fold_seconds"] == other.fold_seconds


def test_a_fresh_render_encodes_every_fold_again(quick_run):
    summary = written_summary(quick_run)
    text = SummaryText()
    text.render(summary)
    # A report (frozen, but its phases a dict) changed in place: only a fresh render sees it.
    summary.folds[0].phases["train"] += 1.0
    assert strict_json.loads(text.render(summary, fresh=True)) == summary.to_dict()


def test_the_file_has_one_top_level_key_and_one_epoch_per_line(quick_run):
    summary = written_summary(quick_run)
    lines = SummaryText().render(summary).splitlines()
    top = [line for line in lines if line.startswith('  "')]
    assert len(top) == len(summary.to_dict())
    epochs = [line for line in lines if line.lstrip().startswith('{"epoch": ')]
    assert len(epochs) == sum(len(fold.epochs) for fold in summary.folds)


def test_readable_json_parses_back_to_every_kind_of_value():
    value = {
        "text": 'quote " backslash \\ newline \n and ü',
        "numbers": [0, -1, 2.5, 1e-300, None, True],
        "empty": {"list": [], "dict": {}},
        "deep": [{"a": [{"b": {"c": [1, {"d": "e"}]}}]}],
        "floats": [0.1 + 0.2, 1 / 3],
    }
    assert json.loads(readable_json(value)) == value
