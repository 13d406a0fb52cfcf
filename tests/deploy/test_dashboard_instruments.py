"""The dashboard's `instrument` variable filters the figure panels; a book panel shows the instruments combined."""

from __future__ import annotations

import json
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "helm" / "foxhunt" / "dashboards" / "foxhunt-training.json"
FIGURE_PANELS = (
    "Validation Sharpe per fold",
    "Stitched out-of-sample Sharpe (\u00b1 SE)",
    "Fold Sharpe against its best baseline",
    "Folds: validation dates, Sharpe \u00b1 SE, best baseline",
    "Held-out headline: net Sharpe [interval]",
)


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panel(title: str) -> dict:
    return next(p for p in dashboard()["panels"] if p["title"] == title)


def test_the_instrument_variable_lists_the_runs_instruments_and_offers_all():
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    instrument = variables["instrument"]
    assert instrument["type"] == "query" and instrument["datasource"]["uid"] == "${datasource}"
    assert instrument["query"].startswith("label_values(") and instrument["query"].endswith(", instrument)")
    assert 'run_id="$run_id"' in instrument["query"]
    # All matches every value and a series without the label (runs from before it): ".*" matches "".
    assert instrument["includeAll"] and instrument["allValue"] == ".*"


def test_every_figure_panel_filters_by_the_instrument():
    for title in FIGURE_PANELS:
        for target in panel(title)["targets"]:
            assert 'instrument=~"$instrument"' in target["expr"], (title, target["refId"])


def test_the_book_panel_shows_the_book_or_the_single_instrument():
    exprs = [t["expr"] for t in panel("Book: stitched net Sharpe against buy-and-hold")["targets"]]
    assert any("foxhunt_stitched_validation_sharpe{" in e and 'instrument="book"' in e for e in exprs)
    assert any('baseline="buy_and_hold"' in e and 'instrument="book"' in e for e in exprs)
    # A run of one instrument has no book: `or on (run_id)` falls back to its own record.
    assert all("or on (run_id)" in e for e in exprs)


def test_the_instruments_panel_draws_one_bar_per_instrument():
    (target,) = panel("Stitched net Sharpe by instrument")["targets"]
    assert target["expr"].startswith("max by (instrument) (foxhunt_stitched_validation_sharpe{")
    assert target["legendFormat"] == "{{instrument}}"


def test_panel_ids_are_unique_and_the_new_panels_overlap_nothing():
    panels = dashboard()["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = set()
    for p in panels:
        g = p["gridPos"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, p["title"]
        cells |= mine
