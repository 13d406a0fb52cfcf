"""The book: instruments' stitched records combined at equal risk on the union calendar, and scored.

The tiny case, worked by hand. Instrument A trades bars 1, 2, 3, 4; B trades bars 2, 3, 5 (another
calendar). Before the book's start (bar 1) A's returns are ±0.01 and B's ±0.03: σ_A = 0.01, σ_B = 0.03,
so 1/σ is 100 and 33.3 and the weights are 0.75 and 0.25.

    A: positions 1, 1, 0, −1; asset returns 0.01, 0.02, 0.03, −0.005; cost 0.001 per unit of change
       changes 1, 0, 1, 1 → net 0.009, 0.02, −0.001, 0.004
    B: positions −1, −1, 1; asset returns −0.02, 0.01, 0.04; cost 0.002
       changes 1, 0, 2 → net 0.018, −0.01, 0.036

    bar            1         2                3                 4          5
    book net       .75·.009  .75·.02+.25·.018 .75·−.001+.25·−.01 .75·.004  .25·.036
                 = 0.00675   0.0195           −0.00325          0.003      0.009
    exposure       0.75      1.0              0.25              0.75       0.25     mean 0.6
    turnover       0.75      0.25             0.75              0.75       0.5      total 3.0
    buy-and-hold   .75·.009  .75·.02+.25·−.022 .75·.03+.25·.01  .75·−.005  .25·.04
                 = 0.00675   0.0095           0.025             −0.00375   0.01

Book net: mean 0.035 / 5 = 0.007; squared deviations 6.25e-8, 1.5625e-4, 1.050625e-4, 1.6e-5, 4e-6,
variance 2.81375e-4 / 5 = 5.6275e-5; equity 0.00675, 0.02625, 0.023, 0.026, 0.035: the largest fall is
0.00325 (bar 2 to 3), a drawdown of 1 − e^−0.00325; every bar is in the market and 4 of 5 gain.

The feature oracle's case: two supervised models on each instrument, net returns per bar as the
instruments' runs scored them (positions long throughout).

    A ridge_15  0.01, −0.01, 0.01, −0.01      A mlp_60  0.01, 0.02, 0.01, 0.02
    B ridge_15  0.03, 0.031, 0.032            B mlp_60  −0.01, 0.01, −0.01

    bar            1        2                  3                   4        5
    book ridge_15  0.0075   .75·−.01+.25·.03   .75·.01+.25·.031    −0.0075  .25·.032
                            = 0                = 0.01525                    = 0.008
    book mlp_60    0.0075   .75·.02+.25·−.01   .75·.01+.25·.01     0.015    .25·−.01
                            = 0.0125           = 0.01                       = −0.0025

Book ridge_15: mean 0.00465, variance 3.0095e-4 / 5 = 6.019e-5, Sharpe per bar 0.599. Book mlp_60: mean
0.0085, variance 1.825e-4 / 5 = 3.65e-5, Sharpe per bar 1.407: the oracle is mlp_60, though on B alone
ridge_15 (mean 0.031 with a spread of under 0.001) is the best model of any one instrument by far.
"""

import dataclasses
import json
import math

import numpy as np
import pytest

from foxhunt.evaluate import book as bk
from foxhunt.evaluate import paired
from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL, Scoring
from foxhunt.evaluate.reports import window_from_dict
from foxhunt.evaluate.seed_spread import seed_spread
from foxhunt.evaluate.supervised import oracle_label

SCORING = Scoring(resamples=200, seed=3)
PERIODS = 100.0  # stated bars per year, so the annualised figures are round


def _a(net=(0.009, 0.02, -0.001, 0.004)) -> bk.InstrumentSeries:
    series = {"timestamp": [1, 2, 3, 4], "positions": [1, 1, 0, -1], "net_returns": list(net)}
    return bk.instrument_series(series, np.array([0.01, 0.02, 0.03, -0.005]), 0.001)


def _b(net=(0.018, -0.01, 0.036)) -> bk.InstrumentSeries:
    series = {"timestamp": [2, 3, 5], "positions": [-1, -1, 1], "net_returns": list(net)}
    return bk.instrument_series(series, np.array([-0.02, 0.01, 0.04]), 0.002)


