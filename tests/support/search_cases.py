"""`foxhunt train --trials N` arguments and files for the search tests."""

from __future__ import annotations

import json

import pytest

from support import strict_json

# Two folds of two short epochs: a trial takes about a second on one CPU core. No pictures (trials.png, a
# held-out period's): a test that reads them adds support.run_cases.PICTURES.
SEARCH_ARGS = (
    "--epochs", "2", "--train-days", "5", "--val-days", "2", "--step-days", "2", "--max-folds", "2",
    "--seed", "11", "--pictures", "off",
)  # fmt: skip
LR_ONLY = {"lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}}


@pytest.fixture(autouse=True)
def no_pushgateway(monkeypatch):
    for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID", "FOXHUNT_TRIAL_WORKER", "ARGO_WORKFLOW_NAME"):
        monkeypatch.delenv(name, raising=False)


def search_argv(fxcache, out, params, trials: int, *extra: str, device: str = "cpu") -> list[str]:
    """`foxhunt train --trials N` on the tiny fxcache."""
    return [
        "train", "--fxcache", str(fxcache), "--out", str(out), "--hyperopt-params", str(params),
        *SEARCH_ARGS, "--device", device, "--trials", str(trials), *extra,
    ]  # fmt: skip


def space_file(tmp_path, space: dict, name: str = "space.json"):
    path = tmp_path / name
    path.write_text(json.dumps(space))
    return path


def read_json(path):
    """A file foxhunt wrote (study.json, trials.json, trial.json, ...), parsed strictly (no NaN)."""
    return strict_json.read(path)
