"""`foxhunt evaluate` checks what it scores: the run's files against its manifest, the fxcache against
the one the run trained on, and an --out that would replace the run's own files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.run_cases import train_argv

from foxhunt.cli import main
from foxhunt.run.precompute import precompute

ONE_FOLD = ("--epochs", "1", "--max-folds", "1")


@pytest.fixture(scope="module")
def saved_run(tiny_fxcache, tiny_params, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "out"
    assert main(train_argv(tiny_fxcache, out, tiny_params, *ONE_FOLD, "--pictures", "on")) == 0
    return out


@pytest.fixture(scope="module")
def other_fxcache(tmp_path_factory) -> Path:
    """The same dates as the tiny fxcache, other bars (another seed): another checksum."""
    path = tmp_path_factory.mktemp("other") / "other.fxcache"
    precompute(None, str(path), sample_bars=20_000, seed=4, progress=lambda _: None)
    return path


def evaluate(run: Path, fxcache: Path, *extra: str) -> list[str]:
    return ["evaluate", "--run", str(run), "--fxcache", str(fxcache), *extra]


def test_an_fxcache_other_than_the_runs_is_refused_naming_the_flag(saved_run, other_fxcache, capsys):
    assert main(evaluate(saved_run, other_fxcache)) == 2
    err = capsys.readouterr().err.strip()
    assert "not that of the fxcache the run trained on" in err and "--allow-other-fxcache" in err
    assert len(err.splitlines()) == 1


def test_allow_other_fxcache_scores_it_and_says_so(saved_run, other_fxcache, capsys):
    assert main(evaluate(saved_run, other_fxcache, "--allow-other-fxcache")) == 0
    assert f"--allow-other-fxcache: scoring on {other_fxcache}" in capsys.readouterr().out


def test_the_runs_own_fxcache_needs_no_flag(saved_run, tiny_fxcache, capsys):
    assert main(evaluate(saved_run, tiny_fxcache)) == 0
    assert "--allow-other-fxcache" not in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["truncate", "remove"])
def test_a_fold_file_that_does_not_match_the_manifest_is_refused(
    damage, saved_run, tiny_fxcache, tmp_path, capsys
):
    run = tmp_path / "run"
    shutil.copytree(saved_run, run)
    report = run / "fold_0" / "report.json"
    if damage == "truncate":
        report.write_bytes(report.read_bytes()[:100])
    else:
        report.unlink()
    assert main(evaluate(run, tiny_fxcache)) == 2
    err = capsys.readouterr().err.strip()
    assert "fold 0: fold_0/report.json" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("where", ["same", "inside"])
def test_an_out_inside_the_run_is_refused_and_the_run_kept(where, saved_run, tiny_fxcache, capsys):
    out = saved_run if where == "same" else saved_run / "evaluation"
    picture = (saved_run / "run.png").read_bytes()
    assert main(evaluate(saved_run, tiny_fxcache, "--out", str(out))) == 2
    assert "inside --run" in capsys.readouterr().err
    assert (saved_run / "run.png").read_bytes() == picture and not (saved_run / "evaluation").exists()


def with_summary_edit(saved_run: Path, tmp_path: Path, change) -> Path:
    """A copy of the saved run whose summary.json was edited by `change`."""
    import json

    run = Path(shutil.copytree(saved_run, tmp_path / "run"))
    summary = json.loads((run / "summary.json").read_text())
    change(summary)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda s: s["eval_config"].update(surprise=1), "eval_config has unknown key(s) surprise"),
        (lambda s: s["eval_config"].update(cost=-1.0), "eval_config.cost must be"),
        (lambda s: s["eval_config"].update(slippage="x"), "eval_config.slippage"),
        (lambda s: s.update(eval_config=[1]), "eval_config is list"),
        (lambda s: s.update(seed="x"), "seed is 'x'"),
    ],
    ids=["unknown-key", "bad-cost", "bad-type", "not-an-object", "bad-seed"],
)
@pytest.mark.parametrize("flags", [(), ("--eval-cost", "0.0001")], ids=["run-costs", "flag-costs"])
def test_a_bad_summary_is_one_line_naming_the_file_and_key_exit_2(
    saved_run, tiny_fxcache, tmp_path, capsys, change, words, flags
):
    run = with_summary_edit(saved_run, tmp_path, change)

    assert main(evaluate(run, tiny_fxcache, *flags)) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{run / 'summary.json'}:" in line and words in line
    assert "--eval" not in line.partition("summary.json")[2]  # not reported as a flag


def test_a_bad_flag_is_still_named_as_the_flag(saved_run, tiny_fxcache, capsys):
    assert main(evaluate(saved_run, tiny_fxcache, "--eval-cost", "5")) == 2
    assert "(--eval-cost)" in capsys.readouterr().err
