"""The CPU's numeric mode, pinned in the environment before torch loads, so that a CPU run repeats bit for bit.

MKL (torch's BLAS on x86-64) picks its matrix-product kernels per call: without its Conditional Numerical
Reproducibility a product's rounding depends on where its operands lie in memory (the Q-network's 3-wide
last layer takes 4 values over its input's offset modulo 16 bytes on an AVX-512 EPYC) and, by MKL's own
documentation, on how many threads split it. `MKL_CBWR=AVX2,STRICT` holds MKL to its AVX2 code branch in
strict mode: the same bits whatever the alignment, the thread count, or the x86-64 CPU (one with AVX2).
MKL reads the variable once, at its first call, so the CLI sets it before anything imports torch
(`pin_cpu_numerics`), and every process it starts inherits it; a value the user set is kept. The
reductions that torch splits across threads are fixed in `foxhunt.train.reductions`. Light: imports
nothing heavy.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

# What a CPU run pins unless the environment already says otherwise (README, "Reproducibility").
CPU_NUMERICS: dict[str, str] = {"MKL_CBWR": "AVX2,STRICT"}


def pin_cpu_numerics(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each variable of CPU_NUMERICS that `environ` (default: os.environ) lacks; the ones it set."""
    env = os.environ if environ is None else environ
    added = {name: value for name, value in CPU_NUMERICS.items() if name not in env}
    env.update(added)
    return added
