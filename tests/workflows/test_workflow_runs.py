"""The templates carry a whole run: every setting, trials fanned out over GPU pods, results as outputs."""

from __future__ import annotations

import json

import pytest

from foxhunt.config.flags import ENUMS, run_defaults
from foxhunt_workflows.params import DQN_PARAMS_FILE, POD_DEFAULTS, TRAINER_SETTINGS
from foxhunt_workflows.pods import RETRIED_EXIT_CODES, TERMINATION_GRACE_SECONDS, RenderOptions
from foxhunt_workflows.render import PACKAGE_COPY, render_all, render_documents
from foxhunt_workflows.schema import SCHEMA_ANNOTATION
from foxhunt_workflows.templates import (
    RUN_SETTINGS,
    TRIAL_WORKER,
    arguments_for,
    pipeline_template,
    precompute_step,
    train_step,
)

GPU_PODS = [("train", "train"), ("train-pipeline", "trial-worker")]


@pytest.fixture(scope="module")
def documents() -> dict[str, dict]:
    return render_documents()


def pod(documents: dict, template: str, name: str) -> dict:
    return next(t for t in documents[template]["spec"]["templates"] if t["name"] == name)


def workflow_parameters(document: dict) -> dict[str, dict]:
    return {p["name"]: p for p in document["spec"]["arguments"]["parameters"]}


def tasks(documents: dict) -> dict[str, dict]:
    return {t["name"]: t for t in documents["train-pipeline"]["spec"]["templates"][0]["dag"]["tasks"]}


def passed(task: dict) -> dict[str, str]:
    return {p["name"]: p["value"] for p in task["arguments"]["parameters"]}


def flags(args: list[str]) -> dict[str, str]:
    return {flag: value for flag, value in zip(args, args[1:], strict=False) if flag.startswith("--")}


def test_the_package_copy_matches_a_fresh_render(tmp_path):
    fresh = {p.name: p.read_bytes() for p in render_all(tmp_path)}
    shipped = {p.name: p.read_bytes() for p in PACKAGE_COPY.glob("*.yaml")}

    assert shipped == fresh, "run: foxhunt workflows render --out foxhunt_workflows/rendered"


@pytest.mark.parametrize("name", ["precompute-features", "train", "train-pipeline"])
def test_each_template_is_declared_once(documents, name):
    names = [t["name"] for t in documents[name]["spec"]["templates"]]

    assert len(names) == len(set(names))


@pytest.mark.parametrize("flag", TRAINER_SETTINGS)
def test_trainer_setting_defaults_come_from_foxhunt_config(documents, flag):
    declared = workflow_parameters(documents["train-pipeline"])[flag]

    assert declared["value"] == POD_DEFAULTS.get(flag, run_defaults()[flag])


def test_pods_log_json_lines_where_a_local_run_logs_text(documents):
    declared = workflow_parameters(documents["train-pipeline"])["log-format"]

    assert (run_defaults()["log-format"], declared["value"]) == ("text", "json")


@pytest.mark.parametrize("flag", sorted(ENUMS.keys() & set(TRAINER_SETTINGS)))
def test_enumerated_settings_declare_argo_enum(documents, flag):
    for name in ("train-pipeline", "train"):
        assert workflow_parameters(documents[name])[flag]["enum"] == list(ENUMS[flag])


def test_schema_annotation_types_every_number_and_json_parameter(documents):
    schema = json.loads(documents["train-pipeline"]["metadata"]["annotations"][SCHEMA_ANNOTATION])
    kinds = {name: s.get("type", "enum") for name, s in schema["properties"].items()}

    assert kinds["epochs"] == kinds["seed"] == kinds["trial-workers"] == "integer"
    assert kinds["train-days"] == kinds["eval-cost"] == "number"
    assert kinds["dqn-params"] == kinds["search-space"] == "object"
    assert kinds["window"] == "enum" and kinds["bars-uri"] == "string"


@pytest.mark.parametrize(("template", "name"), GPU_PODS)
def test_every_run_setting_reaches_the_trainer_as_its_flag(documents, template, name):
    args = flags(pod(documents, template, name)["container"]["args"])

    assert {f"--{s}": args[f"--{s}"] for s in RUN_SETTINGS} == {
        f"--{s}": f"{{{{inputs.parameters.{s}}}}}" for s in RUN_SETTINGS
    }


@pytest.mark.parametrize(("template", "name"), GPU_PODS)
def test_dqn_params_reach_the_trainer_as_a_settings_file(documents, template, name):
    step = pod(documents, template, name)
    raw = next(a for a in step["inputs"]["artifacts"] if a["name"] == "dqn-params")
    filled = raw["raw"]["data"].replace("{{inputs.parameters.dqn-params}}", '{"lr": 0.001}')

    assert raw["path"] == DQN_PARAMS_FILE
    assert json.loads(filled) == {"dqn": {"lr": 0.001}}
    assert (
        flags(step["container"]["args"])["--hyperopt-params"] == "{{inputs.parameters.hyperopt-params-uri}}"
    )
    assert workflow_parameters(documents["train-pipeline"])["hyperopt-params-uri"]["value"] == DQN_PARAMS_FILE


def test_search_space_default_is_the_trials_default_space(documents):
    from foxhunt.config.search import DEFAULT_SEARCH_SPACE
    from foxhunt.search.space import parse_search_space

    default = workflow_parameters(documents["train-pipeline"])["search-space"]["value"]

    assert parse_search_space(json.loads(default), source="the template") == DEFAULT_SEARCH_SPACE


