"""The search driver's parts: one trainer per shape, the objectives, the search options, and what a
search leaves in `--out` that the run manifest knows about. The whole search runs in test_trials_run.py."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from foxhunt.config import DQNConfig
from foxhunt.config.search import OBJECTIVES, SearchOptions, search_options, study_name, trial_worker
from foxhunt.data.folds import FoldRange
from foxhunt.errors import UsageError
from foxhunt.evaluate.evaluation import MODEL, Scoring, evaluate_run
from foxhunt.run.manifest import remove_run_outputs, run_outputs
from foxhunt.search.driver import objective_value
from foxhunt.search.population import TrainerPool, population_key


class FakeTrainer:
    """Stands for a DQNTrainer: remembers its build settings and every `apply_settings`."""

    def __init__(self, configs: list[DQNConfig]) -> None:
        self.built_with, self.configs, self.applied = configs, configs, []
        self.graph_captures, self.compiles = 1, 1

    @property
    def config(self) -> DQNConfig:
        return self.configs[0]

    def apply_settings(self, configs: list[DQNConfig]) -> None:
        self.configs = configs
        self.applied.append(configs[0])


BASE = DQNConfig(batch_size=256, hidden=16)


def test_shape_free_settings_reuse_the_one_trainer_and_switch_its_settings():
    pool = TrainerPool(FakeTrainer)
    trials = [BASE, replace(BASE, lr=1e-3, gamma=0.5), replace(BASE, tau=0.05, weight_decay=1e-4)]
    trainers = [pool.trainer_for([dqn]) for dqn in trials]
    assert pool.builds == 1 and all(t is trainers[0] for t in trainers)
    assert trainers[0].applied == trials[1:] and trainers[0].config == trials[-1]
    assert (pool.graph_captures, pool.compiles) == (1, 1)


@pytest.mark.parametrize("setting", ["batch_size", "hidden"])
def test_each_shape_builds_once_and_is_reused_after(setting):
    pool = TrainerPool(FakeTrainer)
    small, large = replace(BASE, **{setting: 32}), replace(BASE, **{setting: 64})
    first_small, first_large = pool.trainer_for([small]), pool.trainer_for([large])
    again_small = pool.trainer_for([replace(small, lr=1e-3)])
    again_large = pool.trainer_for([large])
    assert pool.builds == 2 and first_small is not first_large
    assert again_small is first_small and again_large is first_large
    assert again_small.config.lr == 1e-3 and (pool.graph_captures, pool.compiles) == (2, 2)


def test_the_key_holds_every_setting_that_needs_a_new_trainer_and_no_other():
    assert population_key(BASE) == population_key(replace(BASE, lr=1e-2, gamma=0.5, cost=0.0))
    changed = [
        ("batch_size", 8),
        ("hidden", 8),
        ("steps_per_graph", 2),
        ("compile", False),
        ("steps_per_epoch", 3),
    ]
    for name, value in changed:
        assert population_key(replace(BASE, **{name: value})) != population_key(BASE), name


def test_a_population_pool_pads_a_short_batch_with_the_last_settings():
    pool = TrainerPool(FakeTrainer, size=3)
    trainer = pool.trainer_for([BASE, replace(BASE, lr=1e-2)])
    assert trainer.built_with == [BASE, replace(BASE, lr=1e-2), replace(BASE, lr=1e-2)]


def _evaluation():
    """Two folds whose model trades differently well, so each objective is a different number."""
    rng = np.random.default_rng(0)
    n = 4000
    targets = np.zeros((n, 4))
    targets[:, 0] = rng.standard_normal(n) * 1e-3
    timestamp = np.arange(n, dtype=np.int64) * 60_000_000_000
    folds = [FoldRange(0, 0, 1000, 1000, 2000, 1.0), FoldRange(1, 0, 2000, 2000, 3000, 1.0)]
    positions = {0: np.sign(targets[1000:2000, 0]), 1: np.where(rng.random(1000) < 0.5, 1.0, -1.0)}
    baselines = {f.fold: {"buy_and_hold": np.ones(1000)} for f in folds}
    scoring = Scoring(cost=1e-4, resamples=0)
    return evaluate_run(None, targets, timestamp, folds, positions, scoring, baselines=baselines)


def test_each_objective_is_the_figure_it_names():
    evaluation = _evaluation()
    stitched = evaluation.stitched.policies[MODEL].net
    folds = [w.policies[MODEL].net.sharpe for w in evaluation.folds]
    assert objective_value("stitched_sharpe", evaluation) == stitched.sharpe
    assert objective_value("stitched_return", evaluation) == stitched.log_return
    assert objective_value("mean_fold_sharpe", evaluation) == pytest.approx(np.mean(folds), rel=1e-12)
    # The mean of the folds' Sharpe ratios is not the Sharpe of the joined record.
    assert objective_value("mean_fold_sharpe", evaluation) != pytest.approx(stitched.sharpe, rel=1e-3)
    assert objective_value("stitched_sharpe_no_collapse", evaluation) == stitched.sharpe  # plus the refusal
    assert set(OBJECTIVES) == {
        "stitched_sharpe",
        "mean_fold_sharpe",
        "stitched_return",
        "stitched_sharpe_no_collapse",
    }


# ---- options ------------------------------------------------------------------------------------------------


def test_the_worker_index_comes_from_the_environment_and_must_be_an_index():
    assert trial_worker({}) == 0 and trial_worker({"FOXHUNT_TRIAL_WORKER": "3"}) == 3
    with pytest.raises(UsageError, match="FOXHUNT_TRIAL_WORKER"):
        trial_worker({"FOXHUNT_TRIAL_WORKER": "-1"})


def test_an_empty_study_storage_means_the_embedded_study():
    # Argo passes "$(FOXHUNT_STUDY_STORAGE)"; an unset variable must not become a URL.
    options = search_options(
        2, search_space=None, study_storage="", study_name="", objective="stitched_sharpe"
    )
    assert options.embedded and options.study_name is None


def test_an_unknown_objective_is_a_usage_error_naming_the_choices():
    with pytest.raises(UsageError, match="stitched_sharpe"):
        SearchOptions(objective="sharpe")


def test_the_study_name_is_given_or_derived_from_the_run():
    assert study_name(SearchOptions(study_name="s1"), "s3://b/runs/x", None) == "s1"
    assert study_name(SearchOptions(), "s3://b/runs/x/", None) == "x"
    assert study_name(SearchOptions(), "/tmp/my run", None) == "my-run"
    shared = SearchOptions(study_storage="postgresql://db/foxhunt")
    assert study_name(shared, "/tmp/out", "wf-123") == "wf-123"
    with pytest.raises(UsageError, match="--study-name"):
        study_name(shared, "/tmp/out", None)


# ---- what the manifest counts as a run's outputs ---------------------------------------------------------


def test_trial_folders_are_outputs_of_the_run_but_a_trial_workers_folder_is_not(tmp_path):
    for name in ("trials/0003/fold_0/report.json", "trials/worker-0/trials.csv", "fold_1/report.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    (tmp_path / "study.sqlite3").write_bytes(b"")
    assert run_outputs(str(tmp_path)) == ["fold_1", "study.sqlite3", "trials/0003"]
    (tmp_path / "manifest.json").write_text("{}")  # a run's folder: --overwrite removes only with a manifest
    remove_run_outputs(str(tmp_path))
    assert (tmp_path / "trials" / "worker-0" / "trials.csv").exists()
    assert not (tmp_path / "trials" / "0003").exists() and not (tmp_path / "fold_1").exists()
