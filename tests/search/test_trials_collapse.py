"""A real search on the tiny fxcache: every trial's collapse flag reaches the study table, and with
`--objective stitched_sharpe_no_collapse` exactly the collapsed trials fail, with the reason."""

import csv
import io

from test_trials_run import LR_ONLY, read_json, search_argv, space_file

from foxhunt.cli import main


def test_the_no_collapse_objective_fails_exactly_the_collapsed_trials(tiny_fxcache, tiny_params, tmp_path):
    out = tmp_path / "out"
    space = space_file(tmp_path, LR_ONLY)
    argv = search_argv(tiny_fxcache, out, tiny_params, 4, "--search-space", str(space), "--pruner", "none")
    code = main([*argv, "--objective", "stitched_sharpe_no_collapse"])
    rows = list(csv.DictReader(io.StringIO((out / "trials.csv").read_text())))
    assert len(rows) == 4 and {r["collapsed"] for r in rows} <= {"True", "False"}
    # Two short epochs collapse often: a study whose every trial collapsed has no best settings (exit 1).
    assert code == (0 if any(r["collapsed"] == "False" for r in rows) else 1)
    for row in rows:
        collapsed = row["collapsed"] == "True"
        assert (row["state"] == "FAIL") == collapsed
        assert (row["error"] == "the policy collapsed to one action") == collapsed
        assert ("collapsed to one action" in row["warnings"]) == collapsed
    study = read_json(out / "study.json")
    assert study["warned_trials"]["collapsed"] == [int(r["number"]) for r in rows if r["collapsed"] == "True"]
