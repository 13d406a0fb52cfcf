"""bench/overlay.py: each seed's share of the feature oracle on overlaid bars, and the plain bars' do-no-harm."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import overlay  # noqa: E402


def _figures(seeds: dict[str, tuple[float, float, float]], oracle: float | None) -> dict:
    return {
        "seeds": {s: {"sharpe": v, "ci": [lo, hi]} for s, (v, lo, hi) in seeds.items()},
        "seeds_below_flat": [s for s, (_, _, hi) in seeds.items() if hi < 0.0],
        "feature_oracle": None if oracle is None else {"name": "mlp_60", "sharpe": oracle},
    }


def test_each_seeds_share_is_its_sharpe_over_the_oracles_and_the_median_is_judged():
    row = _figures({"0": (4.0, 2.0, 6.0), "1": (3.0, 1.0, 5.0), "2": (1.0, -1.0, 3.0)}, oracle=5.0)
    row.update(overlay.shares(row))
    assert row["share_of_oracle"] == pytest.approx({"0": 0.8, "1": 0.6, "2": 0.2})
    entry = overlay.targets("eurusd", 1.0, row)["overlay_eurusd_1x_share_of_oracle"]
    assert entry["measured"] == pytest.approx(0.6) and entry["met"] is False


def test_no_share_is_taken_of_an_oracle_that_finds_no_edge():
    row = _figures({"0": (0.5, -1.0, 2.0)}, oracle=-0.3)
    assert overlay.shares(row) == {"share_of_oracle": None, "share_of_oracle_median": None}


def test_the_plain_bars_fail_only_with_a_seed_below_flat_outside_its_interval():
    calm = _figures({"0": (-0.5, -2.0, 1.0), "1": (0.0, 0.0, 0.0)}, oracle=1.0)
    assert overlay.targets("yndx", None, calm)["plain_yndx_seeds_below_flat"]["met"]
    harm = _figures({"0": (-3.0, -5.0, -0.2), "1": (0.0, 0.0, 0.0)}, oracle=1.0)
    entry = overlay.targets("yndx", None, harm)["plain_yndx_seeds_below_flat"]
    assert entry["measured"] == 1 and entry["met"] is False
