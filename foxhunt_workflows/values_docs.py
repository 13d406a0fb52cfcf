"""The chart's parameter values with their docs: the `run:` block of helm/foxhunt/values.yaml.

Each `train-pipeline` parameter the chart sets is written under its description from the parameter
schema (the same words Argo's UI and `foxhunt submit --help` show), so the chart's docs cannot drift
from the trainer's rules; a test keeps values.yaml equal to `run_values_block()`.
"""

from __future__ import annotations

import textwrap

import yaml

from foxhunt_workflows.params import pipeline_parameters

# Set by other values (image.*, gpu.pool), not under `run`.
NOT_RUN_VALUES = ("image", "gpu-pool")
HEADER = """\
# Defaults of the train-pipeline parameters (names as Argo sees them); also published in a ConfigMap.
# Written by foxhunt_workflows.values_docs from the parameter schema (foxhunt.config's defaults, bounds
# and choices; a test keeps this block equal to it). JSON parameters may be given as text or as YAML
# mappings. The data URIs (bars-uri, fxcache-uri, output-uri) have no default: every submission names
# them (foxhunt submit -p bars-uri=s3://...).
run:
"""


def run_values_block(width: int = 104) -> str:
    """The `run:` block, each value under its description and allowed values."""
    lines = [HEADER.rstrip("\n")]
    for p in pipeline_parameters():
        if p.name in NOT_RUN_VALUES or p.default is None:
            continue
        lines += textwrap.wrap(
            p.help, width=width, initial_indent="  # ", subsequent_indent="  # ", break_on_hyphens=False
        )
        value = yaml.safe_dump({p.name: p.default}, width=10_000, default_flow_style=False).rstrip("\n")
        lines.append(f"  {value}")
    return "\n".join(lines) + "\n"
