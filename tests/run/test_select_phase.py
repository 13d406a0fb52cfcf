"""A fold's `select` phase: the seconds of its epochs' tail scores and diagnostics and of the choice of the
epoch it keeps, apart from training and validation, so a fold's phases account for its time."""

import time

import pytest
from support import strict_json
from support.run_cases import train_argv

from foxhunt.cli import main
from foxhunt.config import PHASES
from foxhunt.evaluate.reports import FoldReport
from foxhunt.train.member_policy import MemberPolicies

EPOCHS = 3
FIGURES_PAUSE, CHOICE_PAUSE = 0.05, 0.2


@pytest.fixture(scope="module")
def report(tiny_fxcache, tiny_params, tmp_path_factory):
    """One fold of 3 epochs whose epoch figures and choice each take at least a known pause."""
    figures, choose = MemberPolicies.epoch_figures, MemberPolicies.choose_policies

    def slow_figures(self, *args, **kwargs):
        time.sleep(FIGURES_PAUSE)
        return figures(self, *args, **kwargs)

    def slow_choice(self, *args, **kwargs):
        time.sleep(CHOICE_PAUSE)
        return choose(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MemberPolicies, "epoch_figures", slow_figures)
        patch.setattr(MemberPolicies, "choose_policies", slow_choice)
        out = tmp_path_factory.mktemp("select") / "out"
        assert (
            main(train_argv(tiny_fxcache, out, tiny_params, "--epochs", str(EPOCHS), "--max-folds", "1")) == 0
        )
    return strict_json.read(out / "fold_0" / "report.json")


def test_the_select_phase_holds_the_epochs_figures_and_the_choice(report):
    assert report["phases"]["select"] >= EPOCHS * FIGURES_PAUSE + CHOICE_PAUSE


def test_each_epoch_records_its_figures_seconds(report):
    assert all(e["select_seconds"] >= FIGURES_PAUSE for e in report["epochs"])


def test_training_and_validation_do_not_hold_the_selections_seconds(report):
    assert report["phases"]["train"] + report["phases"]["validate"] < report["fold_seconds"] - CHOICE_PAUSE


def test_the_phases_are_apart_and_within_the_folds_seconds(report):
    assert list(report["phases"]) == list(PHASES) and "select" in PHASES
    assert sum(report["phases"].values()) <= report["fold_seconds"]


def test_a_report_written_before_the_select_phase_reads_with_zero_select_seconds(report):
    older = {**report, "phases": {p: s for p, s in report["phases"].items() if p != "select"}}
    older["epochs"] = [{k: v for k, v in e.items() if k != "select_seconds"} for e in report["epochs"]]
    read = FoldReport.from_dict(older)
    assert read.phases["select"] == 0.0 and all(e.select_seconds == 0.0 for e in read.epochs)
