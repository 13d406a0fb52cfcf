"""`--diagnostics-every K`: the greedy policy's diagnostics on a fold's epochs K, 2K, ... and its last;
the other epochs record none (null in report.json, never an older epoch's figures), and the training
is the same, bit for bit, whichever epochs have them."""

import pytest
from support import strict_json
from support.run_cases import train_argv

from foxhunt.cli import main

DIAGNOSTICS = ("action_shares", "train_sharpe", "val_sharpe", "feature_agreement")
EPOCHS = 5


@pytest.fixture(scope="module")
def runs(tiny_fxcache, tiny_params, tmp_path_factory):
    """The same one-fold run of 5 epochs with the diagnostics every epoch (the default) and every 2."""
    outs = {}
    for every in (1, 2):
        out = tmp_path_factory.mktemp(f"every{every}") / "out"
        extra = ["--epochs", str(EPOCHS), "--max-folds", "1"]
        extra += [] if every == 1 else ["--diagnostics-every", str(every)]
        assert main(train_argv(tiny_fxcache, out, tiny_params, *extra)) == 0
        outs[every] = out
    return outs


def _epochs(out) -> list[dict]:
    return strict_json.read(out / "fold_0" / "report.json")["epochs"]


def test_only_every_kth_epoch_and_the_last_have_diagnostics_the_others_record_null(runs):
    epochs = _epochs(runs[2])
    assert [e["epoch"] for e in epochs] == list(range(EPOCHS))
    diagnosed = [e["epoch"] for e in epochs if all(e[k] is not None for k in DIAGNOSTICS)]
    skipped = [e["epoch"] for e in epochs if all(e[k] is None for k in DIAGNOSTICS)]
    assert (diagnosed, skipped) == ([1, 3, 4], [0, 2])


def test_by_default_every_epoch_has_its_diagnostics(runs):
    assert all(e[k] is not None for e in _epochs(runs[1]) for k in DIAGNOSTICS)


def test_a_diagnosed_epoch_has_the_same_figures_as_with_diagnostics_every_epoch(runs):
    every, spaced = _epochs(runs[1]), _epochs(runs[2])
    for epoch in (1, 3, 4):
        assert {k: spaced[epoch][k] for k in DIAGNOSTICS} == {k: every[epoch][k] for k in DIAGNOSTICS}


def test_spacing_the_diagnostics_changes_no_training_figure(runs):
    every, spaced = _epochs(runs[1]), _epochs(runs[2])
    assert [(e["loss"], e["q_mean"], e["q_max"]) for e in spaced] == [
        (e["loss"], e["q_mean"], e["q_max"]) for e in every
    ]
    for name in ("positions.npy", "weights.pt"):
        assert (runs[2] / "fold_0" / name).read_bytes() == (runs[1] / "fold_0" / name).read_bytes()


def test_a_diagnostics_interval_below_one_is_refused_before_work(tiny_fxcache, tiny_params, tmp_path, capsys):
    code = main(train_argv(tiny_fxcache, tmp_path / "out", tiny_params, "--diagnostics-every", "0"))
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--diagnostics-every" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
