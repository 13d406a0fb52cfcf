"""A universe run draws its pictures: each traded instrument's (run.png and the rest of a single run's) in
its folder, and `book.png` at the top: the book's cumulative net return over the union calendar beside
its buy-and-hold, flat and feature oracle, and each instrument's stitched record labelled with its
weight. What the book picture draws (`plot_book.book_picture`) is checked exactly, apart from the drawing."""

from __future__ import annotations

import contextlib
import io
import json
import struct

import numpy as np
import pytest
from support.universe_cases import three_instruments, write_caches

from foxhunt import collector
from foxhunt.cli import main
from foxhunt.evaluate import plot_book, plot_jobs
from foxhunt.evaluate.book import BOOK, FLAT, evaluate_book, instrument_series
from foxhunt.evaluate.evaluation import Scoring
from foxhunt.run.universe_run import SERIES

DAYS = 12
FOLDS = ["--train-days", "4", "--val-days", "2", "--step-days", "2", "--max-folds", "3"]
NAMES = ("fx00", "exchange01", "late")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The gate and the guard lowered to these learners' level, so that folds trade (a flat book draws zeros).
PARAMS = {"dqn": {"hidden": 16, "steps_per_epoch": 20, "select_pool": "pooled", "select_min_sharpe": -200.0,
                  "select_pool_guard": -400.0}}  # fmt: skip


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    """fx00 and exchange01 over the same dates; `late`, an FX instrument whose bars start 4 days later."""
    return write_caches(tmp_path_factory.mktemp("universe"), three_instruments(DAYS))


@pytest.fixture(scope="module")
def run(caches, tmp_path_factory):
    """The run's folder, its console, and the book picture's data as the run drew it."""
    out = tmp_path_factory.mktemp("run") / "out"
    drawn = []
    render = plot_book.render_book_png

    def spy(picture, title):
        drawn.append(picture)
        return render(picture, title)

    params = tmp_path_factory.mktemp("params") / "params.json"
    params.write_text(json.dumps(PARAMS))
    args = [
        "train",
        "--out",
        str(out),
        "--device",
        "cpu",
        "--epochs",
        "1",
        *FOLDS,
        "--hyperopt-params",
        str(params),
    ]
    for name in NAMES:
        args += ["--fxcache", caches[name]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plot_book, "render_book_png", spy)  # a closure: drawn in the process, as the reference
        patch.setattr(plot_jobs, "picture_workers", lambda jobs, cores=None: 1)
        with contextlib.redirect_stdout(io.StringIO()) as console:
            assert main(args) == 0
    (picture,) = drawn
    return out, console.getvalue().splitlines(), picture


def png_size(path) -> tuple[int, int]:
    """A PNG's (width, height) from its header, after checking its signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", path
    return struct.unpack(">II", data[16:24])


def test_the_book_picture_is_a_png_at_the_runs_top(run):
    out, _, _ = run
    width, height = png_size(out / "book.png")
    assert width >= 800 and height >= 600


def test_each_traded_instrument_has_a_single_runs_pictures_in_its_folder(run):
    out, _, _ = run
    summary = json.loads((out / "summary.json").read_text())
    traded = [i["name"] for i in summary["instruments"] if i["folds"]]
    assert sorted(traded) == sorted(NAMES)
    for name in traded:
        for picture in ("run.png", "positions.png", "learning.png", "timings.png"):
            width, height = png_size(out / "instruments" / name / picture)
            assert width >= 800 and height >= 300, (name, picture)


def test_the_outputs_line_names_the_pictures(run):
    _, lines, _ = run
    (outputs,) = [line for line in lines if line.startswith("outputs:")]
    assert "book.png" in outputs and "instruments/<name>/ (run.png" in outputs


def _weighted_on_union(out, weights: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """The union calendar of the instruments' series.npz and Σ wᵢ netᵢ on it (0 where one has no bar)."""
    series = {name: np.load(out / "instruments" / name / SERIES) for name in weights}
    union = np.unique(np.concatenate([s["timestamp"] for s in series.values()]))
    net = np.zeros(union.size)
    for name, s in series.items():
        net[np.searchsorted(union, s["timestamp"])] += weights[name] * s["net_returns"]
    return union, net


def test_the_drawn_book_line_is_the_weighted_sum_of_the_instruments_net_returns_on_the_union(run):
    out, _, picture = run
    weights = json.loads((out / "book.json").read_text())["weights"]
    assert len(set(round(w, 6) for w in weights.values())) == len(weights)  # unequal: a plain mean differs
    union, net = _weighted_on_union(out, weights)
    assert np.count_nonzero(net) > 100  # the book traded: a flat one would draw zeros whatever the formula
    np.testing.assert_array_equal(picture.timestamp, union)
    np.testing.assert_allclose(picture.book[BOOK], np.cumsum(net), rtol=0, atol=1e-12)
    _, plain = _weighted_on_union(out, {name: 1 / len(weights) for name in weights})
    assert np.abs(np.cumsum(plain) - picture.book[BOOK]).max() > 1e-6  # the plain mean would be told apart
    book_total = json.loads((out / "book.json").read_text())["window"]["n_bars"]
    assert picture.timestamp.size == book_total


