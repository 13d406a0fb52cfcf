"""The run manifest: what a used --out holds, whether a run may continue it, and --overwrite."""

from __future__ import annotations

import json

import pytest
from support import strict_json
from support.run_cases import completed_folds, copy_run, fold_outputs, quick_argv

from foxhunt.cli import main
from foxhunt.run.manifest import FoldRecord, Manifest, WorkRecord, differences, sha256, verify_fold

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow


def manifest(**changes) -> Manifest:
    config = {
        "model": "dqn",
        "epochs": 2,
        "seed": 0,
        "trials": 0,
        "run_id": "a",
        "folds": {"train_days": 5.0, "mode": "rolling"},
        "dqn": {"lr": 3e-4},
        "eval": {"cost": 1e-4},
    }
    fields = {
        "fxcache": "x.fxcache",
        "fxcache_checksum": "abc",
        "code_version": "0.1.0",
        "device": "cpu",
        "config": config,
    }
    return Manifest(**{**fields, **changes})


def test_a_manifest_reads_back_what_was_written():
    written = manifest(
        run=WorkRecord({0: FoldRecord({"fold_0/weights.pt": "ab" * 32}, "2024-01-01T00:00:00+00:00")}),
        trials={3: WorkRecord({1: FoldRecord({"trials/0003/fold_1/report.json": "cd" * 32}, "t")})},
    )
    assert Manifest.from_bytes(written.to_bytes()) == written


def test_a_manifest_is_written_as_every_field_scrubbed_of_urls_work_and_all_would_be():
    # Catches: a field dropped or reordered, the folds' numbers or records written otherwise, or a setting's
    # URL no longer redacted, now that the work records are written without the redaction walk.
    from dataclasses import asdict

    from foxhunt.redaction import scrub_record

    config = {
        **manifest().config,
        "study_storage": "postgresql://user:hunter2@db:5432/s",
        "hosts": ("a", "b"),
    }
    written = manifest(
        fxcache="s3://key:secret@bucket/x.fxcache",
        config=config,
        run=WorkRecord({2: FoldRecord({"fold_2/weights.pt": "ab" * 32}, "2024-01-01T00:00:00+00:00")}),
        trials={
            7: WorkRecord({0: FoldRecord({"trials/0007/fold_0/report.json": "cd" * 32}, "t")}),
            3: WorkRecord(),
        },
        search={"storage": "postgresql://user:hunter2@db/s"},
    )
    data = asdict(written)  # the whole record walked, as the manifest was written before
    data["run"]["folds"] = {str(k): v for k, v in data["run"]["folds"].items()}
    data["trials"] = {
        str(k): {"folds": {str(f): r for f, r in v["folds"].items()}} for k, v in data["trials"].items()
    }
    expected = json.dumps(scrub_record(data, registered=False), indent=2)
    # The same JSON, its keys in the same order (the file's lines are its own: see the next test).
    assert json.dumps(json.loads(written.to_bytes()), indent=2) == expected
    assert b"hunter2" not in written.to_bytes() and b"secret" not in written.to_bytes()


def _fold(folder: str, digest: str) -> FoldRecord:
    return FoldRecord({f"{folder}/report.json": digest * 32, f"{folder}/weights.pt": digest * 32}, "t")


def test_a_manifest_writes_each_fold_of_the_run_and_each_trial_on_one_line():
    # Catches the work records written indented again: a search rewrites them after every round.
    trial = WorkRecord({0: _fold("trials/0007/fold_0", "cd"), 1: _fold("trials/0007/fold_1", "ef")})
    written = manifest(
        run=WorkRecord({0: _fold("fold_0", "ab"), 1: _fold("fold_1", "ab")}),
        trials={7: trial, 3: WorkRecord()},
    )
    lines = written.to_bytes().decode().splitlines()
    trial_lines = [line for line in lines if line.lstrip().startswith(('"7":', '"3":'))]
    assert [line.split(":")[0].strip() for line in trial_lines] == ['"7"', '"3"']
    one = json.loads("{" + trial_lines[0].rstrip(",") + "}")["7"]["folds"]["1"]
    assert one["outputs"] == trial.folds[1].outputs
    assert sum(line.lstrip().startswith(('"0": {"outputs"', '"1": {"outputs"')) for line in lines) == 2
    assert Manifest.from_bytes(written.to_bytes()) == written


def test_differences_name_every_setting_that_changed_and_ignore_the_run_id():
    old = manifest()
    new_config = json.loads(json.dumps(old.config))
    new_config["dqn"]["lr"] = 1e-3
    new_config["folds"]["mode"] = "expanding"
    new_config["run_id"] = "b"  # another run id may continue a run (a user's second attempt)
    changed = differences(old, manifest(config=new_config, fxcache_checksum="def"))
    assert changed == [
        "dqn.lr: 0.0003 → 0.001",
        "folds.mode: 'rolling' → 'expanding'",
        "fxcache_checksum: 'abc' → 'def'",
    ]


