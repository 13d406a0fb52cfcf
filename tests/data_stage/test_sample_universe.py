"""Sample data for a universe: each instrument its own noise and news, all of them one planted process."""

from __future__ import annotations

import numpy as np
import pytest

from foxhunt.data.bars import generate_sample_bars
from foxhunt.data.sample import EXCHANGE_HOLIDAYS, fx_minutes, session_minutes
from foxhunt.data.sample_universe import generate_universe, universe_returns

N = 20_000
DRIFT = 2e-5


@pytest.fixture(scope="module")
def universe():
    kwargs = {"calendars": ("fx", "exchange"), "news_drift": DRIFT}
    return generate_universe(4, N, seed=3, **kwargs), universe_returns(4, N, seed=3, **kwargs)


def test_a_universe_of_one_is_the_sample_bars():
    (name, bars), single = generate_universe(1, 3000, seed=5)[0], generate_sample_bars(3000, seed=5)
    assert name == "fx00"
    for column in ("timestamp", "open", "high", "low", "close", "volume"):
        np.testing.assert_array_equal(getattr(bars, column), getattr(single, column))
    assert bars.content_hash == single.content_hash


def test_each_instruments_bars_carry_its_planted_returns(universe):
    instruments, planted = universe
    for (_, bars), p in zip(instruments, planted, strict=True):
        np.testing.assert_allclose(np.diff(np.log(bars.close)), p.returns[1:], atol=1e-12)


def test_instruments_draw_their_own_noise_and_news(universe):
    instruments, planted = universe
    fx = [p for (name, _), p in zip(instruments, planted, strict=True) if name.startswith("fx")]
    assert len(fx) == 2
    assert abs(np.corrcoef(fx[0].returns, fx[1].returns)[0, 1]) < 0.05
    assert not np.array_equal(fx[0].news, fx[1].news)
    assert len({bars.content_hash for _, bars in instruments}) == 4


def test_instruments_share_the_planted_drift(universe):
    _, planted = universe
    for p in planted:
        # Every instrument drifts by whole multiples of the one news drift, and all of them do drift.
        steps = p.expected / DRIFT
        np.testing.assert_allclose(steps, np.round(steps), atol=1e-9)
        assert np.count_nonzero(steps) > len(steps) / 10
        assert 0.5 < p.news.mean() * 250 < 1.5  # the one news rate: one bar in 250


def test_with_the_signal_off_no_instrument_drifts_and_the_news_stays():
    on = universe_returns(3, N, seed=4, news_drift=DRIFT)
    off = universe_returns(3, N, seed=4, news_drift=DRIFT, signal=False)
    for p_on, p_off in zip(on, off, strict=True):
        assert not np.any(p_off.expected)
        np.testing.assert_array_equal(p_on.news, p_off.news)


def test_calendars_alternate_over_the_same_dates(universe):
    instruments, _ = universe
    assert [name for name, _ in instruments] == ["fx00", "exchange01", "fx02", "exchange03"]
    fx, exchange = instruments[0][1].timestamp, instruments[1][1].timestamp
    assert fx[0] <= exchange[0] and exchange[-1] <= fx[-1]
    assert fx[-1] - exchange[-1] < 86_400 * 10**9  # the same last day, or the session before it


def test_the_exchange_is_closed_at_night_at_weekends_and_on_holidays():
    fx = fx_minutes(14 * 1440, "2024-12-20T00:00:00")
    stamps = session_minutes(int(fx[0]), int(fx[-1]), extra_closed=("2025-01-02",)).astype("datetime64[ns]")
    minute_of_day = (stamps - stamps.astype("datetime64[D]")).astype("timedelta64[m]").astype(int)
    assert minute_of_day.min() == 8 * 60 and minute_of_day.max() == 16 * 60 + 29
    days = np.unique(stamps.astype("datetime64[D]"))
    assert np.all((days.astype(np.int64) + 3) % 7 < 5)  # weekdays only
    closed = {str(d)[5:] for d in days} & set(EXCHANGE_HOLIDAYS)
    assert not closed and np.datetime64("2025-01-02") not in days
    assert np.datetime64("2024-12-23") in days and np.datetime64("2025-01-03") in days


def test_given_timestamps_replace_the_weekday_minutes_and_change_the_hash():
    stamps = session_minutes(int(fx_minutes(1)[0]), int(fx_minutes(1)[0]) + 7 * 86_400 * 10**9)
    bars = generate_sample_bars(len(stamps), seed=1, timestamps=stamps)
    np.testing.assert_array_equal(bars.timestamp, stamps)
    assert bars.content_hash != generate_sample_bars(len(stamps), seed=1).content_hash
    with pytest.raises(ValueError, match="increasing"):
        generate_sample_bars(len(stamps), seed=1, timestamps=stamps[::-1])


def test_universes_of_neighbouring_seeds_share_no_instrument():
    three, four = generate_universe(3, 500, seed=3), generate_universe(3, 500, seed=4)
    for _, a in three:
        assert not any(np.array_equal(a.close, b.close) for _, b in four)


def test_a_universe_of_no_instruments_is_refused():
    with pytest.raises(ValueError, match="k=0"):
        generate_universe(0, 500)
