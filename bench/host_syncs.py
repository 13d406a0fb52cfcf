"""What one call asks of the device, counted on any device: the aten ops it dispatches and its host syncs.

`count(call, device)` runs `call()` once and counts every aten op dispatched (a `TorchDispatchMode`; views
too: each costs the host a dispatch, on CUDA the others launch kernels) and every host sync, by kind and by
the line of foxhunt that asked for it:

* "read a value": `.item()`, `float()`, `int()`, `bool()` of a device tensor;
* "copy to host": `.cpu()`, `.tolist()`, `.numpy()` of one;
* "copy to device": a host tensor or array sent to the device (`.to(device)`, `torch.as_tensor(..,
  device=)`, a module's `.to(device)`): a blocking copy from the host waits for the device's stream
  (torch's `memcpy_and_sync`), a non-blocking one is counted apart as "copy to device, async";
* an op the host must wait for (its output's shape, or a check): `nonzero`, `masked_select`, a
  boolean-mask index, `torch.equal`, the error check of `torch.linalg.solve`, `unique`.

Transfers are seen where torch's Python API is called (a `TorchFunctionMode`). On the CPU, which stands in
for the device, a tensor counts as the host's when it was made there: by `torch.from_numpy`, a factory
given no device, `.cpu()` (which then returns a marked alias), or ops of host tensors only; every other
tensor is the device's, as on a GPU run. The MLP baselines' optimiser steps (inside
`mlp_steps.fit_segments`' segments) are counted apart: on CUDA they replay captured graphs (one replay a
segment), on the CPU they run eagerly (~50 ops a step), so only the rest compares across devices.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_flatten

PACKAGE = str(Path(__file__).resolve().parents[1] / "trainer_image" / "foxhunt")
WAITING_OPS = {"nonzero", "masked_select", "equal", "_linalg_check_errors", "_unique2", "unique_dim",
               "unique_consecutive"}  # fmt: skip
READS = {"item", "__float__", "__int__", "__bool__", "__index__"}
COPIES_TO_HOST = {"cpu", "tolist", "numpy", "__array__"}
SENDS = {"to", "cuda", "as_tensor", "tensor"}  # a host tensor or array to the device, when given one
HOST_MARK = "_host_syncs_host"  # on the CPU standing in for the device: a tensor the host made


@dataclass
class Tally:
    """Ops and syncs of one bucket: the call's own, or the MLP's optimiser segments."""

    ops: Counter = field(default_factory=Counter)  # aten op name → dispatches
    views: int = 0
    syncs: Counter = field(default_factory=Counter)  # kind → count
    sites: Counter = field(default_factory=Counter)  # "module.py:line function" → syncs
    async_copies: int = 0

    def summary(self, top: int = 12) -> dict:
        """JSON: totals, syncs by kind and by site, the most dispatched ops."""
        return {"ops": sum(self.ops.values()), "view_ops": self.views, "host_syncs": sum(self.syncs.values()),
                "syncs_by_kind": dict(self.syncs), "sync_sites": dict(self.sites.most_common()),
                "async_copies_to_device": self.async_copies, "top_ops": dict(self.ops.most_common(top))}  # fmt: skip


def _site() -> str:
    """The innermost line of the foxhunt package on the stack (where the sync was asked for)."""
    frame = sys._getframe(2)
    while frame is not None and not frame.f_code.co_filename.startswith(PACKAGE):
        frame = frame.f_back
    if frame is None:
        return "outside foxhunt"
    return f"{Path(frame.f_code.co_filename).relative_to(PACKAGE)}:{frame.f_lineno} {frame.f_code.co_name}"


class Recorder:
    """The tallies, and which tensors are the host's."""

    def __init__(self, simulated: bool) -> None:
        self.own, self.segments = Tally(), Tally()
        self.in_segment = False
        self.simulated = simulated  # the CPU stands in for the device

    @property
    def tally(self) -> Tally:
        return self.segments if self.in_segment else self.own

    def sync(self, kind: str) -> None:
        self.tally.syncs[kind] += 1
        self.tally.sites[_site()] += 1

    def on_host(self, value) -> bool:
        if not isinstance(value, torch.Tensor):
            return True
        if self.simulated:
            return getattr(value, HOST_MARK, False)
        return value.device.type == "cpu"

    def mark(self, value, host: bool) -> None:
        if self.simulated and isinstance(value, torch.Tensor):
            setattr(value, HOST_MARK, host)


