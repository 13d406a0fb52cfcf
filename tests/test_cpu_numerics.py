"""The CPU's numeric mode: the CLI pins MKL's reproducible mode before torch loads, keeping a user's value."""

from __future__ import annotations

import os
import subprocess
import sys

from support.reference_figures import DROPPED_NUMERICS, PORTABLE_NUMERICS, portable_env

from foxhunt.config.numerics import CPU_NUMERICS, pin_cpu_numerics

# A fresh interpreter: the CLI's main, then whether torch had loaded by then and what MKL_CBWR says.
_AFTER_MAIN = """
import os, sys
from foxhunt.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
print(os.environ.get("MKL_CBWR"), "torch" in sys.modules)
"""
# The Q-network's last layer, (rows, 256) × (3, 256)ᵀ, with its input at 16 offsets (4-byte steps): the
# number of different results. Unpinned MKL gives 4 on an AVX-512 EPYC (one per offset modulo 16 bytes).
_ALIGNMENT_VARIANTS = """
import torch
torch.manual_seed(0)
rows, weight = torch.randn(1000, 256), torch.randn(3, 256)
results = set()
for offset in range(16):
    buffer = torch.empty(rows.numel() + offset)
    moved = buffer[offset : offset + rows.numel()].view(rows.shape)
    moved.copy_(rows)
    results.add(torch.nn.functional.linear(moved, weight).numpy().tobytes())
print(len(results))
"""
# What a fresh process runs on: ATen's kernels, then each portable variable and each dropped one ("-": unset).
_NUMERICS_SEEN = f"""
import os, torch
names = {[*PORTABLE_NUMERICS, *DROPPED_NUMERICS]!r}
print(torch.backends.cpu.get_cpu_capability(), *(repr(os.environ.get(k, "-")) for k in names), sep="|")
"""
# An outer environment that asks every library for something else: ATen's portable-C kernels, MKL's own
# dispatch and AVX-512, oneDNN's widest ISA, numpy's every loop.
_OTHER_NUMERICS = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "AUTO",
    "ONEDNN_MAX_CPU_ISA": "ALL",
    "NPY_DISABLE_CPU_FEATURES": "",
    "MKL_ENABLE_INSTRUCTIONS": "AVX512",
    "MKL_DEBUG_CPU_TYPE": "5",
}


def _fresh(code: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def _without_numerics() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in CPU_NUMERICS}


def test_pinning_sets_mkls_reproducible_mode_where_the_environment_has_none():
    env: dict[str, str] = {}
    assert pin_cpu_numerics(env) == {"MKL_CBWR": "AVX2,STRICT"}
    assert env == {"MKL_CBWR": "AVX2,STRICT"}


def test_pinning_keeps_the_users_value():
    env = {"MKL_CBWR": "AUTO"}
    assert pin_cpu_numerics(env) == {}
    assert env == {"MKL_CBWR": "AUTO"}


def test_the_cli_pins_the_mode_before_torch_loads():
    assert _fresh(_AFTER_MAIN, _without_numerics()) == "AVX2,STRICT False"


def test_the_cli_keeps_a_mode_the_user_set():
    assert _fresh(_AFTER_MAIN, {**_without_numerics(), "MKL_CBWR": "COMPATIBLE"}) == "COMPATIBLE False"


def test_in_the_pinned_mode_a_products_bits_do_not_depend_on_where_its_input_lies():
    env = _without_numerics()
    pin_cpu_numerics(env)
    assert _fresh(_ALIGNMENT_VARIANTS, env) == "1"


def test_a_reference_run_takes_the_portable_mode_whatever_the_outer_environment_asks(monkeypatch):
    for name, value in _OTHER_NUMERICS.items():
        monkeypatch.setenv(name, value)
    assert _fresh(_NUMERICS_SEEN, dict(os.environ)).split("|")[0] == "DEFAULT"  # the outer request holds

    seen = _fresh(_NUMERICS_SEEN, portable_env()).split("|")

    assert seen[0] == "AVX2"  # ATen's kernels: what every x86-64 CPU with AVX2 runs
    assert seen[1:] == [repr(v) for v in PORTABLE_NUMERICS.values()] + ["'-'"] * len(DROPPED_NUMERICS)
