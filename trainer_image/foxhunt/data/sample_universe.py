"""Sample data for a universe: K instruments with their own noise and news and one planted process.

Instrument ``i`` is `generate_sample_bars` with its own seed (instrument 0 keeps the universe's seed,
so a universe of one is exactly today's sample bars) and the same planted settings: the same news
rate, drift, jump and autocorrelation, or none of them (`signal=False`). Each instrument's noise, news
bars and news directions are its own draws, so the instruments share how the market works, not what
it did. An instrument trades on a calendar: ``"fx"`` (minutes of weekdays, 24x5) or ``"exchange"``
(one session a day, weekends and holidays closed), both over the same dates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from foxhunt.data.bars import Bars, generate_sample_bars
from foxhunt.data.sample import PlantedReturns, fx_minutes, sample_returns, session_minutes

CALENDARS = ("fx", "exchange")


def instrument_seed(seed: int, instrument: int) -> int:
    """The seed of instrument `instrument` in the universe drawn with `seed` (instrument 0: `seed`)."""
    if instrument == 0:
        return seed
    # A hash of (seed, instrument), not seed + instrument: universes with neighbouring seeds share no
    # instrument.
    return int(np.random.SeedSequence([seed, instrument]).generate_state(1, np.uint32)[0])


def instrument_name(instrument: int, calendar: str) -> str:
    """The name of a sample instrument: its calendar and its place, e.g. ``fx00``, ``exchange03``."""
    return f"{calendar}{instrument:02d}"


def calendar_timestamps(calendar: str, n_bars: int, start: str) -> np.ndarray | None:
    """An instrument's timestamps over the dates of `n_bars` FX minutes from `start`.

    None for ``"fx"``: `generate_sample_bars`'s own weekday minutes, so its content hash stays the old one.
    """
    if calendar == "fx":
        return None
    if calendar == "exchange":
        fx = fx_minutes(n_bars, start)
        return session_minutes(int(fx[0]), int(fx[-1]))
    raise ValueError(f"calendar {calendar!r}: expected one of {', '.join(CALENDARS)}")


def generate_universe(
    k: int,
    n_bars: int = 200_000,
    seed: int = 0,
    *,
    calendars: Sequence[str] = ("fx",),
    start: str = "2024-01-01T00:00:00",
    signal: bool = True,
    **planted: Any,
) -> list[tuple[str, Bars]]:
    """`k` sample instruments as (name, bars), over the dates of `n_bars` FX minutes from `start`.

    `calendars` is cycled over the instruments (``("fx", "exchange")`` alternates them). `planted`
    takes `generate_sample_bars`'s settings (`news_drift`, `sigma`, ...), the same for every instrument;
    `signal=False` plants nothing in any of them.
    """
    if k < 1:
        raise ValueError(f"a universe needs at least one instrument, got k={k}")
    if not calendars:
        raise ValueError("calendars: expected at least one of " + ", ".join(CALENDARS))
    universe = []
    for i in range(k):
        calendar = calendars[i % len(calendars)]
        stamps = calendar_timestamps(calendar, n_bars, start)
        n = n_bars if stamps is None else len(stamps)
        bars = generate_sample_bars(
            n, instrument_seed(seed, i), start=start, signal=signal, timestamps=stamps, **planted
        )
        universe.append((instrument_name(i, calendar), bars))
    return universe


def universe_returns(
    k: int,
    n_bars: int = 200_000,
    seed: int = 0,
    *,
    calendars: Sequence[str] = ("fx",),
    start: str = "2024-01-01T00:00:00",
    **planted,
) -> list[PlantedReturns]:
    """The planted returns of each instrument exactly as `generate_universe` draws them."""
    out = []
    for i in range(k):
        stamps = calendar_timestamps(calendars[i % len(calendars)], n_bars, start)
        n = n_bars if stamps is None else len(stamps)
        out.append(sample_returns(n, instrument_seed(seed, i), **planted))
    return out
