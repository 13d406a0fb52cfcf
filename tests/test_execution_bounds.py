"""Every execution-model setting has an upper bound and the held-out period a minimum, checked before
work; and the files a run writes are strict JSON (a figure that is not finite is null, never NaN)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from support import strict_json
from support.run_cases import ONE_FOLD, train_argv

from foxhunt.cli import main
from foxhunt.config import EvalConfig
from foxhunt.errors import BadInput, ConfigError
from foxhunt.evaluate.reports import RunSummary
from foxhunt.run.holdout import planning_rows
from foxhunt.run.summary_file import SummaryText

MINUTE = 60 * 10**9


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--eval-slippage", "1e300", "slippage"),
        ("--eval-slippage", "1.01", "slippage"),
        ("--eval-financing", "1e308", "financing"),
        ("--eval-off-session-factor", "1e300", "off_session_factor"),
        ("--eval-first-close", "1e300", "first_close"),
        ("--eval-spread-points", "1e300", "spread_points"),
        ("--eval-cost", "1e300", "cost"),
        ("--eval-spread", "1e300", "spread"),
        ("--holdout-days", "1e-12", "--holdout-days"),
        ("--holdout-days", "0.01", "--holdout-days"),
    ],
)
def test_a_setting_past_its_bound_is_one_line_exit_2_before_work(
    flag, value, named, tiny_fxcache, tiny_params, tmp_path, capsys
):
    out = tmp_path / "out"

    assert main(train_argv(tiny_fxcache, out, tiny_params, *ONE_FOLD, flag, value)) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert named in line
    assert not out.exists()


def test_a_spread_in_points_wider_than_the_price_is_refused():
    with pytest.raises(ConfigError, match="spread_points"):
        EvalConfig(spread_points=2.0, first_close=1.1)


def test_a_spread_in_points_within_the_price_is_accepted():
    assert EvalConfig(spread_points=0.5, first_close=1.1).spread_points == 0.5


def test_a_held_out_period_with_fewer_bars_than_a_folds_validation_is_bad_input():
    timestamp = np.arange(0, 20 * 1440, 60, dtype=np.int64) * MINUTE  # one bar an hour: 24 a day

    with pytest.raises(BadInput, match="holds 24 bars, fewer than --min-val-rows 100"):
        planning_rows(timestamp, 1.0, min_bars=100)
    assert planning_rows(timestamp, 5.0, min_bars=100) == len(timestamp) - 120 - 60


def test_the_summary_writes_a_figure_that_is_not_finite_as_null():
    summary = RunSummary(
        run_id="r", model="dqn", device="cpu", version="v", fxcache="f", fxcache_checksum=None, rows=1,
        epochs=1, seed=0, trials=0, fold_config={}, dqn_config={}, eval_config={"slippage": math.nan},
        started_at="t", data_load_seconds=math.inf,
    )  # fmt: skip

    text = SummaryText().render(summary)

    assert "NaN" not in text and "Infinity" not in text
    written = strict_json.loads(text)
    assert written["eval_config"] == {"slippage": None} and written["data_load_seconds"] is None


def test_the_strict_reader_refuses_nan():
    with pytest.raises(strict_json.NotStrictJSON):
        strict_json.loads('{"sharpe": NaN}')
