"""Several instruments: `train-pipeline` fans precompute out over a list of bars, one pod trains on all.

The rendered pipeline: a small `instruments` pod plans the list, one precompute pod per item (Argo's
`withParam`), then the training pods take every cache as a JSON list their launcher expands into
repeated `--fxcache` flags. `foxhunt submit` refuses a bad list in one line, exit 2, before any request.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.argo_standin import CI_RUN, DATA, foxhunt, refused, sent_parameters

from foxhunt.cli.parser import build_parser
from foxhunt_workflows import instruments as ins
from foxhunt_workflows.render import render_documents

EURUSD, YNDX = "s3://data/EURUSD.parquet", "s3://data/YNDX.csv"
ITEMS = "{{tasks.instruments.outputs.parameters.instruments}}"
CACHES = "{{tasks.instruments.outputs.parameters.fxcache-uris}}"


@pytest.fixture(scope="module")
def pipeline() -> dict:
    return render_documents()["train-pipeline"]


def tasks(pipeline: dict) -> dict[str, dict]:
    dag = next(t for t in pipeline["spec"]["templates"] if t["name"] == "pipeline")["dag"]
    return {t["name"]: t for t in dag["tasks"]}


def passed(task: dict) -> dict[str, str]:
    return {p["name"]: p["value"] for p in task["arguments"]["parameters"]}


def template(pipeline: dict, name: str) -> dict:
    return next(t for t in pipeline["spec"]["templates"] if t["name"] == name)


def test_precompute_fans_out_over_the_planned_instruments(pipeline):
    precompute = tasks(pipeline)["precompute"]
    assert precompute["withParam"] == ITEMS
    assert precompute["depends"] == "instruments"
    assert passed(precompute)["bars-uri"] == "{{item.bars}}"
    assert passed(precompute)["fxcache-uri"] == "{{item.fxcache}}"


def test_the_plan_reads_the_bars_and_cache_parameters(pipeline):
    plan = tasks(pipeline)["instruments"]
    assert passed(plan)["bars-uri"] == "{{workflow.parameters.bars-uri}}"
    assert passed(plan)["fxcache-uri"] == "{{workflow.parameters.fxcache-uri}}"
    container = template(pipeline, "instruments")["container"]
    assert container["command"] == list(ins.LAUNCHER)
    assert container["args"][:5] == ["plan", "--bars", "{{inputs.parameters.bars-uri}}", "--fxcache",
                                     "{{inputs.parameters.fxcache-uri}}"]  # fmt: skip
    outputs = {
        p["name"]: p["valueFrom"]["path"] for p in template(pipeline, "instruments")["outputs"]["parameters"]
    }
    assert outputs == {
        "instruments": f"/tmp/outputs/{ins.ITEMS_FILE}",
        "fxcache-uris": f"/tmp/outputs/{ins.FXCACHES_FILE}",
    }


@pytest.mark.parametrize("name", ["train", "trials", "train-best"])
def test_every_training_pod_takes_every_cache_after_every_precompute(pipeline, name):
    task = tasks(pipeline)[name]
    assert passed(task)["fxcache-uri"] == CACHES
    assert "precompute" in task["depends"] or task["depends"] == "trials"


def test_the_trial_worker_expands_the_cache_list_too(pipeline):
    assert template(pipeline, "trial-worker")["container"]["command"] == list(ins.LAUNCHER)


def test_the_bars_parameter_says_it_takes_a_list(pipeline):
    bars = next(p for p in pipeline["spec"]["arguments"]["parameters"] if p["name"] == "bars-uri")
    assert "JSON list" in bars["description"] and "one per instrument" in bars["description"]


def test_one_bars_uri_plans_one_instrument_with_its_cache_as_given():
    assert ins.plan(EURUSD, "s3://caches/eur.arrow") == [
        {"name": "EURUSD", "bars": EURUSD, "fxcache": "s3://caches/eur.arrow"}
    ]


def test_a_bars_list_plans_one_cache_per_instrument_in_the_folder():
    items = ins.plan(json.dumps([EURUSD, YNDX]), "s3://caches/universe/")
    assert [(i["name"], i["fxcache"]) for i in items] == [
        ("EURUSD", "s3://caches/universe/EURUSD.fxcache"),
        ("YNDX", "s3://caches/universe/YNDX.fxcache"),
    ]


def test_the_plan_writes_the_items_and_the_cache_list(tmp_path):
    assert (
        ins.main(
            ["plan", "--bars", json.dumps([EURUSD, YNDX]), "--fxcache", "s3://c", "--out", str(tmp_path)]
        )
        == 0
    )
    items = json.loads((tmp_path / ins.ITEMS_FILE).read_text())
    assert json.loads((tmp_path / ins.FXCACHES_FILE).read_text()) == [i["fxcache"] for i in items]
    assert [i["bars"] for i in items] == [EURUSD, YNDX]


def test_the_launcher_expands_a_cache_list_into_repeated_flags():
    args = ["train", "--fxcache", json.dumps(["s3://c/A.fxcache", "s3://c/B.fxcache"]), "--out", "s3://o"]
    assert ins.expand_fxcache(args) == [
        "train", "--fxcache", "s3://c/A.fxcache", "--fxcache", "s3://c/B.fxcache", "--out", "s3://o"
    ]  # fmt: skip


def test_the_launcher_leaves_a_single_cache_as_it_is():
    args = ["train", "--fxcache", "s3://c/A.fxcache", "--out", "s3://o"]
    assert ins.expand_fxcache(args) == args
    assert build_parser().parse_args(ins.expand_fxcache(args)).fxcache == ["s3://c/A.fxcache"]


def test_a_bad_list_in_a_pod_exits_2_with_one_line(capsys):
    assert ins.main(["train", "--fxcache", "[]"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


LIST_REFUSALS = [
    ("[]", "bars-uri: the list is empty"),
    (json.dumps([EURUSD, EURUSD]), f"bars-uri[1] '{EURUSD}': appears twice (EURUSD)"),
    (json.dumps([EURUSD, "s3://other/EURUSD.csv"]), "bars-uri[1] 's3://other/EURUSD.csv': has the same instrument name"),
    (json.dumps([EURUSD, "/data/YNDX.csv"]), "bars-uri[1] '/data/YNDX.csv': not an s3://BUCKET/KEY URI"),
    (json.dumps([EURUSD, "https://x/YNDX.csv"]), "bars-uri[1] 'https://x/YNDX.csv': not an s3://BUCKET/KEY URI"),
    (json.dumps([f"s3://d/I{i}.parquet" for i in range(65)]), "65 instruments, more than the limit of 64"),
    (f'["{EURUSD}",', "must be an s3://BUCKET/KEY URI, or a JSON list of them"),
    (json.dumps([EURUSD, 3]), "bars-uri: a JSON list of URI strings is expected"),
]  # fmt: skip


@pytest.mark.parametrize(("bars", "message"), LIST_REFUSALS, ids=[m[:40] for _, m in LIST_REFUSALS])
def test_submit_refuses_a_bad_bars_list_before_any_request(argo, capsys, bars, message):
    line = refused(capsys, *CI_RUN, "-p", f"bars-uri={bars}")
    assert message in line
    assert argo.requests == []


def test_submit_refuses_a_cache_list_beside_a_bars_list(argo, capsys):
    bars = json.dumps([EURUSD, YNDX])
    line = refused(capsys, *CI_RUN, "-p", f"bars-uri={bars}", "-p", f'fxcache-uri=["{DATA["fxcache-uri"]}"]')
    assert "fxcache-uri='[" in line and "must be an s3://BUCKET/KEY URI" in line
    assert argo.requests == []


def test_the_plan_refuses_a_cache_list_beside_a_bars_list():
    with pytest.raises(ins.InstrumentsError, match="fxcache-uri: with a list of bars it is the folder"):
        ins.plan(json.dumps([EURUSD]), json.dumps(["s3://c/A.fxcache"]))


def test_the_plan_refuses_text_that_is_not_a_json_list():
    with pytest.raises(ins.InstrumentsError, match="bars-uri: not a JSON list"):
        ins.plan(f'["{EURUSD}",', "s3://c")


def test_submit_sends_a_good_bars_list_as_one_parameter(argo):
    bars = json.dumps([EURUSD, YNDX])
    assert foxhunt(*CI_RUN, "-p", f"bars-uri={bars}") == 0
    assert f"bars-uri={bars}" in sent_parameters(argo)


def test_submit_refuses_a_search_over_several_instruments_before_any_request(argo, capsys):
    bars = json.dumps([EURUSD, YNDX])
    line = refused(capsys, *CI_RUN, "-p", f"bars-uri={bars}", "-p", "trials=4")
    assert "trials=4: a search is not supported over several instruments (bars-uri is a list)" in line
    assert argo.requests == []


def test_submit_to_the_train_template_checks_its_cache_list(argo, capsys):
    caches = json.dumps(["s3://c/A.fxcache", "s3://c/A.fxcache"])
    argv = ("submit", "--from", "train", "-p", f"fxcache-uri={caches}", "-p", "output-uri=s3://r/x")
    assert "fxcache-uri[1] 's3://c/A.fxcache': appears twice" in refused(capsys, *argv)
    assert argo.requests == []


def test_submit_to_precompute_takes_one_instruments_bars(argo, capsys):
    argv = ("submit", "--from", "precompute-features", "-p", f"bars-uri={json.dumps([EURUSD])}",
            "-p", f"fxcache-uri={DATA['fxcache-uri']}")  # fmt: skip
    assert "must be an s3://BUCKET/KEY URI" in refused(capsys, *argv)
    assert argo.requests == []


def test_the_launcher_runs_foxhunt_on_the_expanded_arguments(monkeypatch):
    ran = []
    monkeypatch.setattr(ins.os, "execvp", lambda file, argv: ran.append((file, argv)))
    ins.main(["train", "--fxcache", json.dumps(["s3://c/A.fxcache", "s3://c/B.fxcache"]), "--out", "s3://o"])
    assert ran == [("foxhunt", ["foxhunt", "train", "--fxcache", "s3://c/A.fxcache",
                                "--fxcache", "s3://c/B.fxcache", "--out", "s3://o"])]  # fmt: skip


def test_the_launcher_imports_nothing_heavy():
    # It starts every GPU pod: no Hera (not in every image's path), no numpy or torch before foxhunt runs.
    code = "import sys, foxhunt_workflows.instruments; print(sorted({'hera', 'numpy', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
