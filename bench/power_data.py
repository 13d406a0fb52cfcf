"""The power benchmark's data sets and variants, shared by bench/power.py and bench/power_universe.py.

A data set is `drift-M` (M × the sample's planted drift), `signal-off` (the sample without it) or
`random-walk` (Gaussian minute returns of the sample's volatility on its calendar); `planted_settings`
gives `generate_sample_bars`'s (and `generate_universe`'s) settings of each. A variant is `NAME=FLAGS`:
extra `foxhunt train` flags, where `dqn.KEY=VALUE` sets one DQN setting through `--hyperopt-params`.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path

NOISE = ("signal-off", "random-walk")

DQN_SETTING = re.compile(r"^dqn\.(\w+)=(.+)$")


def drift_name(multiple: float) -> str:
    """The data set of a planted drift: 0.5 → 'drift-0.5'."""
    return f"drift-{multiple:g}"


def drift_of(data: str) -> float | None:
    """The drift multiple of a data set's name, None for noise."""
    return float(data.removeprefix("drift-")) if data.startswith("drift-") else None


def random_walk_sigma() -> float:
    """The sample's per-bar volatility without its drift: noise plus a news jump every 1/rate bars."""
    from foxhunt.data import sample as sd

    return sd.SAMPLE_SIGMA * (1.0 + sd.SAMPLE_NEWS_RATE * sd.NEWS_JUMP_SIGMAS**2) ** 0.5


def planted_settings(data: str) -> dict:
    """`generate_sample_bars`'s settings of one data set (`drift-M`, `signal-off`, `random-walk`)."""
    from foxhunt.data.sample import SAMPLE_NEWS_DRIFT

    if data == "signal-off":
        return {"signal": False}
    if data == "random-walk":  # exactly sigma · N(0, 1) log returns: no news, no drift, no autocorrelation
        return {"news_rate": 0.0, "news_drift": 0.0, "ar_coef": 0.0, "sigma": random_walk_sigma()}
    multiple = drift_of(data)
    if multiple is None:
        raise ValueError(f"unknown data set {data!r}")
    return {"news_drift": multiple * SAMPLE_NEWS_DRIFT}


def generate(data: str, bars: int, seed: int):
    """The bars of one data set (`drift-M`, `signal-off`, `random-walk`)."""
    from foxhunt.data.bars import generate_sample_bars

    return generate_sample_bars(bars, seed, **planted_settings(data))


def setting_value(text: str):
    """A `dqn.KEY=VALUE` value: JSON (numbers, true, "quoted"), else the bare word as a string (pooled)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_variant(spec: str) -> tuple[str, list[str], dict]:
    """'NAME=FLAGS' → (name, `foxhunt train` flags, DQN settings from `dqn.KEY=VALUE` tokens). Commas separate
    tokens as spaces do, so a variant survives the word splitting of gpu_run.sh's POWER_ARGS."""
    name, _, flags = spec.partition("=")
    tokens, dqn = [], {}
    for token in shlex.split(flags.replace(",", " ")):
        setting = DQN_SETTING.match(token)
        if setting:
            dqn[setting.group(1)] = setting_value(setting.group(2))
        else:
            tokens.append(token)
    return name, tokens, dqn


def variant_flags(work: Path, spec: str) -> tuple[str, list[str], dict]:
    """A variant's (name, `foxhunt train` flags, DQN settings), its settings written to a params file in
    `work` that the flags pass with `--hyperopt-params`."""
    variant, extra, dqn = parse_variant(spec)
    if dqn:
        (work / f"params-{variant}.json").write_text(json.dumps({"dqn": dqn}))
        extra = [*extra, "--hyperopt-params", str(work / f"params-{variant}.json")]
    return variant, extra, dqn


def data_sets(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(data set, generator seed, training seeds) of the selection: the drifts, then the noise."""
    chosen = [(drift_name(m), args.generator_seed, args.seeds) for m in args.drifts]
    return chosen + [(n, g, args.noise_seeds) for n in args.noise for g in args.noise_generator_seeds]


def run_tag(name: str, first_seed: int) -> str:
    """A run's folder name in `--work`: another `--first-seed` is another run (with `--resume`, one call's
    seeds 3–5 must not read the folder seeds 0–2 left)."""
    return name if first_seed == 0 else f"{name}-from-seed-{first_seed}"


def fmt(value: float | None, percent: bool = False) -> str:
    """A table cell: a Sharpe to two places, a share as a percentage, "—" for none."""
    if value is None:
        return "—"
    return f"{value:.0%}" if percent else f"{value:.2f}"


def votes_cell(holder: dict) -> str:
    """The seeds' votes of a row (or a universe row's book): its pooled calls' `votes`, else its one
    `majority`, each as net Sharpe (share of the oracle); "—" for none."""
    votes = holder.get("votes") or ([holder["majority"]] if holder.get("majority") else [])
    return ", ".join(f"{fmt(v['sharpe'])} ({fmt(v['share_of_oracle'], True)})" for v in votes) or "—"
