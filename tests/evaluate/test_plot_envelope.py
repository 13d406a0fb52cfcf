"""`plot.envelope`: a long line cut to what each pixel column shows (its first, lowest, highest and last
point), and every picture of a long record drawing its lines through it: a one-bar spike stays drawn."""

import numpy as np
import pytest

from foxhunt.evaluate.book import FLAT
from foxhunt.evaluate.plot import EquityLine, FoldSharpe, RunPicture, envelope, run_figure
from foxhunt.evaluate.plot_book import BookPicture, book_figure
from foxhunt.evaluate.plot_positions import PositionsPicture, positions_figure
from foxhunt.evaluate.plot_seeds import SeedsPicture, seeds_figure

MINUTE = 60_000_000_000
COLUMNS = 100
N = 100_000  # 1,000 points a column: column edges fall between points
SPIKE = 12_345  # a bar no stride of the line lands on


def walk(n: int = N, seed: int = 0) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).normal(0.0, 1.0, n))


def minutes(n: int = N) -> np.ndarray:
    return np.arange(n, dtype=np.int64) * MINUTE


def weekdays(n: int = N) -> np.ndarray:
    """Minute bars with a two-day gap after every five days of bars: columns by time, not by count."""
    day = np.arange(n) // 1440
    return (np.arange(n) + (day // 5) * 2 * 1440).astype(np.int64) * MINUTE


def column_of(x: np.ndarray) -> np.ndarray:
    """Each point's pixel column: x's range cut into COLUMNS equal spans (integer arithmetic)."""
    return np.minimum((x - x[0]) * COLUMNS // (x[-1] - x[0]), COLUMNS - 1)


def test_a_line_keeps_its_first_and_last_point():
    kept = envelope(minutes(), walk(), COLUMNS)
    assert kept[0] == 0 and kept[-1] == N - 1


@pytest.mark.parametrize("calendar", [minutes, weekdays])
def test_every_columns_lowest_and_highest_value_is_kept(calendar):
    x, y = calendar(), walk()
    kept = envelope(x, y, COLUMNS)
    every, drawn = column_of(x), column_of(x[kept])
    for column in np.unique(every):
        assert y[kept][drawn == column].min() == y[every == column].min()
        assert y[kept][drawn == column].max() == y[every == column].max()


def test_the_kept_points_run_in_x_order_each_once():
    x = weekdays()
    kept = envelope(x, walk(), COLUMNS)
    assert np.all(np.diff(kept) > 0)
    assert np.all(np.diff(x[kept]) >= 0)


def test_a_long_line_shrinks_to_at_most_four_points_a_column():
    assert len(envelope(minutes(), walk(), COLUMNS)) <= 4 * COLUMNS


def test_a_short_line_comes_back_whole():
    n = 4 * COLUMNS
    assert np.array_equal(envelope(minutes(n), walk(n), COLUMNS), np.arange(n))


def test_a_one_bar_spike_is_kept_where_every_kth_point_would_drop_it():
    y = walk()
    y[SPIKE] += 1_000.0
    assert SPIKE % (N // (4 * COLUMNS)) != 0  # every 250th point, as many as the envelope keeps, misses it
    assert SPIKE in envelope(minutes(), y, COLUMNS)


def spiked_pnl(n: int = 300_000) -> np.ndarray:
    """A per-bar log P&L whose wealth jumps 5% for one bar only."""
    pnl = np.random.default_rng(1).normal(0.0, 1e-4, n)
    pnl[SPIKE] += 0.05
    pnl[SPIKE + 1] -= 0.05
    return pnl


def drawn(fig) -> dict:
    return {line.get_gid() or line.get_label(): line for ax in fig.axes for line in ax.lines}


def run_lines():
    pnl = spiked_pnl()
    folds = [FoldSharpe(0, 0, int(minutes(pnl.size)[-1]), 1.0, 0.5, 1.5)]
    picture = RunPicture(
        minutes(pnl.size), [EquityLine("model", pnl), EquityLine("buy and hold", pnl * 0)], folds
    )
    return drawn(run_figure(picture, "t"))["model"], pnl


def positions_lines():
    pnl = spiked_pnl()
    picture = PositionsPicture(minutes(pnl.size), np.zeros(pnl.size), pnl, pnl * 0, [])
    return drawn(positions_figure(picture, "t"))["model wealth"], pnl


def seeds_lines():
    pnl = spiked_pnl()
    picture = SeedsPicture(minutes(pnl.size), [11, 12], {11: pnl, 12: pnl * 0}, pnl * 0)
    lines = drawn(seeds_figure(picture, None, "t"))
    assert lines["band high"].get_ydata().max() == pytest.approx(np.exp(np.cumsum(pnl)).max())
    return lines["seed 11"], pnl


def book_lines():
    pnl = spiked_pnl()
    wealth = np.cumsum(pnl)
    picture = BookPicture(
        minutes(pnl.size), {"book": wealth, FLAT: wealth * 0}, {"A": (minutes(pnl.size), wealth)}
    )
    return drawn(book_figure(picture, "t"))["book"], pnl


@pytest.mark.parametrize("lines", [run_lines, positions_lines, seeds_lines, book_lines])
def test_a_pictures_long_wealth_line_is_cut_short_and_keeps_a_one_bar_spike(lines):
    line, pnl = lines()
    wealth = np.exp(np.cumsum(pnl))
    assert len(line.get_ydata()) < pnl.size // 20
    assert np.max(line.get_ydata()) == pytest.approx(wealth.max())
    assert np.min(line.get_ydata()) == pytest.approx(wealth.min())


def test_run_png_draws_a_one_bar_drawdown():
    pnl = -spiked_pnl()  # down 5% for one bar, then back
    folds = [FoldSharpe(0, 0, int(minutes(pnl.size)[-1]), 1.0, 0.5, 1.5)]
    picture = RunPicture(minutes(pnl.size), [EquityLine("model", pnl)], folds)
    fill = run_figure(picture, "t").axes[1].collections[0]
    log_wealth = np.cumsum(pnl)
    deepest = np.exp(log_wealth - np.maximum.accumulate(np.maximum(log_wealth, 0.0))).min() - 1.0
    assert fill.get_paths()[0].vertices[:, 1].min() == pytest.approx(deepest * 100.0)
