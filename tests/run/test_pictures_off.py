"""--pictures off: the run writes its summary, reports, tables and weights, the same figures, and no PNG."""

import contextlib
import io

from support import strict_json
from support.run_cases import quick_argv

from foxhunt.cli import main


def test_a_run_with_pictures_off_draws_no_png_and_reports_the_figures_of_one_that_draws(
    quick_run, tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        assert main(quick_argv(tiny_fxcache, out, tiny_params, "--pictures", "off")) == 0
    assert list(out.rglob("*.png")) == []
    assert sorted(quick_run.out.glob("*.png"))  # the same run with pictures on draws them
    for name in ("daily.csv", "monthly.csv", "trades.parquet", "fold_0/weights.pt"):
        assert (out / name).is_file(), name
    assert quick_run.summary["stitched"] == strict_json.read(out / "summary.json")["stitched"]
    outputs = [line for line in console.getvalue().splitlines() if line.startswith("outputs:")]
    assert outputs and ".png" not in outputs[0] and "fold_N/" in outputs[0]


def test_a_run_with_a_held_out_period_and_pictures_off_writes_its_headline_but_no_png(
    tiny_fxcache, tiny_params, tmp_path
):
    out = tmp_path / "out"
    flags = ("--holdout-days", "2", "--max-folds", "1", "--epochs", "1", "--pictures", "off")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(quick_argv(tiny_fxcache, out, tiny_params, *flags)) == 0
    assert (out / "holdout.json").is_file()
    assert list(out.rglob("*.png")) == []
