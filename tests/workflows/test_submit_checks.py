"""`foxhunt submit` refuses a bad submission in one line, exit 2, before any request (and with --dry-run too)."""

from __future__ import annotations

import copy

import pytest
from support.argo_standin import (
    CI_RUN,
    DATA,
    DATA_ARGS,
    foxhunt,
    refused,
    sent_parameters,
)

from foxhunt_workflows.arguments import SubmitUsageError, TemplateParameters, check_parameters
from foxhunt_workflows.render import shipped_template

STUDY = ("-p", "study-storage-secret=foxhunt-study")


def without(name: str) -> tuple[str, ...]:
    """The data URIs minus one."""
    return tuple(w for n, v in DATA.items() if n != name for w in ("-p", f"{n}={v}"))


REFUSALS = [
    # The trainer's own bounds and choices (foxhunt.config), for flags and -p alike.
    (("-p", "epochs=0"), "-p epochs='0': must be an integer in [1, 100000]"),
    (("-p", "epochs=-3"), "-p epochs='-3': must be an integer in [1, 100000]"),
    (("--epochs", "0"), "--epochs '0': must be an integer in [1, 100000]"),
    (("--trials", "-1"), "--trials '-1': must be an integer in [0, 100000]"),
    (("-p", "epochs=abc"), "epochs='abc': must be an integer in [1, 100000]"),
    (("-p", "max-folds=2.5"), "max-folds='2.5': must be an integer in [0, 100000]"),
    (("-p", "epochs=1" + "0" * 5000), "0... (5001 characters)': must be an integer in [1, 100000]"),
    (("-p", 'dqn-params={"lr": 1' + "0" * 400 + "}"), "lr=1000"),
    (("-p", "seed=-1"), "seed='-1': must be an integer in [0, 9223372036854775807]"),
    (("-p", "train-days=0"), "train-days='0': must be a finite number in (0, 36500] (days)"),
    (("-p", "train-days=ninety"), "train-days='ninety': must be a finite number in (0, 36500] (days)"),
    (("-p", "eval-cost=nan"), "eval-cost='nan': must be a finite number in [0, 1] (log-return units)"),
    (("-p", "eval-spread=-0.1"), "eval-spread='-0.1': must be a finite number in [0, 1] (log-return units)"),
    (("-p", "min-train-rows=0"), "min-train-rows='0': must be an integer in [1, 1000000000] (rows)"),
    # The config's rules between and beyond bounds, from building the trainer's own config.
    (("-p", "train-days=1e-20"), "-p train-days='1e-20': must be at least one nanosecond, got 1e-20"),
    (("-p", "window=sliding"), "window='sliding': must be one of rolling, expanding"),
    (("-p", "seeds=0"), "seeds='0': must be an integer in [1, 64]"),
    (("-p", "result=vote"), "result='vote': must be one of first-seed, majority"),
    (("-p", "result=majority", "-p", "seeds=2"), "majority needs --seeds 3 or more, got 2"),
    (("-p", "seeds=3", "-p", "trials=4", *STUDY), "a search (trials > 0) trains one seed per trial; use 1"),
    (("-p", "log-format=xml"), "log-format='xml': must be one of text, json"),
    (("--model", "ppo"), "--model 'ppo': must be one of dqn"),
    # DQN settings: the keys and ranges of foxhunt.config.DQNConfig.
    (("-p", 'dqn-params={"lrr":1}'), "unknown key(s) 'lrr'; valid keys: lr, gamma,"),
    (("-p", 'dqn-params={"lr":0}'), "lr=0 must be a finite number in (0, 10]"),
    (("-p", 'dqn-params={"gamma":1}'), "gamma=1 must be a finite number in [0, 1)"),
    (("-p", 'dqn-params={"batch_size":1.5}'), "batch_size=1.5 must be an integer in [1, 16777216]"),
    (("-p", 'dqn-params={"compile":"yes"}'), "compile=\"yes\" must be true or false"),
    (("-p", "dqn-params={lr: 1}"), "dqn-params='{lr: 1}': is not valid JSON"),
    (("-p", "dqn-params=[1, 2]"), "dqn-params='[1, 2]': must be a JSON object of DQN settings"),
    (("-p", 'search-space={"lrr":{"type":"float"}}'), "unknown key(s) 'lrr'"),
    (("-p", 'search-space={"lr":{"low":1}}'), "lr: needs the key 'type'"),
    # Cluster parameters.
    (("-p", "gpu-pool="), "-p gpu-pool='': must not be empty"),
    (("--gpu-pool", ""), "--gpu-pool '': must not be empty"),
    (("-p", "gpu-pool=a b"), "gpu-pool='a b': must be a node label value"),
    (("-p", "trial-workers=0"), "trial-workers='0': must be an integer >= 1"),
    (("-p", "trial-population=17"), "trial-population='17': must be an integer in [1, 16]"),
    (("-p", "study-storage-secret=My_Secret"), "must be a Secret name"),
    (("-p", "pushgateway=ftp://pg:9091"), "must be an http:// or https:// URL, or empty"),
    (("-p", "=rolling"), "--param expects NAME=VALUE, got '=rolling'"),
    (("-p", "windw=rolling"), "unknown parameter 'windw' (-p windw='rolling'); train-pipeline takes: model,"),
    (("--trials", "20"), "trials=20 needs a study storage"),
    (("-p", "trials=5", "-p", "study-storage-secret="), "trials=5 needs a study storage"),
    # A value that the pod's command line would read as a flag.
    (("-p", "hyperopt-params-uri=--overwrite"), "starts with '-', so the pod's foxhunt command would read it as a flag"),
    (("-p", "output-uri=--overwrite"), "output-uri='--overwrite': starts with '-'"),
    # Data URIs: s3:// (the pods' only storage), never a local path.
    (("-p", "bars-uri=/data/bars.parquet"), "bars-uri='/data/bars.parquet': must be an s3://BUCKET/KEY URI"),
    (("-p", "bars-uri=s3://bucket-only"), "must be an s3://BUCKET/KEY URI"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "message"), REFUSALS, ids=[" ".join(a)[:50] for a, _ in REFUSALS])
