"""The members' greedy policies: score one (validation, the training tail, the per-epoch diagnostics),
choose the fold's (tail selection, abstention), hand its weights out.

`MemberPolicies` is built by `DQNTrainer` (dqn.py) and reached as `trainer.policies`; it is handed what it
reads at build. The trainer refills those in place and never replaces them: the fold window per fold, the
settings list in `apply_settings`, the tail selection per fold, the networks (views of the stacked
weights) every step. The learning (collection, the step, epochs) stays in dqn.py; nothing here runs
inside the captured step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

import torch
from torch import nn

from foxhunt.config import DQNConfig, trading_cost
from foxhunt.data.pnl import ExecutionRows
from foxhunt.train.device_data import DeviceData, FoldWindow, chunk_rows
from foxhunt.train.diagnostics import (
    FoldHistory,
    epoch_policy_tensor,
    epoch_reads,
    epoch_vector_size,
    greedy_diagnostics,
    keep_diagnostics,
)
from foxhunt.train.epoch_graph import ReplayedFigures
from foxhunt.train.evidence import WindowEvidence, evidence_bars, pooled_decision
from foxhunt.train.fold_selection import FoldSelection
from foxhunt.train.policy import (
    ValidationFigures,
    greedy_maps,
    greedy_rollout,
    held_sharpe,
    periods_per_year,
    score_positions,
)
from foxhunt.train.selection import (
    TailSelection,
    abstain_,
    abstain_margin,
    choose_policies,
    make_flat_,
    score_as_kept,
    tail_gate,
)


class MemberPolicies:
    """Each member's greedy policy: scored, chosen at a fold's end, saved.

    `networks[i]` and `configs[i]` are member i's network and settings, `window` the fold worked on,
    `selection` the best tail epochs seen; `eval_cost` and `eval_spread` (fixed) set the cost that scores
    every policy (`eval_cost=None`: each member's training cost); `execution` (fixed: the evaluation's
    execution rows over the whole data, on the device) is the rest of the evaluation's execution model,
    with which the tail selection scores (the validation diagnostics keep the flat cost).
    """

    def __init__(
        self,
        *,
        networks: Sequence[nn.Sequential],
        configs: list[DQNConfig],
        window: FoldWindow,
        data: DeviceData,
        selection: TailSelection,
        eval_cost: float | None,
        eval_spread: float,
        execution: ExecutionRows | None = None,
    ):
        if len(networks) != len(configs):
            raise ValueError(f"{len(networks)} networks for {len(configs)} members' settings")
        self.networks, self.configs, self.window, self.data = list(networks), configs, window, data
        self.selection, self.eval_cost, self.eval_spread = selection, eval_cost, eval_spread
        self.execution = execution
        # Per (member, instrument), its chosen policy's validation positions where choosing already rolled
        # them out (`choose_pooled`): the fold's record takes them (`validation_positions`) instead of a
        # second rollout.
        self.chosen_positions: dict[tuple[int, int], torch.Tensor] = {}
        # The share of a fold's bars that counts as evidence (evidence.effective_share of the instruments
        # taking part; 1 for one instrument): set per fold by the universe's walk.
        self.evidence_share = 1.0
        self.replayed = ReplayedFigures(data.features.device)  # the epoch figures' CUDA graph, per fold

    @property
    def size(self) -> int:
        """Members in the population."""
        return len(self.networks)

    @property
    def selecting(self) -> bool:
        """Model selection on the training slice's held-back tail is on (a setting every member shares)."""
        return self.configs[0].select_tail_share > 0.0

    def epoch_figures(self, epoch: int, histories: dict[int, FoldHistory | None]) -> dict[int, dict]:
        """After epoch `epoch`, what each member of `histories` shows by its greedy policy, keyed as
        EpochFigures' fields: the diagnostics where its history is given (appended to it, with the
        members' shared seconds), the tail score when selecting (observed by the selection); nothing at
        all when neither is due. The same figures as `epoch_diagnostics` and `tail_score` (a fold of
        several instruments: `pooled_tail_score`), from one rollout scan per member and ONE host transfer
        for all members and instruments (diagnostics.epoch_policy_tensor)."""
        due = [i for i, history in histories.items() if history is not None or self.selecting]
        if not due:
            return {i: {} for i in histories}
        started = time.perf_counter()
        flags = [histories[i] is not None for i in due]
        reads = self.read_figures(due, flags, self.figures_vector(due, flags).tolist())  # the one transfer
        seconds = time.perf_counter() - started
        for i, read in reads.items():
            history = histories[i]
            if history is not None:
                keep_diagnostics(history, read, seconds)
            if self.selecting:
                self.selection.observe(i, epoch, read["tail_sharpe"], self.networks[i])
        return {i: reads.get(i, {}) for i in histories}

    def read_figures(
        self, due: Sequence[int], diagnose: Sequence[bool], values: list[float]
    ) -> dict[int, dict]:
        """`figures_vector(due, diagnose)`'s values, read on the host, per member keyed as EpochFigures'
        fields: each instrument's tail Sharpe pooled bar-weighted into `tail_sharpe` (one: its own exactly)."""
        tails = len(self.window.parts) if self.selecting else 0
        bars = [p.fold_range.train_end - p.learn_end for p in self.window.parts]
        reads, at = {}, 0
        for i, flag in zip(due, diagnose, strict=True):
            size = epoch_vector_size(diagnose=flag, tails=tails)
            reads[i] = epoch_reads(values[at : at + size], diagnose=flag, tails=tails)
            if tails:
                reads[i]["tail_sharpe"] = pool_by_bars(
                    list(zip(bars, reads[i].pop("tail_sharpes"), strict=True))
                )
            at += size
        return reads

    def pooled_tail_score(self, member: int) -> float:
        """Member `member`'s tail score over every instrument of the fold: each one's `tail_score` (its own
        tail, norm stats and execution rows), pooled bar-weighted (as evidence.pooled_decision pools
        windows). The per-call specification of `epoch_figures`' tail score in a fold of several."""
        window, first = self.window, self.window.focused
        pairs = []
        try:
            for part in window.parts:
                window.focus(part.instrument)
                pairs.append((part.fold_range.train_end - part.learn_end, self.tail_score(member)))
        finally:
            window.focused = first
        return pool_by_bars(pairs)

    def figures_vector(
        self, due: Sequence[int], diagnose: Sequence[bool], *, graphed: bool = True
    ) -> torch.Tensor:
        """The epoch figures of members `due` (with the diagnostics where `diagnose` says) end to end on the
        device, every instrument's tail of the fold in the one computation; on a GPU replayed from one CUDA
        graph per fold and setting (epoch_graph: a fold needs one key per `diagnose`, whatever its
        instruments), unless not `graphed`."""

        def compute() -> torch.Tensor:
            return torch.cat([self._epoch_tensor(i, diagnose=d) for i, d in zip(due, diagnose, strict=True)])

        if not graphed:
            return compute()
        window, fold = self.window, fold_key(self.window)
        key = (
            fold,
            window.focused,
            tuple(due),
            tuple(diagnose),
            tuple((self.evaluation_cost(member=i), self.abstain_margin(i)) for i in due),
            self.selecting,
            # Every tensor the graph reads, by address and shape: a network rebuilt for another trial's
            # shape is a new key even where the allocator hands it a freed address.
            tuple((t.data_ptr(), tuple(t.shape)) for i in due for t in self.networks[i].parameters()),
            tuple(t.data_ptr() for t in (window.means, window.stds, self.data.features, self.data.targets)),
            execution_addresses(self.execution),
        )
        return self.replayed.run(key, compute, fold=fold)

    def _epoch_tensor(self, member: int, *, diagnose: bool) -> torch.Tensor:
        """Member `member`'s epoch figures on the device: the focused instrument's diagnostics, and every
        instrument's tail by its greedy maps as the fold keeps them (its own norm stats), in part order."""
        net, window, features = self.networks[member], self.window, self.data.features
        tails: list[tuple[int, torch.Tensor]] = []
        if self.selecting:
            parts = window.parts

            def tail_maps() -> list[torch.Tensor]:
                chunk = chunk_rows(features.device)
                return [
                    greedy_maps(
                        net,
                        features[p.learn_end : p.fold_range.train_end],
                        window.means[p.instrument],
                        window.stds[p.instrument],
                        chunk,
                    )
                    for p in parts
                ]

            maps = score_as_kept(net, self.abstain_margin(member), tail_maps)
            tails = [(p.learn_end, m) for p, m in zip(parts, maps, strict=True)]
        cost = self.evaluation_cost(member=member)
        return epoch_policy_tensor(
            net,
            self.data,
            window.mean,
            window.std,
            window.fold,
            cost,
            diagnose=diagnose,
            tails=tails,
            execution=self.execution,
        )

    def tail_score(self, member: int) -> float:
        """Member `member`'s greedy policy now, as the fold would keep it, scored on the held-back tail of
        the training slice: net Sharpe under the evaluation's costs and execution model (`policy.held_sharpe`),
        entered from flat (outside the step). The per-call specification of `epoch_figures`' tail score."""
        start, end = self.window.learn_end, self.window.fold.train_end

        def tail_sharpe() -> float:
            positions = self.greedy_positions(start, end, member=member)
            cost = self.evaluation_cost(member=member)
            return float(held_sharpe(self.data, positions, start, cost, self.execution))

        return score_as_kept(self.networks[member], self.abstain_margin(member), tail_sharpe)

    def abstain_margin(self, member: int = 0) -> float:
        """Member `member`'s abstention margin (selection.abstain_margin) at its evaluation cost."""
        return abstain_margin(self.configs[member], self.evaluation_cost(member=member))

    def choose_policies(
        self,
        members: Sequence[int] | None = None,
        earlier: Mapping[int, Sequence[WindowEvidence]] | None = None,
    ) -> dict[int, FoldSelection | None]:
        """At a fold's end, per member: the best tail epoch's weights or flat (select_tail_share), then the
        abstention margin baked in (selection.choose_policies). A member with `select_pool` pooled decides
        on its tail and its `earlier` folds' out-of-sample windows instead (`choose_pooled`)."""
        members = range(self.size) if members is None else members
        self.chosen_positions.clear()
        pooled = [i for i in members if self.selecting and self.configs[i].select_pool == "pooled"]
        alone = [i for i in members if i not in pooled]
        margins = {i: self.abstain_margin(i) for i in alone}
        selection = self.selection if self.selecting else None
        gates = {i: self.tail_gate(i) for i in alone}
        chosen = choose_policies(selection, self.networks, gates, margins, alone)
        for i in pooled:
            chosen[i] = self.choose_pooled(i, (earlier or {}).get(i, ()))
        return chosen

    def choose_pooled(self, member: int, earlier: Sequence[WindowEvidence]) -> FoldSelection:
        """Member `member`'s best tail epoch, abstaining by its margin, scored on the fold's validation window
        (the out-of-sample evidence LATER folds pool), then kept or made flat by the pooled decision on its
        tail and the `earlier` windows (evidence.pooled_decision; no window at or after the validation start)."""
        net, fold, timestamp = self.networks[member], self.window.fold, self.data.timestamp
        best = self.selection.choose(member, net, -math.inf)  # the best epoch's weights, or flat if none
        abstain_(net, self.abstain_margin(member))
        if best.epoch is None:
            return replace(best, gate=math.inf)
        parts = self.window.parts
        tail_bars = self.evidence_bars(sum(p.fold_range.train_end - p.learn_end for p in parts))
        tail_end = max(int(timestamp[p.fold_range.train_end - 1]) for p in parts)
        own = WindowEvidence(fold.fold, "tail", tail_bars, best.tail_sharpe, tail_end)
        shadows = [self.shadow(member, p.instrument) for p in parts]
        shadow = pool_by_bars([(p.fold_range.val_rows, s) for p, (s, _) in zip(parts, shadows, strict=True)])
        val_bars = self.evidence_bars(sum(p.fold_range.val_rows for p in parts))
        val_end = max(int(timestamp[p.fold_range.val_end - 1]) for p in parts)
        oos = WindowEvidence(fold.fold, "out_of_sample", val_bars, shadow, val_end)
        decision = pooled_decision(
            own,
            earlier,
            self.configs[member],
            self.tail_bars_per_year(),
            min(int(timestamp[p.fold_range.val_start]) for p in parts),
        )
        for part, (_, positions) in zip(
            parts, shadows, strict=True
        ):  # the records take these, not a 2nd rollout
            kept = positions if decision.trade else torch.zeros_like(positions)  # flat: make_flat_'s rollout
            self.chosen_positions[(member, part.instrument)] = kept
        if not decision.trade:
            make_flat_(net)
        return replace(best, flat=not decision.trade, gate=decision.gate, pooled=decision, out_of_sample=oos)

    def shadow(self, member: int, instrument: int) -> tuple[float, torch.Tensor]:
        """Member `member`'s policy as chosen, scored on `instrument`'s validation window of the fold: its
        net Sharpe and its positions there."""
        window, first = self.window, self.window.focused
        try:
            window.focus(instrument)
            positions = self.greedy_positions(member=member)
            cost = self.evaluation_cost(member=member)
            sharpe = held_sharpe(self.data, positions, window.fold.val_start, cost, self.execution)
            return float(sharpe), positions
        finally:
            window.focused = first

    def tail_bars_per_year(self) -> float:
        """Bars a year of the held-back tails: one instrument's own, or the bar-weighted mean of each
        instrument's (so a gate of t standard errors of the pooled zero Sharpe is `sharpe_gate`'s)."""
        ts = self.data.timestamp
        per = [
            (p.fold_range.train_end - p.learn_end, periods_per_year(ts[p.learn_end : p.fold_range.train_end]))
            for p in self.window.parts
        ]
        return pool_by_bars(per)

    def tail_gate(self, member: int = 0) -> float:
        """The tail net Sharpe member `member`'s best epoch must exceed to trade (selection.tail_gate), over
        every instrument's tail in a fold of several."""
        bars = self.evidence_bars(sum(p.fold_range.train_end - p.learn_end for p in self.window.parts))
        return tail_gate(self.configs[member], bars, self.tail_bars_per_year())

    def evidence_bars(self, bars: int) -> int:
        """`bars` of the fold's instruments counted as independent evidence (`evidence.evidence_bars`)."""
        return evidence_bars(bars, self.evidence_share)

    def epoch_diagnostics(self, member: int = 0) -> dict[str, torch.Tensor]:
        """Member `member`'s greedy policy now: validation shares and Sharpe, in-sample Sharpe, agreement."""
        net, window = self.networks[member], self.window
        cost = self.evaluation_cost(member=member)
        return greedy_diagnostics(net, self.data, window.mean, window.std, window.fold, cost)

    def evaluation_cost(self, *, member: int = 0) -> float:
        """Cost per unit of position change that scores member `member`: the trainer's evaluation settings
        (its training cost when `eval_cost` is None)."""
        cost = self.configs[member].cost if self.eval_cost is None else self.eval_cost
        return trading_cost(cost, self.eval_spread)

    def greedy_positions(
        self, start: int | None = None, end: int | None = None, *, member: int = 0
    ) -> torch.Tensor:
        """Positions (−1, 0, 1) of member `member`'s exact greedy policy over [start, end) (default: the
        fold's validation), entered from flat."""
        start, end = (
            (self.window.fold.val_start if start is None else start),
            (self.window.fold.val_end if end is None else end),
        )
        return greedy_rollout(
            self.networks[member], self.data.features[start:end], self.window.mean, self.window.std
        )

    def validation_positions(self, member: int = 0) -> torch.Tensor:
        """Member `member`'s fold policy over the focused instrument's validation, as `greedy_positions`: the
        positions its choice rolled out (`choose_pooled`, handed over once), else a rollout now."""
        instrument = self.window.parts[self.window.focused].instrument if self.window.parts else 0
        kept = self.chosen_positions.pop((member, instrument), None)
        return self.greedy_positions(member=member) if kept is None else kept

    def validate(
        self, start: int | None = None, end: int | None = None, *, member: int = 0
    ) -> ValidationFigures:
        """Member `member`'s greedy policy over [start, end) (default: validation), beside buy-and-hold and flat."""
        start = self.window.fold.val_start if start is None else start
        positions = self.greedy_positions(start, end, member=member)
        return score_positions(self.data, positions, start, self.evaluation_cost(member=member))

    def state_dict_cpu(self, member: int = 0) -> dict:
        """Member `member`'s online weights on the CPU, keyed as `build_qnet`'s (`torch.load`-able alone)."""
        return {k: v.detach().cpu().clone() for k, v in self.networks[member].state_dict().items()}


def fold_key(window: FoldWindow) -> tuple:
    """The fold a captured epoch computation reads, besides the window's buffers: every part's instrument,
    ranges and learning end."""
    return tuple(
        (p.instrument, p.fold_range.fold, p.fold_range.train_start, p.fold_range.train_end)
        + (p.fold_range.val_start, p.fold_range.val_end, p.learn_end)
        for p in window.parts
    )


def execution_addresses(execution: ExecutionRows | None) -> tuple[int, ...]:
    """The device addresses of the execution rows a captured tail score reads (none without them)."""
    if execution is None:
        return ()
    return tuple(
        t.data_ptr() for t in (execution.change_cost, execution.carry, execution.gap) if t is not None
    )


def pool_by_bars(pairs: Sequence[tuple[float, float]]) -> float:
    """The bar-weighted mean of (bars, value) pairs; one pair's value exactly (no round trip through bars)."""
    if len(pairs) == 1:
        return pairs[0][1]
    bars = sum(b for b, _ in pairs)
    return sum(b * v for b, v in pairs) / bars if bars > 0 else 0.0
