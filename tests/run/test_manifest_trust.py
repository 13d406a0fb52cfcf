"""The manifest and a resumed fold's files are untrusted input: a schema before any field is used, and
a checkpoint test-loaded before its fold counts as done."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
from pathlib import Path

import pytest
import torch
from support.run_cases import ONE_FOLD, copy_run, train_argv

from foxhunt.cli import main
from foxhunt.data.features import FEATURE_NAMES
from foxhunt.run.checkpoint_check import checkpoint_problem
from foxhunt.run.manifest import Manifest
from foxhunt.train.networks import build_qnet

HIDDEN = 16  # run_cases.TINY_DQN


@pytest.fixture
def used_out(one_fold_run, tmp_path) -> Path:
    """An --out holding one finished one-fold run (a copy of the session's)."""
    return copy_run(one_fold_run, tmp_path / "out")


def edit_manifest(out: Path, change) -> None:
    path = out / "manifest.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def replace_output(out: Path, name: str, data: bytes) -> None:
    """Put `data` at `name` and update its digest in the manifest, as a forger who can write --out would."""
    (out / name).write_bytes(data)
    edit_manifest(
        out, lambda m: m["run"]["folds"]["0"]["outputs"].__setitem__(name, hashlib.sha256(data).hexdigest())
    )


def state_bytes(state) -> bytes:
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


class TouchesAFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


BASE = {
    "format": 1,
    "fxcache": "f",
    "fxcache_checksum": None,
    "code_version": "v",
    "device": "cpu",
    "config": {},
    "run": {"folds": {"0": {"outputs": {"fold_0/weights.pt": "0" * 64}, "finished_at": "t"}}},
}


def with_fold(**record) -> dict:
    return {
        **BASE,
        "run": {"folds": {"0": {"outputs": {"fold_0/weights.pt": "0" * 64}, "finished_at": "t", **record}}},
    }


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (with_fold(outputs="fold_0/weights.pt"), "outputs is str"),
        (with_fold(outputs={"../../../../etc/hostname": "0" * 64}), "../../../../etc/hostname"),
        (with_fold(outputs={"/etc/hostname": "0" * 64}), "/etc/hostname"),
        (with_fold(outputs={"fold_1/weights.pt": "0" * 64}), "not its fold's"),
        (with_fold(outputs={"fold_0/weights.pt": "not hex"}), "bad sha256"),
        ({**BASE, "format": "1"}, "format is str"),
        ({**BASE, "config": "x"}, "config is str"),
        ({**BASE, "run": {"folds": {"zero": {}}}}, "no fold number"),
        (
            {
                **BASE,
                "trials": {
                    "1": {"folds": {"0": {"outputs": {"fold_0/report.json": "0" * 64}, "finished_at": "t"}}}
                },
            },
            "not its fold's",
        ),
        ([], "not a JSON object"),
    ],
)
def test_a_manifest_a_run_would_not_write_is_not_read(data, named):
    with pytest.raises(ValueError, match="not a foxhunt manifest") as err:
        Manifest.from_bytes(json.dumps(data).encode())
    assert named in str(err.value)


def test_a_manifest_a_run_writes_is_read():
    assert Manifest.from_bytes(json.dumps(BASE).encode()).run.folds[0].outputs == {
        "fold_0/weights.pt": "0" * 64
    }


def test_a_manifest_naming_a_file_outside_out_exits_2_and_reads_nothing(
    used_out, tiny_fxcache, tiny_params, capsys
):
    target = Path("/etc/hostname")
    digest = hashlib.sha256(target.read_bytes()).hexdigest() if target.exists() else "0" * 64
    edit_manifest(
        used_out, lambda m: m["run"]["folds"]["0"]["outputs"].update({"../../../../etc/hostname": digest})
    )
    assert main(train_argv(tiny_fxcache, used_out, tiny_params, *ONE_FOLD)) == 2
    err = capsys.readouterr().err.strip()
    assert "../../../../etc/hostname" in err and len(err.splitlines()) == 1


def test_a_manifest_whose_outputs_is_a_string_exits_2(used_out, tiny_fxcache, tiny_params, capsys):
    edit_manifest(used_out, lambda m: m["run"]["folds"]["0"].update(outputs="fold_0/weights.pt"))
    assert main(train_argv(tiny_fxcache, used_out, tiny_params, *ONE_FOLD)) == 2
    err = capsys.readouterr().err.strip()
    assert "outputs is str" in err and "unexpected" not in err and len(err.splitlines()) == 1


def test_a_forged_checkpoint_that_would_run_code_is_retrained_and_runs_nothing(
    used_out, tiny_fxcache, tiny_params, tmp_path, capsys, recwarn
):
    ran = tmp_path / "ran"
    replace_output(used_out, "fold_0/weights.pt", pickle.dumps(TouchesAFile(ran)))
    assert main(train_argv(tiny_fxcache, used_out, tiny_params, *ONE_FOLD)) == 0
    assert "fold 0: fold_0/weights.pt does not load as tensors" in capsys.readouterr().out
    assert not ran.exists()
    assert checkpoint_problem((used_out / "fold_0" / "weights.pt").read_bytes(), HIDDEN) is None
    assert not [
        w for w in recwarn if "pickle" in str(w.message)
    ]  # the run's line says it, not torch's warning


def test_a_forged_checkpoint_of_another_shape_is_retrained(used_out, tiny_fxcache, tiny_params, capsys):
    other = {k: v for k, v in build_qnet(len(FEATURE_NAMES), HIDDEN * 2).state_dict().items()}
    replace_output(used_out, "fold_0/weights.pt", state_bytes(other))
    assert main(train_argv(tiny_fxcache, used_out, tiny_params, *ONE_FOLD)) == 0
    assert "Q-network" in capsys.readouterr().out
    assert checkpoint_problem((used_out / "fold_0" / "weights.pt").read_bytes(), HIDDEN) is None


def test_a_checkpoint_with_values_that_are_not_finite_is_refused():
    state = build_qnet(len(FEATURE_NAMES), HIDDEN).state_dict()
    assert checkpoint_problem(state_bytes(state), HIDDEN) is None
    state["0.weight"][0, 0] = float("nan")
    assert checkpoint_problem(state_bytes(state), HIDDEN) == "holds values that are not finite"
