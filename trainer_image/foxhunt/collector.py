"""Python's cyclic garbage collector in the process of a foxhunt command run from the console.

A run imports torch and its kin: some 200,000 objects (modules, functions, classes) that live as long as
the process, and a CUDA run's compile adds as many. The cyclic collector walks every object it tracks at
each full collection (a few a run, 0.2–0.6 s each on one core) and once more as the interpreter exits
(about a second). `settle()` freezes what is alive (`gc.freeze`): those objects leave the collector's
generations, so later collections walk only what the run makes since, and the exit skips them. Nothing
is freed by freezing and no figure depends on it; what a frozen cycle holds is only released at exit, so
a run freezes once its data is loaded and before its trainer is built (what a trainer holds, device memory
among it, stays collectable), and at the end.

Only the console command's own process freezes: `own_process()` (the CLI's `main` called with no argument
list, as the console script and `python -m foxhunt` call it) marks it. A test or a library caller of the
run keeps its collector as it is, since the objects alive in such a process include others' garbage.
"""

from __future__ import annotations

import gc

_owned = False


def own_process(owned: bool = True) -> None:
    """Mark this process as a console command's own (or, `owned=False`, not)."""
    global _owned
    _owned = owned


def owned() -> bool:
    """Whether this process is a console command's own (`own_process`): what may start helper processes
    that re-import its main module (a library caller's script need not guard against that)."""
    return _owned


def settle() -> bool:
    """Freeze the objects alive now when this process is a console command's own; whether it froze."""
    if _owned:
        gc.freeze()
    return _owned
