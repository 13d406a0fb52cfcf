"""The stitched out-of-sample record in words: the model's figures after costs, where it stands against
each baseline and the feature oracle, and the verdict line (the console's, the held-out fold's); under a
run that never traded, its cost against the bars' noise."""

from __future__ import annotations

from collections.abc import Sequence

from foxhunt.data.folds import FoldRange
from foxhunt.evaluate.evaluation import BUY_AND_HOLD, MODEL, WindowEvaluation
from foxhunt.evaluate.supervised import oracle_record


def stitched_report(
    stitched: WindowEvaluation, folds: int, level: float = 0.95, flat: str | None = None
) -> list[str]:
    """The stitched record in words: the model's figures after costs, then where it stands against each baseline.

    `flat`: the words of a run whose model held no position in any fold (`reports.flat_run_reading`), said
    instead of its Sharpe, PSR and hit rate, which are the figures of a record with no trade (0), not readings.
    """
    from foxhunt.data.bars import iso_utc

    net, gross = stitched.policies[MODEL].net, stitched.policies[MODEL].gross
    lines = [
        f"stitched out-of-sample record: {iso_utc(stitched.start_ns)[:16]} → {iso_utc(stitched.end_ns)[:16]}, "
        f"{stitched.n_bars:,} bars from {folds} fold(s)",
    ]
    if flat is not None:
        lines.append(
            f"  model: {flat}; it held no position, so it has no Sharpe, PSR or hit rate to read "
            f"(return {net.total_return:+.2%})"
        )
    else:
        lines += [
            f"  model after costs: Sharpe {net.sharpe:.2f} ± {net.sharpe_se:.2f} (HAC ± {net.sharpe_se_hac:.2f}; "
            f"{level:.0%} bootstrap [{net.sharpe_ci_low:.2f}, {net.sharpe_ci_high:.2f}]), "
            f"PSR(>0) {net.psr_zero:.2f}, PSR(>buy-and-hold) {net.psr_benchmark:.2f}",
            f"  return {net.total_return:+.2%} ({net.annual_return:+.2%} a year), max drawdown "
            f"{net.max_drawdown:.2%}, turnover {net.turnover_per_year:,.0f} a year, exposure {net.exposure:.0%}, "
            f"hit rate {net.hit_rate:.1%}; before costs: Sharpe {gross.sharpe:.2f}, "
            f"return {gross.total_return:+.2%}",
        ]
    oracle = oracle_record({name: ev.net.sharpe for name, ev in stitched.policies.items()})
    if oracle is not None:
        best = oracle["net_sharpe"]
        share = f"; the model earns {net.sharpe / best:.0%} of it" if best > 0 else ""
        lines.append(
            f"  feature oracle ({oracle['label']}: {oracle['name']}): Sharpe {best:.2f} after costs{share}"
        )
    for name, standing in stitched.standings.items():
        best = " (best baseline)" if name == stitched.best_baseline else ""
        lines.append(
            f"  vs {name}{best}: its Sharpe {standing.baseline_sharpe:.2f}, model − it "
            f"{standing.difference:+.2f} (paired {level:.0%} interval [{standing.difference_ci_low:+.2f}, "
            f"{standing.difference_ci_high:+.2f}], p {standing.p_value:.2f}): {standing.verdict}"
        )
    hold = stitched.standings.get(BUY_AND_HOLD)
    if hold is not None:
        lines.append(
            f"  against buy-and-hold: alpha {hold.alpha:+.2%} a year (log), beta {hold.beta:.2f}, "
            f"information ratio {hold.information_ratio:.2f}"
        )
    lines.append(f"  verdict: {verdict_line(stitched)}")
    return lines


def verdict_line(stitched: WindowEvaluation) -> str:
    """The stitched record's verdict in one line: the model's net Sharpe against the best baseline's, by
    the paired test."""
    best = stitched.best_baseline
    standing = stitched.standings[best]
    return (
        f"model net Sharpe {standing.model_sharpe:.2f} vs best baseline {best} {standing.baseline_sharpe:.2f}: "
        f"{standing.verdict} (paired interval of the difference [{standing.difference_ci_low:+.2f}, "
        f"{standing.difference_ci_high:+.2f}])"
    )


def one_bar_noise(targets, folds: Sequence[FoldRange]) -> float:
    """The standard deviation of the one-bar forward log return over the folds' validation rows (the
    targets' first column, on the host or the device)."""
    import torch

    rows = torch.cat([torch.as_tensor(targets[f.val_start : f.val_end, 0]) for f in folds]).double()
    return float(rows.std(correction=0)) if rows.numel() > 1 else 0.0


def cost_noise_line(cost_per_unit: float, noise: float) -> str:
    """What a change of position costs against the bars' one-bar noise: said under a run that never traded,
    since at a cost near a bar's move (spot FX minute bars at 1 bp) no edge of a modest size pays for it."""
    ratio = f"{cost_per_unit / noise:.2f}×" if noise > 0 else "no noise to compare"
    return (
        f"  cost: {cost_per_unit * 1e4:.2f} bp a unit of position change, {ratio} the validation bars' one-bar "
        f"noise ({noise * 1e4:.2f} bp, their standard deviation); a lower real cost: --eval-cost and the "
        "reward's dqn.cost (docs/settings.md)"
    )