def test_each_drawn_instrument_line_is_its_stitched_cumulative_net_labelled_with_its_weight(run):
    out, _, picture = run
    weights = json.loads((out / "book.json").read_text())["weights"]
    assert len(picture.instruments) == len(NAMES)
    for name, w in weights.items():
        stamps, cumulative = picture.instruments[f"{name} (weight {w:.2f})"]
        series = np.load(out / "instruments" / name / SERIES)
        np.testing.assert_array_equal(stamps, series["timestamp"])
        np.testing.assert_allclose(cumulative, np.cumsum(series["net_returns"]), rtol=0, atol=1e-12)


def test_the_book_is_drawn_beside_buy_and_hold_flat_and_its_feature_oracle(run):
    out, _, picture = run
    oracle = json.loads((out / "book.json").read_text())["feature_oracle"]
    labels = list(picture.book)
    assert labels[:3] == [BOOK, "buy and hold", FLAT]
    assert labels[3].startswith(f"feature oracle ({oracle['name']}")
    assert not np.any(picture.book[FLAT])


def _two_instruments() -> dict:
    """Two instruments on partly shared bars with a supervised baseline each (ridge_15)."""
    rng = np.random.default_rng(3)
    out = {}
    for name, stamps in (("a", np.arange(0, 40)), ("b", np.arange(20, 70))):
        n = stamps.size
        returns = rng.normal(0, 1e-3, n)
        positions = rng.choice([-1.0, 0.0, 1.0], n)
        ridge = rng.choice([-1.0, 1.0], n)
        arrays = {
            "timestamp": stamps * 60_000_000_000,
            "positions": positions,
            "net_returns": positions * returns - 1e-5,
            "ridge_15/positions": ridge,
            "ridge_15/net_returns": ridge * returns,
        }
        out[name] = (arrays, instrument_series(arrays, returns, 1e-5))
    return out


def test_book_picture_draws_the_weighted_book_not_one_instrument_nor_the_plain_mean():
    pairs = _two_instruments()
    weights = {"a": 0.25, "b": 0.75}
    book = evaluate_book({n: s for n, (_, s) in pairs.items()}, weights, Scoring(seed=1, resamples=50))
    picture = plot_book.book_picture(book, {n: arrays for n, (arrays, _) in pairs.items()})
    union = np.arange(0, 70) * 60_000_000_000
    weighted, plain = np.zeros(70), np.zeros(70)
    for name, (arrays, _) in pairs.items():
        at = np.searchsorted(union, arrays["timestamp"])
        weighted[at] += weights[name] * arrays["net_returns"]
        plain[at] += arrays["net_returns"] / 2
    np.testing.assert_array_equal(picture.timestamp, union)
    np.testing.assert_allclose(picture.book[BOOK], np.cumsum(weighted), rtol=0, atol=1e-15)
    assert not np.allclose(picture.book[BOOK], np.cumsum(plain))
    assert set(picture.instruments) == {"a (weight 0.25)", "b (weight 0.75)"}
    assert any(label.startswith("feature oracle (ridge_15") for label in picture.book)


def test_render_book_png_draws_a_png():
    pairs = _two_instruments()
    book = evaluate_book(
        {n: s for n, (_, s) in pairs.items()}, {"a": 0.5, "b": 0.5}, Scoring(seed=1, resamples=50)
    )
    png = plot_book.render_book_png(plot_book.book_picture(book, {n: a for n, (a, _) in pairs.items()}), "t")
    assert png[:8] == PNG_SIGNATURE and struct.unpack(">II", png[16:24]) == (1200, 900)


def test_pictures_drawn_by_worker_processes_are_the_runs_own(run, caches, tmp_path, monkeypatch):
    """The universe's pictures drawn side by side in spawned workers (forced: this machine has few cores)
    are byte for byte the in-process drawing's, apart from timings.png (seconds differ between runs)."""
    monkeypatch.setattr(plot_jobs, "picture_workers", lambda jobs, cores=None: 2)
    monkeypatch.setattr(collector, "owned", lambda: True)  # as the console command's own process
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(universe_argv(caches, tmp_path)) == 0
    first = {p.relative_to(run[0]): p.read_bytes() for p in run[0].rglob("*.png") if p.name != "timings.png"}
    again = {p.relative_to(tmp_path / "out"): p.read_bytes() for p in (tmp_path / "out").rglob("*.png")
             if p.name != "timings.png"}  # fmt: skip
    assert len(first) >= 4 and again == first


def test_a_universe_run_called_from_a_library_draws_its_pictures_in_its_own_process(
    caches, tmp_path, monkeypatch
):
    # main(argv) is not the console command's own process: a spawned worker would re-import the caller's script
    spawned = []

    def spawn(*args, **kwargs):
        spawned.append(args)
        raise OSError("no worker for a library caller")

    monkeypatch.setattr(plot_jobs, "picture_workers", lambda jobs, cores=None: 2)
    monkeypatch.setattr(plot_jobs, "ProcessPoolExecutor", spawn)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(universe_argv(caches, tmp_path)) == 0
    assert not spawned
    assert (tmp_path / "out" / "book.png").read_bytes()[:8] == PNG_SIGNATURE


def universe_argv(caches: dict[str, str], tmp_path) -> list[str]:
    """`foxhunt train` of the three instruments, one epoch, into `tmp_path / "out"`."""
    params = tmp_path / "params.json"
    params.write_text(json.dumps(PARAMS))
    args = ["train", "--out", str(tmp_path / "out"), "--device", "cpu", "--epochs", "1", *FOLDS,
            "--hyperopt-params", str(params)]  # fmt: skip
    for name in NAMES:
        args += ["--fxcache", caches[name]]
    return args