def test_a_bad_parameter_is_refused_before_any_request(argo, capsys, argv, message):
    assert message in refused(capsys, *CI_RUN, *argv)
    assert argo.requests == []


@pytest.mark.parametrize(("argv", "message"), REFUSALS[:8], ids=[" ".join(a)[:50] for a, _ in REFUSALS[:8]])
def test_a_dry_run_refuses_the_same(argo, capsys, argv, message):
    assert message in refused(capsys, *CI_RUN, *argv, "--dry-run")


@pytest.mark.parametrize("name", list(DATA))
def test_every_data_uri_is_required(argo, capsys, name):
    message = refused(capsys, "submit", *without(name), "--dry-run")

    assert message.startswith(f"foxhunt submit: error: {name} is required by train-pipeline")
    assert f"pass -p {name}=" in message
    assert argo.requests == []


def test_no_data_uri_has_a_default_in_any_template():
    for template in ("train-pipeline", "train", "precompute-features"):
        declared = shipped_template(template)["spec"]["arguments"]["parameters"]
        assert [p["name"] for p in declared if p["name"].endswith("-uri") and "value" not in p] == [
            n for n in ("bars-uri", "fxcache-uri", "output-uri") if any(p["name"] == n for p in declared)
        ]


LABELS = [
    ("bad key!=v", "the key 'bad key!' must be [PREFIX/]NAME"),
    ("-x=v", "the key '-x' must be"),
    (f"{'k' * 64}=v", "must be [PREFIX/]NAME, NAME at most 63"),
    ("Example.com/x=v", "the key's prefix 'Example.com' must be a DNS subdomain"),
    ("ci.job=a,b=c", "the value 'a,b=c' must be at most 63"),
    (f"ci.job={'v' * 64}", "the value"),
    ("ci.job", "--label expects KEY=VALUE"),
    ("foxhunt.io/submitted-by=me", "foxhunt.io/submitted-by is set by foxhunt submit itself"),
]


@pytest.mark.parametrize(("label", "message"), LABELS, ids=[label for label, _ in LABELS])
def test_a_label_kubernetes_would_refuse_is_refused_even_in_a_dry_run(argo, capsys, label, message):
    assert message in refused(capsys, *CI_RUN, f"--label={label}", "--dry-run")
    assert argo.requests == []


# The longest prefix Kubernetes takes: a DNS subdomain of 253 characters, each label at most 63.
LONGEST_PREFIX = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])


@pytest.mark.parametrize(
    "label", ["ci.job=1234", "foxhunt.io/team=", "a.b-c/d_e.f=G-1.x", f"{LONGEST_PREFIX}/x=v"]
)
def test_labels_kubernetes_accepts_are_sent(argo, label):
    assert foxhunt(*CI_RUN, "-l", label) == 0
    assert argo.requests[0]["body"]["submitOptions"]["labels"].endswith("," + label)


def test_trials_with_a_study_storage_secret_are_submitted(argo):
    assert foxhunt("submit", "--trials", "20", *STUDY, "-p", "trial-workers=4", *DATA_ARGS) == 0

    assert sent_parameters(argo)[:3] == ["trials=20", "study-storage-secret=foxhunt-study", "trial-workers=4"]


def test_the_seeds_vote_as_the_result_is_submitted(argo):
    assert foxhunt("submit", "-p", "seeds=3", "-p", "result=majority", *DATA_ARGS) == 0

    assert sent_parameters(argo)[:2] == ["seeds=3", "result=majority"]


def test_the_checks_come_from_the_template_they_are_given():
    template = copy.deepcopy(shipped_template("train-pipeline"))
    annotations = template["metadata"]["annotations"]
    key = "foxhunt.io/parameter-schema"
    workers = '"trial-workers":{"type":"integer","minimum":1}'
    assert workers in annotations[key]
    annotations[key] = annotations[key].replace(workers, '"trial-workers":{"type":"integer","minimum":2}')

    check_parameters(
        {"trial-workers": "1", **DATA}, TemplateParameters.from_document(shipped_template("train-pipeline"))
    )
    with pytest.raises(SubmitUsageError, match="trial-workers='1': must be an integer >= 2"):
        check_parameters({"trial-workers": "1", **DATA}, TemplateParameters.from_document(template))


def test_the_train_template_takes_trials_without_a_study_secret():
    train = TemplateParameters.from_document(shipped_template("train"))

    check_parameters({"trials": "20", "fxcache-uri": DATA["fxcache-uri"], "output-uri": "s3://r/x"}, train)
