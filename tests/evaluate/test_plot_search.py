"""trials.png: each trial's objective with its interval, the best marked, PBO and DSR in the title when defined."""

import json
import math

import numpy as np
import pytest

from foxhunt.evaluate.plot_search import (
    Z,
    objective_interval,
    read_trials_picture,
    render_trials_png,
    trials_figure,
)


def net(sharpe: float, se_hac: float, exposure: float = 0.5) -> dict:
    return {"sharpe": sharpe, "sharpe_se": 9.0, "sharpe_se_hac": se_hac, "exposure": exposure,
            "n_bars": 1000, "sharpe_per_period": 0.01}  # fmt: skip


def write_study(out, pbo=0.25, dsr=0.4) -> None:
    """Three trials: 3 complete, 7 complete and best, 9 pruned after one fold; trial 3 never traded (numbers are
    not places in the table; the best comes first)."""
    trials = [
        {"number": 7, "state": "COMPLETE", "objective": 2.0, "folder": "trials/0007",
         "report": {"objective": {"name": "stitched_sharpe", "value": 2.0}, "fold_net_sharpe": {"0": 1.0, "1": 3.0},
                    "stitched": {"net": net(2.0, 0.5)}}},
        {"number": 3, "state": "COMPLETE", "objective": 0.0, "folder": "trials/0003",
         "report": {"objective": {"name": "stitched_sharpe", "value": 0.0}, "fold_net_sharpe": {"0": 0.0, "1": 0.0},
                    "stitched": {"net": net(0.0, 0.0, exposure=0.0)}}},
        {"number": 9, "state": "PRUNED", "objective": None, "folder": "trials/0009",
         "report": {"objective": {"name": "stitched_sharpe", "value": None}, "fold_net_sharpe": {"0": -4.0}}},
    ]  # fmt: skip
    for t in trials:
        (out / t["folder"]).mkdir(parents=True)
        (out / t["folder"] / "trial.json").write_text(json.dumps(t.pop("report")))
    (out / "trials.json").write_text(json.dumps(trials))
    study = {"study_name": "s", "best": {"number": 7, "objective": 2.0},
             "selection": {"dsr": dsr, "overfitting": {"pbo": pbo}}}  # fmt: skip
    (out / "study.json").write_text(json.dumps(study))


def marks(fig) -> dict:
    """Each trial's errorbar: its mark's (x, y) and its interval's (low, high) where drawn."""
    found = {}
    for ax in fig.axes:
        for container in ax.containers:
            line = container.lines[0]
            if line.get_gid() and line.get_gid().startswith("trial "):
                bars = container.lines[2]
                span = bars[0].get_segments()[0][:, 1] if bars else None
                found[line.get_gid()] = (line.get_xdata()[0], line.get_ydata()[0], span, line.get_marker())
    return found


def test_each_complete_trial_is_drawn_at_its_objective_with_its_hac_interval(tmp_path):
    write_study(tmp_path)
    found = marks(trials_figure(read_trials_picture(str(tmp_path))))
    assert set(found) == {"trial 3", "trial 7"}  # the pruned trial has no objective
    x, y, span, _ = found["trial 7"]
    assert (x, y) == (7, 2.0)
    assert np.allclose(span, [2.0 - Z * 0.5, 2.0 + Z * 0.5])


def test_the_best_trial_is_marked_apart_from_the_others(tmp_path):
    write_study(tmp_path)
    fig = trials_figure(read_trials_picture(str(tmp_path)))
    found = marks(fig)
    assert found["trial 7"][3] == "*" and found["trial 3"][3] == "o"
    texts = {t.get_gid(): t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid()}
    assert texts["best"] == "best: trial 7"


def test_a_trial_that_never_traded_and_a_pruned_one_are_said_in_words(tmp_path):
    write_study(tmp_path)
    fig = trials_figure(read_trials_picture(str(tmp_path)))
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "flat" in texts and "pruned" in texts


def test_pbo_and_dsr_are_in_the_title_when_defined_and_left_out_when_not(tmp_path):
    write_study(tmp_path / "a")
    write_study(tmp_path / "b", pbo=None, dsr=None)
    title = trials_figure(read_trials_picture(str(tmp_path / "a"))).get_suptitle()
    assert "PBO 0.25" in title and "DSR 0.40" in title and "best trial 7" in title
    title = trials_figure(read_trials_picture(str(tmp_path / "b"))).get_suptitle()
    assert "PBO" not in title and "DSR" not in title


def test_the_mean_fold_sharpe_interval_is_the_mean_plus_minus_z_standard_errors_of_the_mean():
    folds = [1.0, 2.0, 6.0]
    report = {
        "objective": {"value": 3.0},
        "fold_net_sharpe": dict(enumerate(folds)),
        "stitched": {"net": net(3.0, 0.1)},
    }
    low, high = objective_interval("mean_fold_sharpe", report)
    half = Z * np.std(folds, ddof=1) / math.sqrt(3)
    assert (low, high) == pytest.approx((3.0 - half, 3.0 + half))


@pytest.fixture
def no_pushgateway(monkeypatch):
    for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID", "FOXHUNT_TRIAL_WORKER", "ARGO_WORKFLOW_NAME"):
        monkeypatch.delenv(name, raising=False)


def test_a_search_writes_trials_png_and_names_it(tiny_fxcache, tiny_params, tmp_path, no_pushgateway, capsys):
    from support.run_cases import PICTURES
    from support.search_cases import search_argv

    from foxhunt.cli import main

    out = tmp_path / "out"
    assert main(search_argv(tiny_fxcache, out, tiny_params, 2, *PICTURES)) == 0
    assert (out / "trials.png").read_bytes()[:4] == b"\x89PNG"
    assert render_trials_png(str(out))[:4] == b"\x89PNG"
    assert "trials.png" in capsys.readouterr().out.splitlines()[-1]  # the outputs line


def test_a_search_with_pictures_off_draws_no_trials_png_and_names_none(
    tiny_fxcache, tiny_params, tmp_path, no_pushgateway, capsys
):
    from support.search_cases import search_argv

    from foxhunt.cli import main

    out = tmp_path / "out"
    assert main([*search_argv(tiny_fxcache, out, tiny_params, 2), "--pictures", "off"]) == 0
    outputs = capsys.readouterr().out.splitlines()[-1]
    assert outputs.startswith("outputs: ") and "trials.csv" in outputs and "png" not in outputs
    assert not list(out.rglob("*.png"))


def test_a_study_whose_every_complete_trial_stayed_flat_says_so_in_its_title():
    from foxhunt.evaluate.plot_search import TrialPoint, TrialsPicture, trials_title

    flat = [TrialPoint(k, "COMPLETE", 0.0, 0.0, 0.0, flat=True) for k in range(2)]
    assert "every complete trial's policy stayed flat" in trials_title(TrialsPicture("s", "o", flat, 0))
    mixed = [*flat, TrialPoint(2, "COMPLETE", 1.0, 0.5, 1.5)]
    assert "flat" not in trials_title(TrialsPicture("s", "o", mixed, 2))
