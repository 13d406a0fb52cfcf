"""Values of the volatility and volume features against a pandas rolling reference on real bars.

YNDX minute bars (2015) carry real volume, with long stretches of zero volume before the open:
both the ordinary windows and the zero-volume rule are exercised.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
from support.data_files import YNDX

from foxhunt.data import features as F
from foxhunt.data.bars import Bars, read_bars

ROWS = 20_000
RTOL, ATOL = 2e-5, 2e-6  # the table stores float32


@functools.cache
def yndx() -> tuple[pd.DataFrame, F.FeatureTable]:
    full = read_bars([str(YNDX)])
    cols = ("timestamp", "open", "high", "low", "close", "volume")
    bars = Bars(**{c: getattr(full, c)[:ROWS] for c in cols})
    frame = pd.DataFrame({c: getattr(bars, c) for c in cols})
    return frame, F.compute_features(bars)


def feature(table: F.FeatureTable, name: str) -> np.ndarray:
    return table.features[:, F.FEATURE_NAMES.index(name)]


def kept(series: pd.Series) -> np.ndarray:
    return series.to_numpy()[F.WARMUP_BARS : len(series) - F.LOOKAHEAD_BARS]


@pytest.mark.parametrize("window", F.VOLATILITY_WINDOWS)
def test_realized_volatility_is_the_root_mean_square_of_one_bar_log_returns(window):
    frame, table = yndx()
    log_return = np.log(frame["close"]).diff()
    reference = np.sqrt((log_return**2).rolling(window).mean())
    np.testing.assert_allclose(
        feature(table, f"realized_vol_{window}"), kept(reference), rtol=RTOL, atol=ATOL
    )
    # Not the standard deviation (which subtracts the window's mean return):
    std = kept(log_return.rolling(window).std(ddof=0))
    assert np.abs(feature(table, f"realized_vol_{window}") - std).max() > 10 * ATOL


def volume_z_reference(volume: pd.Series, window: int, ddof: int = 0) -> np.ndarray:
    """z = (v − mean) / std over the window (population std), and 0 where the window's volume is constant."""
    rolling = volume.rolling(window)
    constant = rolling.max() == rolling.min()
    z = (volume - rolling.mean()) / rolling.std(ddof=ddof)
    return kept(z.where(~constant, 0.0))


@pytest.mark.parametrize("window", F.VOLUME_Z_WINDOWS)
def test_volume_z_score_uses_the_population_std_and_is_zero_over_constant_volume(window):
    frame, table = yndx()
    got = feature(table, f"volume_z_{window}")
    np.testing.assert_allclose(got, volume_z_reference(frame["volume"], window), rtol=RTOL, atol=ATOL)
    constant = kept(frame["volume"].rolling(window).max() == frame["volume"].rolling(window).min())
    assert constant.any() and (got[constant] == 0).all()  # zero-volume stretches are covered
    # A sample std (ddof=1) would be off by sqrt(w / (w − 1)):
    assert np.abs(got - volume_z_reference(frame["volume"], window, ddof=1)).max() > 0.01


def test_log_volume_ratio_adds_one_to_volume_and_to_the_240_bar_mean():
    frame, table = yndx()
    volume = frame["volume"]
    reference = np.log((volume + 1.0) / (volume.rolling(F.VOLUME_MEAN_WINDOW).mean() + 1.0))
    got = feature(table, f"log_volume_ratio_{F.VOLUME_MEAN_WINDOW}")
    np.testing.assert_allclose(got, kept(reference), rtol=RTOL, atol=ATOL)
    assert (kept(volume) == 0).sum() > 1000 and np.isfinite(got).all()