def _history(sigma: float, n: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Bars at −n .. −1 with returns ±sigma (std exactly sigma), then out-of-sample bars 1 .. 5."""
    stamps = np.concatenate([np.arange(-n, 0), np.arange(1, 6)])
    before = sigma * np.array([1.0, -1.0] * (n // 2))
    return stamps, np.concatenate([before, np.full(5, 0.5)])


def _weights(instruments) -> dict[str, float]:
    start = bk.book_start(instruments)
    vols = {
        "A": bk.volatility_before(*_history(0.01), start),
        "B": bk.volatility_before(*_history(0.03), start),
    }
    return bk.inverse_vol_weights(vols)


def _book(a=None, b=None) -> bk.BookEvaluation:
    instruments = {"A": a or _a(), "B": b or _b()}
    return bk.evaluate_book(instruments, _weights(instruments), SCORING, periods_per_year=PERIODS)


def test_weights_are_inverse_to_the_volatility_before_the_start():
    # Catches: weights ∝ σ (0.25, 0.75), equal weights (0.5, 0.5), 1/σ² (0.9, 0.1), weights not summing to 1.
    weights = _weights({"A": _a(), "B": _b()})
    assert weights == pytest.approx({"A": 0.75, "B": 0.25}, abs=1e-12)


def test_the_weights_do_not_see_the_out_of_sample_bars():
    # Catches: a volatility over all the bars, or one that includes the bar at the book's start.
    stamps, returns = _history(0.01)
    changed = returns.copy()
    changed[stamps >= 1] = [5.0, -7.0, 0.0, 3.0, 1.0]
    assert bk.volatility_before(stamps, changed, 1) == bk.volatility_before(stamps, returns, 1) == 0.01
    shifted = returns.copy()
    shifted[stamps == 1] = 9.0  # the book's first bar itself
    assert bk.volatility_before(stamps, shifted, 1) == 0.01


def test_the_book_starts_at_the_earliest_instrument_start():
    # Catches: measuring each instrument's volatility up to its own later start (B's bar 2 is traded).
    assert bk.book_start({"A": _a(), "B": _b()}) == 1


def test_the_book_net_series_on_the_union_calendar_by_hand():
    book = _book()
    series = book.series[MODEL]
    assert series.timestamp.tolist() == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(series.net, [0.00675, 0.0195, -0.00325, 0.003, 0.009], atol=1e-15)
    np.testing.assert_allclose(series.exposure, [0.75, 1.0, 0.25, 0.75, 0.25], atol=1e-15)
    np.testing.assert_allclose(series.changes, [0.75, 0.25, 0.75, 0.75, 0.5], atol=1e-15)


def test_the_book_gross_series_is_the_weighted_positions_times_returns_by_hand():
    # A: 1·0.01, 1·0.02, 0·0.03, −1·−0.005; B: −1·−0.02, −1·0.01, 1·0.04 (on bars 2, 3, 5).
    gross = _book().series[MODEL].gross
    np.testing.assert_allclose(gross, [0.0075, 0.02, -0.0025, 0.00375, 0.01], atol=1e-15)


def test_an_instrument_absent_at_a_time_contributes_nothing_there():
    # Catches: renormalising the weights over the instruments present (bar 1 would be 0.009, bar 5 0.036).
    series = _book().series[MODEL]
    assert series.net[0] == pytest.approx(0.75 * 0.009, abs=1e-15)
    assert series.net[4] == pytest.approx(0.25 * 0.036, abs=1e-15)


def test_the_book_record_figures_by_hand():
    # Catches: a Sharpe on one instrument's bars, an exposure of the mean |net position|, turnover not weighted.
    net = _book().window.policies[MODEL].net
    per_period = 0.007 / math.sqrt(5.6275e-5)
    assert net.n_bars == 5
    assert net.sharpe_per_period == pytest.approx(per_period, rel=1e-9)
    assert net.sharpe == pytest.approx(per_period * 10.0, rel=1e-9)
    assert net.log_return == pytest.approx(0.035, abs=1e-15)
    assert net.max_drawdown == pytest.approx(-math.expm1(-0.00325), rel=1e-9)
    assert net.exposure == pytest.approx(0.6, abs=1e-15)
    assert net.turnover == pytest.approx(3.0, abs=1e-15)
    assert net.turnover_per_year == pytest.approx(3.0 / 5 * PERIODS, rel=1e-12)
    assert net.hit_rate == pytest.approx(0.8)
    assert net.sharpe_ci_low < net.sharpe < net.sharpe_ci_high


def test_buy_and_hold_is_combined_with_the_same_weights_and_pays_each_entry_once():
    # Catches: equal weights for the baseline, an entry cost on every bar, B's entry at the book's start.
    bh = _book().series[BUY_AND_HOLD]
    np.testing.assert_allclose(bh.net, [0.00675, 0.0095, 0.025, -0.00375, 0.01], atol=1e-15)
    assert bh.changes.sum() == pytest.approx(1.0)


def test_flat_is_a_baseline_of_nothing():
    flat = _book().window.policies[bk.FLAT].net
    assert (flat.sharpe, flat.log_return, flat.exposure, flat.turnover) == (0.0, 0.0, 0.0, 0.0)


def test_the_comparison_with_buy_and_hold_is_the_paired_test_on_the_union_bars():
    # Catches: an unpaired comparison, or the comparison made on one instrument's bars.
    book = _book()
    test = paired.sharpe_difference(
        book.series[MODEL].net, book.series[BUY_AND_HOLD].net, resamples=200, seed=3
    )
    standing = book.window.standings[BUY_AND_HOLD]
    assert standing.difference_ci_low == pytest.approx(test.ci_low * 10.0, rel=1e-9)
    assert standing.difference_ci_high == pytest.approx(test.ci_high * 10.0, rel=1e-9)
    assert standing.p_value == test.p_value
    assert set(book.window.standings) == {BUY_AND_HOLD, bk.FLAT}


def test_psr_is_against_the_books_buy_and_hold():
    book = _book()
    assert book.window.policies[MODEL].net.benchmark_sharpe == pytest.approx(
        book.window.policies[BUY_AND_HOLD].net.sharpe, rel=1e-12
    )


def test_the_seeds_spread_is_the_seed_spread_of_the_books():
    # Catches: a spread over one instrument's figures instead of the book's.
    books = {0: _book(), 1: _book(a=_a(net=(0.0, 0.01, 0.0, -0.002)))}
    assert bk.book_seed_spread(books) == seed_spread({s: bk.book_net(b) for s, b in books.items()})
    assert bk.book_seed_spread(books)["sharpe"]["1"] != bk.book_seed_spread(books)["sharpe"]["0"]


def test_stated_weights_are_used_as_given():
    instruments = {"A": _a(), "B": _b()}
    book = bk.evaluate_book(
        instruments, bk.stated_weights({"A": 0.5, "B": 0.5}), SCORING, periods_per_year=PERIODS
    )
    assert book.series[MODEL].net[0] == pytest.approx(0.5 * 0.009, abs=1e-15)


@pytest.mark.parametrize("weights", [{"A": 0.6, "B": 0.6}, {"A": 0.5, "B": 0.501}, {"A": 1.5, "B": -0.5}, {}])
def test_stated_weights_that_do_not_make_a_book_are_refused(weights):
    with pytest.raises(ValueError):
        bk.stated_weights(weights)


def test_weights_for_other_instruments_are_refused():
    with pytest.raises(ValueError, match="not the same"):
        bk.combine({"A": _a(), "B": _b()}, {"A": 1.0})


def test_a_series_with_positions_outside_the_three_is_refused():
    with pytest.raises(ValueError, match="positions"):
        bk.instrument_series(
            {"timestamp": [1, 2], "positions": [0.5, 1], "net_returns": [0, 0]}, np.zeros(2), 0.0
        )


def test_too_little_history_before_the_start_is_refused():
    with pytest.raises(ValueError, match="too few"):
        bk.volatility_before(np.array([1, 2, 3]), np.array([0.1, 0.2, 0.3]), 2)


def test_an_annualised_volatility_scales_by_the_root_of_the_bars_per_year():
    # Catches: weights per bar for instruments whose sessions hold different numbers of bars a year.
    stamps, returns = _history(0.01)
    assert bk.volatility_before(stamps, returns, 1, periods_per_year=400.0) == pytest.approx(0.2)


def test_equal_risk_weights_measure_each_instrument_before_the_books_start():
    # Catches: a start per instrument (B's own first bar, 2), which would let B's weight see bar 1's return.
    instruments = {"A": _a(), "B": _b()}
    history = {"A": _history(0.01), "B": _history(0.03)}
    weights = bk.equal_risk_weights(history, bk.book_start(instruments))
    assert weights == pytest.approx({"A": 0.75, "B": 0.25}, abs=1e-12)
    stamps, returns = history["B"]
    moved = returns.copy()
    moved[stamps == 1] = 3.0  # bar 1 is out of sample for the book, though B has no bar there
    assert bk.equal_risk_weights({**history, "B": (stamps, moved)}, 1) == weights


def test_the_books_report_entry_reads_back_as_its_window():
    book = _book()
    data = json.loads(json.dumps(bk.book_to_dict(book)))
    assert data["weights"] == pytest.approx({"A": 0.75, "B": 0.25})
    assert window_from_dict(data["window"]) == book.window


SUPERVISED_A = {"ridge_15": (0.01, -0.01, 0.01, -0.01), "mlp_60": (0.01, 0.02, 0.01, 0.02)}
SUPERVISED_B = {"ridge_15": (0.03, 0.031, 0.032), "mlp_60": (-0.01, 0.01, -0.01)}


def _with_models(s: bk.InstrumentSeries, nets: dict) -> bk.InstrumentSeries:
    """`s` with supervised models held long throughout, their net returns as given."""
    series = {"timestamp": s.timestamp, "positions": s.positions, "net_returns": s.net_returns}
    for name, net in nets.items():
        series[f"{name}/positions"] = np.ones(s.timestamp.size)
        series[f"{name}/net_returns"] = np.array(net)
    return bk.instrument_series(series, s.asset_returns, s.cost_per_unit)


def _oracle_book(a_models=None, b_models=None) -> bk.BookEvaluation:
    a = _with_models(_a(), SUPERVISED_A if a_models is None else a_models)
    b = _with_models(_b(), SUPERVISED_B if b_models is None else b_models)
    return _book(a, b)


def test_each_supervised_model_is_combined_with_the_books_weights_and_compared_paired():
    # Catches: the supervised models left out of the book, or combined with other weights than the model's.
    book = _oracle_book()
    np.testing.assert_allclose(book.series["ridge_15"].net, [0.0075, 0, 0.01525, -0.0075, 0.008], atol=1e-15)
    np.testing.assert_allclose(book.series["mlp_60"].net, [0.0075, 0.0125, 0.01, 0.015, -0.0025], atol=1e-15)
    assert set(book.window.standings) == {BUY_AND_HOLD, bk.FLAT, "ridge_15", "mlp_60"}


def test_the_feature_oracle_by_hand():
    book = _oracle_book()
    oracle = bk.book_feature_oracle(book)
    per_bar = 0.0085 / math.sqrt(3.65e-5)
    best = book.window.policies["mlp_60"].net
    assert oracle is not None and oracle["name"] == "mlp_60"
    assert oracle["sharpe"] == pytest.approx(per_bar * 10.0, rel=1e-9)
    assert oracle["ci"] == [best.sharpe_ci_low, best.sharpe_ci_high]
    assert oracle["share"] == pytest.approx(0.007 / math.sqrt(5.6275e-5) / per_bar, rel=1e-9)
    assert (oracle["models"], oracle["label"]) == (2, oracle_label(2))


def test_the_oracle_is_the_best_combined_model_not_the_best_on_one_instrument():
    # Catches: picking the model that did best on some one instrument (ridge_15 on B).
    alone = bk.evaluate_book(
        {"B": _with_models(_b(), SUPERVISED_B)}, {"B": 1.0}, SCORING, periods_per_year=PERIODS
    )
    oracle = bk.book_feature_oracle(_oracle_book())
    assert bk.book_feature_oracle(alone)["name"] == "ridge_15"
    assert alone.window.policies["ridge_15"].net.sharpe > oracle["sharpe"]
    assert oracle["name"] == "mlp_60"


def test_a_model_some_instrument_lacks_is_left_out_of_the_book():
    # Catches: combining a model over the instruments that have it (its weight would be the book's anyway).
    book = _oracle_book(a_models={"ridge_15": SUPERVISED_A["ridge_15"]})
    assert set(book.series) == {MODEL, BUY_AND_HOLD, bk.FLAT, "ridge_15"}
    assert bk.book_feature_oracle(book)["models"] == 1


def test_without_supervised_models_the_book_has_no_oracle():
    assert bk.book_to_dict(_book())["feature_oracle"] is None


def test_the_share_is_left_out_when_the_oracle_earns_nothing():
    # Catches: a share of a non-positive Sharpe, whose sign would read backwards.
    losing = {"ridge_15": (-0.01, -0.02, -0.01, -0.02)}
    book = _oracle_book(a_models=losing, b_models={"ridge_15": (-0.01, -0.01, -0.02)})
    assert bk.book_feature_oracle(book)["share"] is None


def test_the_books_report_entry_carries_its_oracle():
    book = _oracle_book()
    data = json.loads(json.dumps(bk.book_to_dict(book)))
    assert data["feature_oracle"] == json.loads(json.dumps(bk.book_feature_oracle(book)))


def test_a_policy_combined_on_given_calendar_places_is_the_one_combined_alone():
    instruments = {"A": _a(), "B": _b()}
    weights = _weights(instruments)
    given = bk.combine(instruments, weights, BUY_AND_HOLD, bk.calendar_places(instruments))
    alone = bk.combine(instruments, weights, BUY_AND_HOLD)
    for mine, theirs in zip(dataclasses.astuple(given), dataclasses.astuple(alone), strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_a_book_finds_its_union_calendar_once_for_all_its_policies(monkeypatch):
    # Catches: the union of every instrument's timestamps found again for each policy (most of a book's time).
    found: list[int] = []
    union = bk.union_calendar
    monkeypatch.setattr(bk, "union_calendar", lambda instruments: found.append(1) or union(instruments))
    book = _oracle_book()
    assert len(found) == 1 and len(book.series) == 5  # the model, buy-and-hold, flat, two supervised models
