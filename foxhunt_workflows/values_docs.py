"""The chart's parameter values with their docs: the `run:` block of helm/foxhunt/values.yaml.

Each `train-pipeline` parameter the chart sets is written under its description from the parameter
schema (the same words Argo's UI and `foxhunt submit --help` show), so the chart's docs cannot drift
from the trainer's rules; a test keeps values.yaml equal to `run_values_block()`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

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


def update_values_file(path: Path | str) -> bool:
    """Rewrite the `run:` block of a values.yaml (from its header to the blank line after it); True if it changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    start = text.index(HEADER.splitlines()[0])
    end = text.index("\n\n", text.index("\nrun:\n", start)) + 1
    updated = text[:start] + run_values_block() + text[end:]
    if updated != text:
        path.write_text(updated, encoding="utf-8")
    return updated != text


if __name__ == "__main__":
    # python -m foxhunt_workflows.values_docs helm/foxhunt/values.yaml
    import sys

    for name in sys.argv[1:]:
        print(f"{name}: {'updated' if update_values_file(name) else 'unchanged'}")
