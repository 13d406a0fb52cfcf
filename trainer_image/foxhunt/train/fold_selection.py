"""What the tail selection chose for one member's fold (`FoldSelection`), one typed record from the trainer
to the files: made at the fold's end (`selection.TailSelection.choose`, `member_policy.MemberPolicies.
choose_pooled`), held by the fold's report (`evaluate.reports.FoldReport.selection`), written as
report.json's `selection` (`to_dict`) and read back (`from_dict`). Imports no torch, so reading a report
needs none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from foxhunt.train.evidence import (
    PooledDecision,
    WindowEvidence,
    decision_dict,
    decision_from_dict,
    evidence_dict,
    evidence_from_dict,
    number,
)

# report.json's names of the fields it spells otherwise (its keys since the tail selection shipped).
SELECTION_KEYS = {"epoch": "selected_epoch", "flat": "went_flat", "gate": "gate_sharpe"}


@dataclass(frozen=True)
class FoldSelection:
    """What the tail selection chose for one member's fold (fields in report.json's order)."""

    epoch: int | None  # the epoch whose weights were kept (None: no epoch was scored)
    tail_sharpe: float  # that epoch's net Sharpe on the tail (−inf when none was scored)
    flat: bool  # the fold's policy is flat: the best tail Sharpe did not clear the gate
    tail_sharpes: tuple[float, ...] = ()  # every scored epoch's tail Sharpe, in order
    gate: float = 0.0  # the tail Sharpe it had to exceed to trade (tail_gate), pooled: the pooled gate
    # select_pool pooled: the decision, and what the chosen policy earned on the fold's validation window
    # before any flattening (evidence for LATER folds only; no decision of this fold reads it).
    pooled: PooledDecision | None = None
    out_of_sample: WindowEvidence | None = None

    def to_dict(self) -> dict:
        """The `selection` entry of a fold's report.json: the fields under SELECTION_KEYS' names, the pooled
        decision and the out-of-sample window only where there are."""
        record = {SELECTION_KEYS.get(f.name, f.name): getattr(self, f.name) for f in fields(self)}
        record["tail_sharpes"] = list(self.tail_sharpes)
        record.pop("pooled"), record.pop("out_of_sample")
        if self.pooled is not None:
            record["pooled"] = decision_dict(self.pooled)
        if self.out_of_sample is not None:
            record["out_of_sample"] = evidence_dict(self.out_of_sample)
        return record

    @classmethod
    def from_dict(cls, record: Mapping) -> FoldSelection:
        """Read what `to_dict` wrote (an undefined figure, null in the file, as NaN)."""
        epoch = record.get("selected_epoch")
        return cls(
            epoch=None if epoch is None else int(epoch),
            tail_sharpe=number(record["tail_sharpe"]),
            flat=bool(record["went_flat"]),
            tail_sharpes=tuple(number(v) for v in record.get("tail_sharpes", ())),
            gate=number(record["gate_sharpe"]),
            pooled=decision_from_dict(record.get("pooled")),
            out_of_sample=evidence_from_dict(record.get("out_of_sample")),
        )


def out_of_sample_windows(selections: Iterable[FoldSelection | None]) -> list[WindowEvidence]:
    """The out-of-sample windows that folds' selections recorded, in the order given: what a later pooled
    decision weighs (a fold without a selection, or a selection without a window, adds none)."""
    found = (s.out_of_sample for s in selections if s is not None)
    return [w for w in found if w is not None]
