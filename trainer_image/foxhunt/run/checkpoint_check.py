"""A resumed fold's checkpoint, test-loaded before the fold counts as done.

A checksum in the manifest only says the file is the one the manifest names, and whoever can write
`--out` can update both. So `weights.pt` must also load as what a run saves: tensors only
(`torch.load(weights_only=True)`, which runs no pickled code), exactly the state of the run's
Q-network shape, every value finite. A fold whose checkpoint fails is trained again.
"""

from __future__ import annotations

import io
import warnings

from foxhunt import out_names, storage
from foxhunt.data.features import FEATURE_NAMES
from foxhunt.run.manifest import FoldRecord

WEIGHTS = out_names.WEIGHTS


def checkpoint_problem(data: bytes, hidden: int) -> str | None:
    """What keeps `data` from being a fold's weights for a `hidden`-unit Q-network, or None."""
    import torch

    from foxhunt.train.networks import build_qnet

    try:
        with warnings.catch_warnings():  # a foreign pickle's protocol warning: the refusal below says it all
            warnings.simplefilter("ignore", UserWarning)
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # any unpickling refusal or damage: not a checkpoint this run wrote
        return f"does not load as tensors ({type(exc).__name__})"
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        return "holds something other than named tensors"
    try:
        build_qnet(len(FEATURE_NAMES), hidden).load_state_dict(state, strict=True)
    except (RuntimeError, KeyError, TypeError) as exc:
        return f"is not the state of this run's {hidden}-unit Q-network ({str(exc).splitlines()[0][:120]})"
    if not all(bool(torch.isfinite(v).all()) for v in state.values()):
        return "holds values that are not finite"
    return None


def fold_checkpoint_problem(out_uri: str, record: FoldRecord, hidden: int) -> str | None:
    """The problem of a completed fold's `weights.pt` (named in `record`), or None when it loads."""
    names = [name for name in record.outputs if name.rsplit("/", 1)[-1] == WEIGHTS]
    if not names:
        return f"lists no {WEIGHTS}"
    for name in names:
        problem = checkpoint_problem(storage.read_bytes(storage.join(out_uri, name)), hidden)
        if problem:
            return f"{name} {problem}"
    return None
