"""`trials.png`: a search's trials side by side, drawn from the files the search wrote.

Top: each complete trial's objective with its interval, the best trial marked; a trial whose policy never
traded says "flat" in words beside its mark. The interval depends on the objective (the search scores
without the bootstrap): a stitched Sharpe ± z HAC standard errors (Lo's i.i.d. ones where no HAC one
exists); the mean of the folds' Sharpe ± z standard errors of that mean; the stitched net log return
± z i.i.d. standard errors of a sum of the bars' P&L. Bottom: every trial's per-fold net validation
Sharpe, pruned trials' too: what the pruner and PBO saw. The title gives PBO and DSR where defined.
Inputs: `study.json`, `trials.json` and each `trials/NNNN/trial.json` (`read_trials_picture`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from foxhunt import out_names, storage
from foxhunt.evaluate.plot import LINE_COLORS, agg_figure, png_bytes

Z = 1.959963984540054  # two-sided 95%
BEST_COLOR = "#c0392b"


@dataclass(frozen=True)
class TrialPoint:
    """One trial as drawn: its objective and interval (complete trials), its folds' net Sharpe."""

    number: int
    state: str  # COMPLETE, PRUNED, FAIL, ...
    objective: float | None
    low: float | None
    high: float | None
    fold_sharpe: Mapping[int, float] = field(default_factory=dict)
    flat: bool = False  # its stitched record never traded


@dataclass(frozen=True)
class TrialsPicture:
    """What `trials_figure` draws: the trials, the best one, the objective's name, PBO and DSR when defined."""

    study: str
    objective: str
    trials: Sequence[TrialPoint]
    best: int | None
    pbo: float | None = None
    dsr: float | None = None


