"""Evaluations already computed, looked up by the record's content (`ScoreMemo`): a search's trials score
the same baselines over the same windows, and a run's stitched evaluation the windows its folds scored."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from foxhunt.evaluate import evaluation
from foxhunt.evaluate.evaluation import Scored, Scoring
from foxhunt.evaluate.metrics import Evaluation
from foxhunt.evaluate.records import Record, record_key

# The net P&L a memo keeps for records scored again: a search's baselines over its folds' windows and its
# stitched record are 8 bytes a bar each (about 85 MB for eight baselines over two years of minute bars).
# A universe run keeps a memo per instrument, so its host memory grows by up to this much an instrument.
REPEAT_PNL_BYTES = 128 * 2**20


class ScoreMemo:
    """Evaluations already computed, by the record's content, for one loaded dataset.

    A search scores the same baselines over the same windows in every trial, and a run's stitched
    evaluation scores again the fold windows its folds scored as they ended: both are looked up
    here. The key is the record's rows, positions and folds (its returns and timestamps follow from
    its rows within one dataset), the scoring, and the benchmark's Sharpe; `score` is a pure
    function of those, so a hit equals what scoring again would give, bit for bit.
    """

    def __init__(self, repeat_pnl_bytes: int = REPEAT_PNL_BYTES) -> None:
        self._scored: dict[tuple, Scored] = {}
        self._pnl_room = repeat_pnl_bytes  # bytes left for the net P&L of records scored again
        self.fold_baselines: dict[tuple, dict] = {}  # baselines' positions by fold window (run_scores)
        self.hits = 0
        self.misses = 0

    def score(self, record: Record, scoring: Scoring, benchmark: Evaluation | None = None) -> Evaluation:
        """`score(record, scoring, benchmark)`, computed once per distinct key."""
        return self.score_record(record, scoring, benchmark).evaluation

    def score_record(self, record: Record, scoring: Scoring, benchmark: Evaluation | None = None) -> Scored:
        """`score_record(record, scoring, benchmark)`, computed once per distinct key."""
        return self.score_records({"": record}, scoring, benchmark)[""]

    def score_records(
        self, records: Mapping[str, Record], scoring: Scoring, benchmark: Evaluation | None = None
    ) -> dict[str, Scored]:
        """`evaluation.score_records(records, scoring, benchmark)`, each distinct key computed once (the new ones
        together)."""
        bench = (
            None
            if benchmark is None
            else (benchmark.gross.sharpe_per_period, benchmark.net.sharpe_per_period)
        )
        keys = {name: (record_key(record), scoring, bench) for name, record in records.items()}
        new: dict[tuple, str] = {}  # a key's first record, where the memo does not hold it yet
        for name, key in keys.items():
            if key not in self._scored and key not in new:
                new[key] = name
        self.misses += len(new)
        self.hits += len(records) - len(new)
        fresh = evaluation.score_records({name: records[name] for name in new.values()}, scoring, benchmark)
        for key, name in new.items():
            scored = fresh[name]
            self._scored[key] = Scored(scored.evaluation, scored.net_draws)  # the draws are kept, not the P&L
        for name, key in keys.items():
            if name not in fresh:
                self._keep_pnl(key, records[name], scoring)
        return {name: fresh.get(name) or self._scored[key] for name, key in keys.items()}

    def _keep_pnl(self, key: tuple, record: Record, scoring: Scoring) -> None:
        """Keep the net P&L of a record scored again (a baseline in every trial's window, a model that stays
        flat), while there is room: the paired tests read it each time, and it is the same bytes each time."""
        held = self._scored[key]
        if held.net_pnl is not None or 8 * len(record) > self._pnl_room:
            return
        pnl = record.pnl(scoring.cost_per_unit, scoring.execution)
        pnl.setflags(write=False)
        self._scored[key] = dataclasses.replace(held, net_pnl=pnl)
        self._pnl_room -= pnl.nbytes