def test_a_fold_whose_output_changed_or_vanished_does_not_verify(tmp_path):
    (tmp_path / "fold_0").mkdir()
    (tmp_path / "fold_0" / "weights.pt").write_bytes(b"weights")
    record = FoldRecord({"fold_0/weights.pt": sha256(b"weights"), "fold_0/report.json": sha256(b"{}")}, "t")
    assert verify_fold(str(tmp_path), record) == "fold_0/report.json is missing"
    (tmp_path / "fold_0" / "report.json").write_bytes(b"{}")
    assert verify_fold(str(tmp_path), record) is None
    (tmp_path / "fold_0" / "weights.pt").write_bytes(b"weightz")
    assert verify_fold(str(tmp_path), record) == "fold_0/weights.pt does not match its checksum"


def test_a_run_with_other_settings_in_a_used_out_is_refused_naming_the_difference(
    quick_run, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = copy_run(quick_run, tmp_path / "out")
    before = fold_outputs(out)
    capsys.readouterr()
    assert main(quick_argv(tiny_fxcache, out, tiny_params, "--epochs", "3", "--eval-cost", "0")) == 2
    err = capsys.readouterr().err.strip()
    assert "epochs: 2 → 3" in err and "eval.cost: 0.0001 → 0.0" in err and "--overwrite" in err
    assert "\n" not in err
    assert fold_outputs(out) == before


def test_overwrite_leaves_nothing_of_the_old_run(quick_run, tiny_fxcache, tiny_params, tmp_path):
    out, fresh = copy_run(quick_run, tmp_path / "out"), tmp_path / "fresh"  # a quick run: three folds
    (out / "notes.txt").write_text("not a run output: kept")
    new = ("--epochs", "3", "--max-folds", "2")
    assert main(quick_argv(tiny_fxcache, out, tiny_params, *new, "--overwrite")) == 0
    assert main(quick_argv(tiny_fxcache, fresh, tiny_params, *new)) == 0
    listing = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert listing == sorted(["notes.txt", *(p.relative_to(fresh).as_posix() for p in fresh.rglob("*"))])
    assert fold_outputs(out) == fold_outputs(fresh)
    assert completed_folds(out) == [0, 1]


def test_an_out_holding_outputs_without_a_manifest_is_refused(tiny_fxcache, tiny_params, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "fold_0").mkdir(parents=True)
    (out / "fold_0" / "report.json").write_text("{}")
    (out / "summary.json").write_text("{}")
    assert main(quick_argv(tiny_fxcache, out, tiny_params)) == 2
    err = capsys.readouterr().err
    assert "fold_0, summary.json" in err and "no manifest" in err


def test_a_completed_fold_whose_output_was_altered_is_trained_again(
    quick_run, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = copy_run(quick_run, tmp_path / "out")
    before = fold_outputs(out)
    (out / "fold_1" / "weights.pt").write_bytes(b"tampered")
    capsys.readouterr()
    assert main(quick_argv(tiny_fxcache, out, tiny_params)) == 0
    log = capsys.readouterr().out
    assert "fold 1: fold_1/weights.pt does not match its checksum; training it again" in log
    assert "fold 0 skipped" in log and "fold 2 skipped" in log and "fold 1 epoch 1/2" in log
    assert fold_outputs(out) == before


def test_a_finished_run_started_again_trains_nothing_and_keeps_its_results(
    quick_run, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = copy_run(quick_run, tmp_path / "out")
    first = strict_json.read(out / "summary.json")
    capsys.readouterr()
    assert main(quick_argv(tiny_fxcache, out, tiny_params)) == 0
    assert " epoch " not in capsys.readouterr().out
    again = strict_json.read(out / "summary.json")
    assert again["resumed_folds"] == [0, 1, 2]
    assert again["folds"] == first["folds"]


def test_an_s3_out_resumes_refuses_and_overwrites_like_a_local_one(
    seaweed_s3, tiny_fxcache, tiny_params, capsys
):
    from foxhunt import storage

    out = seaweed_s3.uri("run")
    argv = [
        "train",
        "--fxcache",
        str(tiny_fxcache),
        "--out",
        out,
        "--hyperopt-params",
        str(tiny_params),
        "--train-days",
        "5",
        "--val-days",
        "2",
        "--step-days",
        "2",
        "--device",
        "cpu",
        "--epochs",
        "1",
    ]
    assert main([*argv, "--max-folds", "3"]) == 0
    capsys.readouterr()
    assert main([*argv, "--max-folds", "3"]) == 0
    assert capsys.readouterr().out.count("skipped: completed by an earlier attempt") == 3
    assert main([*argv, "--max-folds", "2"]) == 2
    assert "folds.max_folds: 3 → 2" in capsys.readouterr().err
    assert main([*argv, "--max-folds", "2", "--overwrite"]) == 0
    names = storage.list_prefix(out)
    assert not any(n.startswith("fold_2/") for n in names) and "run.lock" not in names
    assert strict_json.loads(storage.read_bytes(storage.join(out, "summary.json")))["folds_planned"] == 2
