"""`foxhunt train --trials N --mlflow-uri`: the study is one MLflow run, each trial a run nested under it."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient
from support import strict_json
from support.search_cases import no_pushgateway, read_json, search_argv  # noqa: F401 (autouse fixture)

from foxhunt.cli import main


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_fxcache, tiny_params):
    """A search of 2 trials recorded in a fresh SQLite store: --out, the client, the study's run, its trials."""
    root = tmp_path_factory.mktemp("study")
    out, store = root / "run", f"sqlite:///{root / 'mlflow.db'}"
    assert main([*search_argv(tiny_fxcache, out, tiny_params, 2), "--mlflow-uri", store]) == 0
    client = MlflowClient(tracking_uri=store)
    runs = client.search_runs([client.get_experiment_by_name("foxhunt").experiment_id])
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    trials = {int(r.data.tags["foxhunt.trial"]): r for r in runs if r is not parent}
    return out, client, parent, trials


def test_a_search_of_2_trials_gives_2_runs_nested_under_the_studys(study):
    _, _, parent, trials = study

    assert sorted(trials) == [0, 1]
    assert {r.data.tags["mlflow.parentRunId"] for r in trials.values()} == {parent.info.run_id}
    assert parent.data.params["trials"] == "2"


def test_each_trials_fold_sharpes_are_metrics_with_the_fold_as_the_step(study):
    out, client, _, trials = study
    for number, run in trials.items():
        report = read_json(out / "trials" / f"{number:04d}" / "trial.json")
        history = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "net.sharpe")}

        assert history == pytest.approx({int(f): v for f, v in report["fold_net_sharpe"].items()}, rel=1e-12)


def test_each_trials_settings_objective_and_stitched_record_are_its_own(study):
    out, _, _, trials = study
    table = {row["number"]: row for row in strict_json.read(out / "trials.json")}
    for number, run in trials.items():
        report = read_json(out / "trials" / f"{number:04d}" / "trial.json")

        assert run.data.params["dqn.lr"] == str(report["dqn"]["lr"])
        assert run.data.metrics["objective"] == pytest.approx(table[number]["objective"], rel=1e-12)
        assert run.data.metrics["stitched.net.sharpe"] == pytest.approx(report["stitched"]["net"]["sharpe"])
        assert run.info.status == "FINISHED"


def test_the_studys_run_keeps_the_study_files_as_artifacts(study):
    _, client, parent, _ = study

    assert {"study.json", "best_params.json", "summary.json"} <= {
        a.path for a in client.list_artifacts(parent.info.run_id)
    }