def test_without_trials_the_pipeline_trains_once_after_precompute(documents):
    steps = tasks(documents)

    assert steps["train"]["when"] == "{{workflow.parameters.trials}} == 0"
    assert steps["train"]["depends"] == "precompute"


def test_with_trials_workers_fan_out_on_one_study_then_the_best_settings_train(documents):
    steps = tasks(documents)
    workers, best = steps["trials"], steps["train-best"]

    assert workers["when"] == best["when"] == "{{workflow.parameters.trials}} > 0"
    assert workers["withSequence"] == {"count": "{{workflow.parameters.trial-workers}}"}
    assert (workers["depends"], best["depends"]) == ("precompute", "trials")
    assert passed(workers)["study-name"] == "{{workflow.name}}"
    assert passed(workers)["worker"] == "{{item}}"
    assert passed(best)["trials"] == "0"


def test_the_final_train_reads_the_best_params_a_worker_wrote(documents):
    steps = tasks(documents)
    first_worker_out = passed(steps["trials"])["output-uri"].replace("{{item}}", "0")

    assert passed(steps["train-best"])["hyperopt-params-uri"] == f"{first_worker_out}/best_params.json"


def test_trial_workers_read_the_study_url_from_the_named_secret(documents):
    worker = pod(documents, "train-pipeline", TRIAL_WORKER)["container"]
    env = {e["name"]: e for e in worker["env"]}
    args = flags(worker["args"])

    assert env["FOXHUNT_STUDY_STORAGE"]["valueFrom"]["secretKeyRef"] == {
        "name": "{{inputs.parameters.study-storage-secret}}",
        "key": "url",
    }
    assert args["--study-storage"] == "$(FOXHUNT_STUDY_STORAGE)"
    assert env["FOXHUNT_TRIAL_WORKER"]["value"] == "{{inputs.parameters.worker}}"


def test_each_trial_worker_trains_trial_population_trials_side_by_side(documents):
    steps = tasks(documents)
    worker = pod(documents, "train-pipeline", TRIAL_WORKER)["container"]

    assert flags(worker["args"])["--population"] == "{{inputs.parameters.trial-population}}"
    assert passed(steps["trials"])["trial-population"] == "{{workflow.parameters.trial-population}}"


def test_each_trial_worker_has_its_own_run_id(documents):
    worker = pod(documents, "train-pipeline", TRIAL_WORKER)["container"]
    run_id = next(e["value"] for e in worker["env"] if e["name"] == "FOXHUNT_RUN_ID")

    assert run_id == "{{workflow.name}}-worker-{{inputs.parameters.worker}}"


def test_train_declares_its_results_as_outputs(documents):
    outputs = pod(documents, "train", "train")["outputs"]
    parameters = {p["name"]: p for p in outputs["parameters"]}
    artifacts = {a["name"]: a for a in outputs["artifacts"]}

    assert parameters["summary-uri"]["valueFrom"] == {"path": "/tmp/outputs/summary_uri", "default": ""}
    assert parameters["stitched-sharpe"]["valueFrom"] == {
        "path": "/tmp/outputs/stitched_sharpe",
        "default": "",
    }
    assert {n: (a["path"], a["optional"]) for n, a in artifacts.items()} == {
        "summary": ("/tmp/outputs/summary.json", True),
        "run-png": ("/tmp/outputs/run.png", True),
    }


def test_train_tells_the_trainer_where_argo_reads_outputs(documents):
    env = {e["name"]: e.get("value") for e in pod(documents, "train", "train")["container"]["env"]}

    assert env["FOXHUNT_OUTPUTS_DIR"] == "/tmp/outputs"


@pytest.mark.parametrize(("template", "name"), GPU_PODS)
def test_gpu_pods_have_room_for_the_trainers_clean_stop(documents, template, name):
    patch = json.loads(pod(documents, template, name)["podSpecPatch"])

    assert patch == {"terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS}
    assert TERMINATION_GRACE_SECONDS >= 60


def retried(expression: str) -> set[str]:
    """The exit codes and statuses a retry expression of the form `a == "x" || b == "y"` accepts."""
    return {clause.split("==")[1].strip().strip('"') for clause in expression.split("||")}


@pytest.mark.parametrize(("template", "name"), [*GPU_PODS, ("precompute-features", "precompute")])
def test_pods_retry_exactly_the_exits_a_resume_fixes(documents, template, name):
    retry = pod(documents, template, name)["retryStrategy"]

    assert retry["retryPolicy"] == "Always"
    assert retried(retry["expression"]) == {"Error", "143", "137"} == {"Error", *RETRIED_EXIT_CODES}


def test_a_misspelt_override_is_an_error_when_the_pipeline_is_defined():
    options = RenderOptions()
    train = train_step(options)
    pipeline = pipeline_template(options, precompute_step(options), train)

    with pytest.raises(KeyError, match="output-url"):
        arguments_for(train, pipeline, {"output-url": "s3://runs"})


def test_an_input_the_pipeline_does_not_declare_is_an_error_when_defined():
    options = RenderOptions()
    train = train_step(options)
    pipeline = pipeline_template(options, precompute_step(options), train)
    train.inputs[0].name = "fxcache-url"

    with pytest.raises(KeyError, match="fxcache-url"):
        arguments_for(train, pipeline)
