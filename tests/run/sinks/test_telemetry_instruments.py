"""The `instrument` label: fold, stitched and held-out gauges say which instrument (or the book) they are of.

The metric names stay the single-instrument ones; a query that names no instrument reads them as before.
"""

from __future__ import annotations

import dataclasses

from support.telemetry_cases import fold_report, new_metrics

from foxhunt.evaluate.book import BOOK as EVALUATE_BOOK
from foxhunt.run.sinks.telemetry import FOLD_GAUGES, HOLDOUT_GAUGES, STITCHED_GAUGES
from foxhunt.run.sinks.telemetry_figures import HoldoutFigures, PolicyFigures, StitchedFigures
from foxhunt.run.sinks.telemetry_gauges import BOOK, INSTRUMENT, instrument_name
from foxhunt.run.sinks.telemetry_reads import fold_figures

STITCHED = StitchedFigures(PolicyFigures(1.5, 0.25, 0.1, 0.05, 12.0), {"buy_and_hold": 0.5})
BOOK_FIGURES = StitchedFigures(PolicyFigures(2.5, 0.2, 0.3, 0.04, 9.0), {"buy_and_hold": 0.75})


def sample(m, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_fold_gauges_carry_the_runs_instrument_by_default():
    m = new_metrics("instrument-fold", None, instrument="EURUSD")
    m.fold_finished(fold_figures(fold_report(0)))
    expected = fold_report(0).evaluation.policies["model"].net.sharpe
    assert sample(m, "foxhunt_fold_validation_sharpe", fold="0", instrument="EURUSD", trial="") == expected
    assert (
        sample(m, "foxhunt_fold_phase_seconds", fold="0", phase="train", instrument="EURUSD", trial="")
        is not None
    )


def test_a_fold_may_be_recorded_for_another_instrument():
    m = new_metrics("instrument-other", None, instrument="EURUSD")
    m.fold_finished(fold_figures(fold_report(0)), instrument="YNDX")
    assert (
        sample(m, "foxhunt_fold_seconds", fold="0", instrument="YNDX", trial="")
        == fold_report(0).fold_seconds
    )
    assert sample(m, "foxhunt_fold_seconds", fold="0", instrument="EURUSD", trial="") is None


def test_a_searchs_trials_keep_their_own_figures_for_one_fold():
    m = new_metrics("instrument-trials", None, instrument="EURUSD")
    m.fold_finished(fold_figures(fold_report(0)), trial=3)
    m.fold_finished(dataclasses.replace(fold_figures(fold_report(0)), fold_seconds=9.25), trial=4)
    assert sample(m, "foxhunt_fold_seconds", fold="0", instrument="EURUSD", trial="3") == 3.5
    assert sample(m, "foxhunt_fold_seconds", fold="0", instrument="EURUSD", trial="4") == 9.25
    assert sample(m, "foxhunt_fold_info", fold="0", val_start=fold_figures(fold_report(0)).val_first_bar,
                  val_end=fold_figures(fold_report(0)).val_last_bar, instrument="EURUSD", trial="3") == 1  # fmt: skip


def test_the_book_is_recorded_beside_the_instrument_under_book():
    m = new_metrics("instrument-book", None, instrument="EURUSD")
    m.stitched_scored(STITCHED)
    m.book_scored(BOOK_FIGURES)
    assert sample(m, "foxhunt_stitched_validation_sharpe", instrument="EURUSD") == 1.5
    assert sample(m, "foxhunt_stitched_validation_sharpe", instrument="book") == 2.5
    assert sample(m, "foxhunt_stitched_baseline_sharpe", baseline="buy_and_hold", instrument="book") == 0.75


def test_the_held_out_headline_carries_the_label():
    m = new_metrics("instrument-holdout", None, instrument="EURUSD")
    m.holdout_scored(HoldoutFigures(days=30.0, net_sharpe=1.1, net_sharpe_ci_low=0.1,
                                    net_sharpe_ci_high=2.1, net_sharpe_se=0.5))  # fmt: skip
    assert sample(m, "foxhunt_holdout_net_sharpe", days="30", instrument="EURUSD") == 1.1


def test_a_held_out_headline_may_be_recorded_for_another_instrument():
    m = new_metrics("instrument-holdout-other", None, instrument="EURUSD")
    m.holdout_scored(HoldoutFigures(days=30.0, net_sharpe=1.1, net_sharpe_ci_low=0.1,
                                    net_sharpe_ci_high=2.1, net_sharpe_se=0.5), instrument="YNDX")  # fmt: skip
    assert sample(m, "foxhunt_holdout_net_sharpe", days="30", instrument="YNDX") == 1.1
    assert sample(m, "foxhunt_holdout_net_sharpe", days="30", instrument="EURUSD") is None


def test_every_figure_gauge_has_the_label_and_the_run_gauges_do_not():
    m = new_metrics("instrument-all", None, instrument="EURUSD")
    m.data_loaded(1.0, 10)
    m.fold_finished(fold_figures(fold_report(0)))
    m.stitched_scored(STITCHED)
    labelled = {s.name for family in m.registry.collect() for s in family.samples if INSTRUMENT in s.labels}
    figure_names = [name for name, _, _ in FOLD_GAUGES] + list(STITCHED_GAUGES)
    assert set(figure_names) <= labelled
    assert "foxhunt_data_rows" not in labelled and "foxhunt_run_info" not in labelled


def test_the_metric_names_are_the_single_instrument_ones():
    names = [name for name, _, _ in FOLD_GAUGES] + list(STITCHED_GAUGES) + list(HOLDOUT_GAUGES)
    assert not any("instrument" in name or "book" in name for name in names)
    assert "foxhunt_stitched_validation_sharpe" in names and "foxhunt_fold_validation_sharpe" in names


def test_an_instruments_name_is_its_files_name_up_to_the_first_dot():
    assert instrument_name("s3://data/caches/EURUSD.fxcache") == "EURUSD"
    assert instrument_name("/tmp/run/YNDX.2020.arrow") == "YNDX"


def test_an_instruments_name_ignores_a_trailing_slash():
    assert instrument_name("s3://data/caches/EURUSD.fxcache/") == "EURUSD"


def test_the_book_label_is_the_evaluations_word_for_the_book():
    assert BOOK == EVALUATE_BOOK == "book"
