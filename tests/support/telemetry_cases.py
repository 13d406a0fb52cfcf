"""Fold reports, metrics objects and Pushgateway helpers for the telemetry tests."""

from __future__ import annotations

from foxhunt.evaluate.reports import FoldDates, FoldReport
from foxhunt.run.sinks.telemetry import PHASES, RunMetrics
from foxhunt.run.sinks.telemetry_reads import fold_figures
from foxhunt.train.epoch_figures import EpochFigures
from support.evaluation_cases import window
from support.prom_services import free_port

TIMEOUT_S = 0.5
# What a call may take beyond its push timeout: building the request and Python's own overhead.
MARGIN_S = 0.5


def fold_report(fold: int) -> FoldReport:
    """A fold report like the pipeline's fold_N/report.json, with values distinct per fold."""
    base = 1.0 + fold
    epochs = [
        EpochFigures(
            epoch=i,
            loss=0.125 * base,
            epsilon=0.5,
            steps=10,
            collect_seconds=0.1 * base,
            train_seconds=(s - 0.1) * base,
            samples_per_second=1.0,
        )
        for i, s in enumerate((0.5, 0.7, 0.6))
    ]
    return FoldReport(
        fold=fold,
        train_start=1000 * fold,
        train_end=1000 * fold + 800 + fold,
        val_start=1000 * fold + 810,
        val_end=1000 * fold + 1000 + fold,
        difficulty_score=0.25 * base,
        dates=FoldDates(
            "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", "2024-01-02T01:00:00Z", "2024-01-03T00:00:00Z"
        ),
        phases={p: base * (i + 1) / 1000.0 for i, p in enumerate(PHASES)},
        fold_seconds=3.5 * base,
        samples_per_second=12345.5 * base,
        steps=30,
        epochs=epochs,
        evaluation=window(fold, seed=fold),  # distinct figures per fold
    )


def new_metrics(run_id: str, pushgateway: str | None, **kwargs) -> RunMetrics:
    return RunMetrics(run_id, pushgateway=pushgateway, model="dqn", device="cpu", timeout=TIMEOUT_S, **kwargs)


def one_run(m: RunMetrics, folds: int = 2) -> None:
    m.run_started()
    m.data_loaded(1.25, 60_000)
    for fold in range(folds):
        m.fold_finished(fold_figures(fold_report(fold)))
    m.run_finished("succeeded")


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"
