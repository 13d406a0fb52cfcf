"""A universe run whose member diverges (the divergence guard: |Q| past `q_limit`, a non-finite loss) ends
as an ordinary run does. The first seed's divergence fails the run: exit 1, one line naming the fold and
why, summary.json's status "failed" and its error as an ordinary run writes them, the completed folds kept
(their files, the manifest, the summary's list) and taken over by the same command again. Another seed's
divergence leaves that seed out and the run goes on, the console naming it as an ordinary run's does."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from support.universe_cases import guard_fires, three_instruments, write_caches

from foxhunt.cli import main
from foxhunt.run import universe_run
from foxhunt.train import TrainingDiverged

DAYS = 12
FOLDS = ["--train-days", "4", "--val-days", "2", "--step-days", "2", "--max-folds", "3"]


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    return write_caches(tmp_path_factory.mktemp("universe"), three_instruments(DAYS))


def train(caches: dict[str, str], out, *names: str) -> tuple[int, str, str]:
    """`foxhunt train` on the instruments `names` (a name starting with -- is a flag, passed on): its exit
    code, its console and its error line."""
    args = ["train", "--out", str(out), "--device", "cpu", "--pictures", "off", "--epochs", "1", *FOLDS]
    for name in names:
        args += ["--fxcache", caches[name]] if name in caches else [name]
    console, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(console), contextlib.redirect_stderr(errors):
        code = main(args)
    return code, console.getvalue(), errors.getvalue().strip()


def diverged_run(caches, out, member: int, *names: str, fold: int = 1) -> tuple[int, str, str]:
    """`train` with member `member`'s guard firing in fold `fold`."""
    with pytest.MonkeyPatch.context() as patch:
        guard_fires(member, fold, patch)
        return train(caches, out, *names)


def summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def ordinary(caches, tmp_path_factory):
    """One instrument's run whose guard fires in fold 1: what a universe run's failure is held to."""
    out = tmp_path_factory.mktemp("ordinary") / "out"
    return out, *diverged_run(caches, out, 0, "fx00")


@pytest.fixture(scope="module")
def universe(caches, tmp_path_factory):
    """A universe run (one seed) whose guard fires in fold 1."""
    out = tmp_path_factory.mktemp("universe") / "out"
    return out, *diverged_run(caches, out, 0, "fx00", "exchange01")


def test_the_failure_exits_1_in_one_line_naming_the_fold_and_why_as_an_ordinary_runs(universe, ordinary):
    universe_out, code, _, line = universe
    ordinary_out, ordinary_code, _, ordinary_line = ordinary
    assert code == ordinary_code == 1
    assert line == ordinary_line.replace(str(ordinary_out), str(universe_out))
    assert line.startswith("foxhunt train: failed: fold 1 failed: TrainingDiverged: fold 1 epoch 0: |Q|")


def test_the_summary_says_failed_with_the_error_an_ordinary_run_writes(universe, ordinary):
    failed, held_to = summary(universe[0]), summary(ordinary[0])
    assert (failed["status"], failed["error"]) == (held_to["status"], held_to["error"])
    assert failed["status"] == "failed" and failed["error"].startswith("TrainingDiverged: fold 1 epoch 0")


def test_the_completed_fold_is_kept_in_the_summary_the_manifest_and_its_files(universe):
    out = universe[0]
    assert {i["name"]: i["folds"] for i in summary(out)["instruments"]} == {"fx00": [0], "exchange01": [0]}
    assert sorted(json.loads((out / "manifest.json").read_text())["folds"]) == ["0"]
    assert (out / "instruments" / "fx00" / "fold_0" / "report.json").exists()
    assert not (out / "instruments" / "fx00" / "fold_1").exists()


def test_with_two_seeds_the_first_seeds_divergence_fails_the_run_alike_naming_the_seed(
    caches, universe, tmp_path
):
    out = tmp_path / "seeds"
    code, console, line = diverged_run(caches, out, 0, "fx00", "exchange01", "--seeds", "2")
    assert code == 1 and line == universe[3].replace(str(universe[0]), str(out))
    assert summary(out)["error"] == summary(universe[0])["error"]
    assert "seed 0: fold 1 epoch 0: |Q| reached" in console  # the seed, named as another seed's would be