class Ops(TorchDispatchMode):
    """Counts each aten op into the current bucket, and each op the host must wait for as a sync."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        tally = self.recorder.tally
        tally.ops[name] += 1
        tally.views += bool(func.is_view)
        first = args[0] if args else None
        waits = name in WAITING_OPS or (
            name == "index"
            and any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] or ())
        )
        if waits and not self.recorder.on_host(first):
            self.recorder.sync("boolean-mask index" if name == "index" else name)
        return func(*args, **(kwargs or {}))


def _target(name: str, args, kwargs) -> torch.device | None:
    """The device a `SENDS` call sends to, or None (a `.to` of dtype only, a factory given no device)."""
    given = kwargs.get("device")
    if name == "to" and given is None:
        given = next((a for a in args[1:] if isinstance(a, torch.device | str)), None)
        other = next((a for a in args[1:] if isinstance(a, torch.Tensor)), None)
        given = other.device if given is None and other is not None else given
    if name == "cuda":
        given = given or "cuda"
    return None if given is None else torch.device(given)


class Transfers(TorchFunctionMode):
    """Counts reads and copies between host and device where torch's Python API is called; on the CPU standing
    in for the device, marks which tensors the host made."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        rec = self.recorder
        source_host = all(rec.on_host(t) for t in tensors)
        target = _target(name, args, kwargs) if name in SENDS else None
        download = name in COPIES_TO_HOST or (
            target is not None and target.type == "cpu" and not rec.simulated
        )
        if tensors and not rec.on_host(tensors[0]) and (name in READS or download):
            rec.sync("read a value" if name in READS else "copy to host")
        elif target is not None and not download and source_host and (name != "to" or tensors):
            if kwargs.get("non_blocking") or (name == "to" and len(args) > 2 and args[-1] is True):
                rec.tally.async_copies += 1
            else:
                rec.sync("copy to device")
        out = func(*args, **kwargs)
        if rec.simulated:
            # Made from host tensors only, or by a factory given no device: the host's.
            made_here = source_host if tensors else kwargs.get("device") is None
            self._mark(name, out, tensors, download or (target is None and made_here))
        return out

    def _mark(self, name: str, out, tensors: list, host: bool) -> None:
        if name.endswith("_") and tensors and out is tensors[0]:
            return  # in place: the tensor stays where it was
        if name == "cpu" and isinstance(out, torch.Tensor):
            return  # `marked_cpu` gives a marked alias (the CPU's `.cpu()` returns the tensor itself)
        for t in tree_flatten(out)[0]:
            self.recorder.mark(t, host)


@contextlib.contextmanager
def _simulated_host(rec: Recorder) -> Iterator[None]:
    """On the CPU standing in for the device: `.cpu()` gives a marked alias (not the tensor itself),
    `torch.from_numpy` and `nn.Parameter` carry the host's mark, and `records.host_arrays` stacks CPU
    tensors as it stacks a GPU's (`records.STACK_ON_CPU`)."""
    from foxhunt.evaluate import records

    cpu, from_numpy, stack_on_cpu = torch.Tensor.cpu, torch.from_numpy, records.STACK_ON_CPU
    new_parameter = torch.nn.Parameter.__dict__["__new__"]  # a staticmethod: restored as it was

    def marked_cpu(self, *args, **kwargs):
        out = cpu(self, *args, **kwargs)
        if rec.on_host(self):
            return out
        with _disable_current_modes():
            alias = out.view_as(out)
        rec.mark(alias, True)
        return alias

    def marked_from_numpy(array):
        out = from_numpy(array)
        rec.mark(out, True)
        return out

    def marked_parameter(cls, data=None, requires_grad=True):
        out = new_parameter.__func__(cls, data, requires_grad)
        rec.mark(out, data is None or rec.on_host(data))
        return out

    marked_cpu.__name__ = "cpu"  # what `Transfers` sees called
    torch.Tensor.cpu, torch.from_numpy = marked_cpu, marked_from_numpy
    torch.nn.Parameter.__new__ = staticmethod(marked_parameter)  # type: ignore[assignment]
    records.STACK_ON_CPU = True
    try:
        yield
    finally:
        torch.Tensor.cpu, torch.from_numpy = cpu, from_numpy
        torch.nn.Parameter.__new__ = new_parameter
        records.STACK_ON_CPU = stack_on_cpu


@contextlib.contextmanager
def _segments_apart(rec: Recorder) -> Iterator[None]:
    """Count what runs inside the MLP fit's optimiser segments into `rec.segments`."""
    from foxhunt.evaluate import mlp_steps

    fit_segments = mlp_steps.fit_segments

    def counted(*args, **kwargs):
        inner = fit_segments(*args, **kwargs)

        def walk():
            while True:
                rec.in_segment = True
                try:
                    next(inner)
                except StopIteration:
                    return
                finally:
                    rec.in_segment = False
                yield

        return walk()

    mlp_steps.fit_segments = counted
    try:
        yield
    finally:
        mlp_steps.fit_segments = fit_segments


def count(call: Callable[[], object], device: torch.device) -> dict:
    """`call()` once on `device`, its ops and host syncs counted (`Tally.summary`), the MLP's segments apart."""
    rec = Recorder(simulated=device.type == "cpu")
    simulated = _simulated_host(rec) if rec.simulated else contextlib.nullcontext()
    with _segments_apart(rec), simulated, Transfers(rec), Ops(rec):
        call()
    return {**rec.own.summary(), "mlp_segments": rec.segments.summary(top=0)}


def count_each(
    calls: Mapping[str, Callable[[], object]], device: torch.device, before: Callable[[], None]
) -> dict:
    """Each call's `count` by name, each call made once uncounted first (warm) and `before()` before it."""
    out = {}
    for name, call in calls.items():
        call()
        before()
        out[name] = count(call, device)
        print(f"{name}: {out[name]['ops']} ops, {out[name]['host_syncs']} host syncs", flush=True)
    return out
