"""seeds.png (--seeds K): every seed's stitched wealth, the band between the lowest and highest, the run's seed bold."""

import numpy as np

from foxhunt.evaluate.plot import FLAT_UNTRADED
from foxhunt.evaluate.plot_seeds import SeedsPicture, render_seeds_png, seeds_figure

MINUTE = 60_000_000_000
SPREAD = {"seeds": [11, 12, 13], "sharpe": {"11": 1.5, "12": -0.4, "13": 0.0},
          "median": 0.0, "q1": -0.2, "q3": 0.75, "iqr": 0.95}  # fmt: skip


def picture(n: int = 500) -> SeedsPicture:
    rng = np.random.default_rng(4)
    pnl = {11: rng.normal(1e-4, 1e-3, n), 12: rng.normal(-1e-4, 1e-3, n), 13: np.zeros(n)}
    return SeedsPicture(np.arange(n, dtype=np.int64) * MINUTE, [11, 12, 13], pnl, rng.normal(0, 1e-3, n),
                        {11: "", 12: "", 13: FLAT_UNTRADED})  # fmt: skip


def drawn(fig) -> dict:
    return {line.get_gid(): line for ax in fig.axes for line in ax.lines if line.get_gid()}


def test_the_band_runs_from_the_lowest_to_the_highest_seeds_wealth_at_each_bar():
    pic = picture()
    lines = drawn(seeds_figure(pic, SPREAD, "t"))
    wealth = np.exp(np.cumsum(np.stack([pic.log_pnl[s] for s in (11, 12, 13)]), axis=1))
    assert np.allclose(lines["band low"].get_ydata(), wealth.min(axis=0))
    assert np.allclose(lines["band high"].get_ydata(), wealth.max(axis=0))
    for k, seed in enumerate((11, 12, 13)):
        assert np.allclose(lines[f"seed {seed}"].get_ydata(), wealth[k])


def test_the_runs_own_seed_is_drawn_bold_and_a_flat_seed_says_so():
    lines = drawn(seeds_figure(picture(), SPREAD, "t"))
    widths = {seed: lines[f"seed {seed}"].get_linewidth() for seed in (11, 12, 13)}
    assert widths[11] > max(widths[12], widths[13])
    assert FLAT_UNTRADED in lines["seed 13"].get_label()
    assert "flat" not in lines["seed 12"].get_label()


def test_the_title_gives_the_median_and_iqr_and_names_a_flat_seed_in_words():
    title = seeds_figure(picture(), SPREAD, "t").get_suptitle()
    assert "median 0.00, IQR 0.95 (-0.20 to 0.75)" in title
    assert "13 flat" in title and "13 0.00" not in title


def test_the_seeds_majority_is_drawn_as_its_own_wealth_and_named_in_the_title():
    # Catches: the majority drawn from a seed's P&L, or left out of the title.
    pic = picture()
    vote = np.random.default_rng(9).normal(2e-4, 5e-4, 500)
    with_vote = SeedsPicture(pic.timestamp, pic.seeds, pic.log_pnl, pic.hold_log_pnl, pic.flat, vote)
    spread = {**SPREAD, "majority": {"sharpe": 2.25}}
    fig = seeds_figure(with_vote, spread, "t")
    line = drawn(fig)["majority"]
    assert (
        np.allclose(line.get_ydata(), np.exp(np.cumsum(vote))) and "majority of 3 seeds" in line.get_label()
    )
    assert fig.get_suptitle().endswith("; their majority 2.25")
    assert "majority" not in drawn(seeds_figure(pic, SPREAD, "t"))


def test_a_run_with_seeds_writes_seeds_png(quick_run, tiny_fxcache, tiny_params, tmp_path):
    from support.run_cases import quick_argv

    from foxhunt.cli import main

    out = tmp_path / "two"
    assert (
        main(
            quick_argv(tiny_fxcache, out, tiny_params, "--seeds", "2", "--max-folds", "1", "--pictures", "on")
        )
        == 0
    )
    assert (out / "seeds.png").read_bytes()[:4] == b"\x89PNG"
    assert render_seeds_png(picture(), SPREAD, "t")[:4] == b"\x89PNG"


def test_seeds_the_gate_held_flat_say_so_and_the_title_says_every_seed_is_flat():
    from foxhunt.evaluate.plot import FLAT_GATE
    from foxhunt.evaluate.plot_seeds import spread_title

    flat = {11: FLAT_GATE, 12: FLAT_GATE, 13: FLAT_GATE}
    assert spread_title(SPREAD, flat) == f"3 seeds, every one {FLAT_GATE} in any fold"
    assert "median" in spread_title(SPREAD, {11: "", 12: FLAT_GATE, 13: FLAT_GATE})
