"""The README as a newcomer reads it: within its size, inside the repository, and counting what the code counts."""

from __future__ import annotations

import re
from pathlib import Path

from foxhunt.evaluate.baselines import BASELINE_NAMES

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
MAX_BYTES = 20_000
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def paragraph(text: str, opening: str) -> str:
    """The paragraph of `text` that starts with `opening`."""
    return next(p for p in text.split("\n\n") if p.startswith(opening))


def test_the_readme_stays_under_its_size():
    assert len(README.encode()) < MAX_BYTES


def test_the_readme_counts_and_names_every_baseline_a_run_reports():
    count = NUMBER_WORDS[len(BASELINE_NAMES)]
    listed = paragraph(README, "**The baselines.**")

    assert f"{count} baselines" in listed and f"against {count} baselines" in README
    assert [n for n in BASELINE_NAMES if f"`{n}`" not in listed] == []


def test_the_readme_points_at_nothing_outside_the_repository():
    assert re.findall(r"\.\./\S+", README) == []


def test_every_heading_the_contents_line_links_exists():
    anchors = re.findall(r"\]\(#([a-z0-9-]+)\)", README)
    headings = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", README, re.M)
    }

    assert anchors and [a for a in anchors if a not in headings] == []