def first_seed_left_walking(monkeypatch) -> None:
    """The first seed's divergence as the walk sees it: the fold's step hands it back as member 0's result."""
    universe_step = universe_run.universe_step

    def diverging_step(*args, **kwargs):
        step = universe_step(*args, **kwargs)

        def step_diverging(fold, live, outcomes):
            results = step(fold, live, outcomes)
            return (
                {**results, 0: TrainingDiverged("fold 1 epoch 0: loss is nan")} if fold.fold == 1 else results
            )

        return step_diverging

    monkeypatch.setattr(universe_run, "universe_step", diverging_step)


@pytest.mark.parametrize("seeds", ["1", "2"])
def test_the_first_seed_leaving_the_walk_fails_the_run(caches, tmp_path, monkeypatch, seeds):
    # Not a run "completed" with fold 0 alone (one seed), nor "fold 2: no figures" from a fold trained
    # without the run's own member (two).
    first_seed_left_walking(monkeypatch)
    out = tmp_path / "out"
    code, _, line = train(caches, out, "fx00", "exchange01", "--seeds", seeds)
    assert code == 1 and line.startswith("foxhunt train: failed: fold 1 failed: TrainingDiverged: fold 1")
    assert summary(out)["status"] == "failed"


def test_the_same_command_after_the_failure_takes_over_the_completed_fold_and_trains_the_rest(
    caches, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        first_seed_left_walking(patch)
        assert train(caches, out, "fx00", "exchange01")[0] == 1
    code, console, _ = train(caches, out, "fx00", "exchange01")
    assert code == 0 and "fold 0 taken over" in console and "fold 1 taken over" not in console
    finished = summary(out)
    assert finished["status"] == "completed" and "error" not in finished
    assert [i["folds"] for i in finished["instruments"]] == [[0, 1, 2], [0, 1, 2]]


def test_another_seeds_divergence_is_named_on_the_console_and_the_run_goes_on(caches, tmp_path):
    message = "fold 1 epoch 0: |Q| reached 1e+09 (limit 100)"
    code, console, _ = diverged_run(caches, tmp_path / "out", 1, "fx00", "exchange01", "--seeds", "2")
    assert code == 0 and f"seed 1: {message}" in console  # as an ordinary run's seeds are named
    assert summary(tmp_path / "out")["book"]["seed_spread"]["left_out"] == [
        {"seed": 1, "reason": "diverged in fold 1"}
    ]


def test_the_first_seeds_divergence_in_the_held_out_fold_names_it_as_an_ordinary_run_does(caches, tmp_path):
    # Three folds of 4 + 2 days, then the last 2 days held out: the held-out fold is fold 3.
    code, _, line = diverged_run(
        caches, tmp_path / "out", 0, "fx00", "exchange01", "--holdout-days", "2", fold=3
    )
    assert code == 1 and line.startswith(
        "foxhunt train: failed: the held-out fold failed: TrainingDiverged: "
    )
    assert summary(tmp_path / "out")["status"] == "failed"


def test_with_a_seed_diverged_a_majority_run_keeps_the_first_seeds_records_and_says_whose(caches, tmp_path):
    # Catches: a seed that stopped in fold 1 counted among the voters (its instruments' records are missing).
    out = tmp_path / "out"
    code, console, _ = diverged_run(
        caches, out, 2, "fx00", "exchange01", "--seeds", "3", "--result", "majority"
    )
    assert code == 0
    assert "(majority of" not in console  # two seeds left: no instrument's record is a vote
    finished = summary(out)
    assert finished["book"]["result"] == "seed 0 (the majority needs 3 seeds)"
    spreads = [i["seed_spread"] for i in finished["instruments"]]
    assert all(s["left_out"] == [{"seed": 2, "reason": "diverged in fold 1"}] for s in spreads)
    for entry, spread in zip(finished["instruments"], spreads, strict=True):
        assert entry["stitched_net_sharpe"] == spread["sharpe"]["0"]


def test_a_seed_diverged_in_the_walk_does_not_train_the_held_out_fold_of_a_majority_run(caches, tmp_path):
    # Catches: a seed that stopped in fold 1 training the held-out fold and voting on its headline.
    out = tmp_path / "out"
    flags = ("--seeds", "3", "--result", "majority", "--holdout-days", "2")
    code, _, _ = diverged_run(caches, out, 2, "fx00", "exchange01", *flags)
    assert code == 0
    for name in ("fx00", "exchange01"):
        held = out / "holdout" / "instruments" / name
        assert (held / "seed_1").is_dir() and not (held / "seed_2").exists()