def objective_interval(objective: str, report: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The 95% interval of a complete trial's objective from its `trial.json` (None, None: not defined)."""
    value = (report.get("objective") or {}).get("value")
    net = (report.get("stitched") or {}).get("net") or {}
    if value is None or not net:
        return None, None
    if objective.startswith("stitched_sharpe"):
        se = net.get("sharpe_se_hac") if _finite(net.get("sharpe_se_hac")) else net.get("sharpe_se")
        width = Z * se if isinstance(se, int | float) and math.isfinite(se) else None
    elif objective == "mean_fold_sharpe":
        folds = [float(v) for v in report.get("fold_net_sharpe", {}).values() if _finite(v)]
        mean = sum(folds) / len(folds) if folds else math.nan
        var = sum((v - mean) ** 2 for v in folds) / (len(folds) - 1) if len(folds) > 1 else math.nan
        width = Z * math.sqrt(var / len(folds)) if _finite(var) else None
    elif objective == "stitched_return":
        # per-bar sd from the per-period Sharpe (mean / sd); the sum of n bars has sd·√n
        n, sharpe = net.get("n_bars"), net.get("sharpe_per_period")
        width = Z * abs(value / n / sharpe) * math.sqrt(n) if _finite(sharpe) and sharpe and n else None
    else:
        width = None
    return (None, None) if width is None else (value - width, value + width)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _read_json(uri: str) -> Any:
    return json.loads(storage.read_bytes(uri))


def read_trials_picture(out_uri: str) -> TrialsPicture:
    """The picture's inputs from a search's `--out`: the table, the summary and each trial's report."""
    summary = _read_json(storage.join(out_uri, out_names.STUDY_SUMMARY))
    rows = _read_json(storage.join(out_uri, out_names.TRIALS_JSON))
    objective, points = "objective", []
    for row in rows:
        try:
            report = _read_json(storage.join(out_uri, row["folder"], out_names.TRIAL_REPORT))
        except FileNotFoundError:  # failed before its first fold: no report
            report = {}
        objective = (report.get("objective") or {}).get("name", objective)
        value = row["objective"] if row["state"] == "COMPLETE" else None
        low, high = objective_interval(objective, report) if value is not None else (None, None)
        net = (report.get("stitched") or {}).get("net") or {}
        points.append(TrialPoint(
            row["number"], row["state"], value, low, high,
            {int(f): v for f, v in report.get("fold_net_sharpe", {}).items() if _finite(v)},
            flat=bool(net) and net.get("exposure") == 0.0,
        ))  # fmt: skip
    selection = summary.get("selection") or {}
    best = summary.get("best") or {}
    return TrialsPicture(
        summary.get("study_name", ""),
        objective,
        points,
        best.get("number"),
        (selection.get("overfitting") or {}).get("pbo"),
        selection.get("dsr"),
    )


def _draw_objectives(ax, picture: TrialsPicture) -> None:
    done = [t for t in picture.trials if t.objective is not None]
    for t in done:
        best, value = t.number == picture.best, float(t.objective or 0.0)
        color = BEST_COLOR if best else LINE_COLORS[0]
        err = None
        if t.low is not None and t.high is not None:
            err = [[value - t.low], [t.high - value]]
        ax.errorbar([t.number], [value], yerr=err, fmt="*" if best else "o", color=color, capsize=3,
                    markersize=12 if best else 5, gid=f"trial {t.number}")  # fmt: skip
        if best:
            ax.annotate(f"best: trial {t.number}", (t.number, t.objective), fontsize=8, color=BEST_COLOR,
                        textcoords="offset points", xytext=(6, 6), gid="best")  # fmt: skip
        if t.flat:
            ax.annotate("flat", (t.number, t.objective), fontsize=7, style="italic", textcoords="offset points",
                        xytext=(6, -10), gid=f"flat trial {t.number}")  # fmt: skip
    for t in picture.trials:
        if t.objective is None:
            ax.annotate(t.state.lower(), (t.number, 0.0), xycoords=("data", "axes fraction"), fontsize=7,
                        ha="center", textcoords="offset points", xytext=(0, 4), color=LINE_COLORS[1])  # fmt: skip
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_ylabel(picture.objective)
    ax.set_title(f"each complete trial's {picture.objective} with its 95% interval")


def _draw_fold_sharpes(ax, picture: TrialsPicture) -> None:
    folds = sorted({f for t in picture.trials for f in t.fold_sharpe})
    for k, fold in enumerate(folds):
        xs = [t.number for t in picture.trials if fold in t.fold_sharpe]
        ys = [t.fold_sharpe[fold] for t in picture.trials if fold in t.fold_sharpe]
        ax.plot(xs, ys, "o", markersize=3, alpha=0.7, color=LINE_COLORS[(k % 4) + 1], label=f"fold {fold}",
                gid=f"fold {fold}")  # fmt: skip
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel("trial")
    ax.set_ylabel("net validation Sharpe")
    ax.set_title("each trial's folds (pruned trials too)")
    if folds:
        ax.legend(fontsize=7, loc="best", ncol=min(len(folds), 6))


def trials_title(picture: TrialsPicture) -> str:
    """The study, its trials and best, and PBO and DSR where they are defined."""
    done = sum(t.objective is not None for t in picture.trials)
    parts = [f"study {picture.study}: {len(picture.trials)} trials, {done} complete"]
    if picture.best is not None:
        parts.append(f"best trial {picture.best}")
    if picture.pbo is not None:
        parts.append(f"PBO {picture.pbo:.2f}")
    if picture.dsr is not None:
        parts.append(f"DSR {picture.dsr:.2f}")
    if done and all(t.flat for t in picture.trials if t.objective is not None):
        parts.append("every complete trial's policy stayed flat")
    return "; ".join(parts)


def trials_figure(picture: TrialsPicture):
    """The trials' objectives with intervals above, their folds' Sharpe below; the title from `trials_title`."""
    from matplotlib.ticker import MaxNLocator

    fig = agg_figure(figsize=(12, 7))
    ax_o, ax_f = fig.subplots(2, 1, height_ratios=(3, 2), sharex=True)
    _draw_objectives(ax_o, picture)
    _draw_fold_sharpes(ax_f, picture)
    ax_f.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(trials_title(picture))
    fig.tight_layout()
    return fig


def render_trials_png(out_uri: str) -> bytes:
    """PNG bytes of a search's trials (`trials_figure` of `read_trials_picture`)."""
    return png_bytes(trials_figure(read_trials_picture(out_uri)))
