"""A CPU run reproduces the recorded reference: the same weights, positions and figures, bit for bit.

tests/data/reference_figures.json holds the outputs of the default `foxhunt pipeline` and two small
studies (3 trials one at a time; 4 trials two side by side). First recorded at feba2ee, before the
redesign of issue 20, which reproduced them bit for bit (redesign branch, f6c8ffa); re-recorded once after
it, because issue 21 changed the sample generator (a signal the features see) and the baselines, and
issue 22 the evaluation (whole-data annualisation, handover cost, paired comparisons); and once more when
issue 21 shipped the tail selection's significance gate as the default (select_tail_share 0.25,
select_min_t 3): the default pipeline's folds 0 and 1 now go flat; and once for issue 32, when the
runs moved to the portable numeric mode below (numpy's AVX2 loops move 12 of the sample fxcache's 8.4
million features by one float32 ulp, which reaches the pipeline's weights and losses) and the reductions
became independent of the thread count (the pipeline's in-sample Sharpe moved in the 13th digit); and
at 4db5eab for the rest of issue 32, with no figure moved: undefined figures written as null (strict
JSON), PBO and DSR undefined for the studies' flat trials, the search's headline tables and the new
`eval_config.session_zone` key; and the two studies once more when a search's trials came to run the
greedy policy's diagnostics on each fold's last epoch alone (`--diagnostics-every` unset): their trials'
epochs 1 and 2 of 3 lost the four diagnostic figures, and no other figure moved. Re-record only for such an
intended change:
`python tests/support/reference_figures.py`.

Every reference run (and the studies' fxcache) runs in a process of its own in the portable numeric mode
(`PORTABLE_NUMERICS`: AVX2 kernels in ATen, MKL, oneDNN and numpy), forced over the outer environment, so
any x86-64 CPU with AVX2 computes the recorded bits and every figure is compared exactly
(tests/test_cpu_numerics.py holds that a reference run's process takes that mode whatever the outer
environment asks).
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from support.reference_figures import REFERENCE, STUDIES, run_figures, run_reference

# Real runs in fresh processes: seconds to tens of seconds each (`-m 'not slow'` leaves them out).
pytestmark = pytest.mark.slow

RECORDED = json.loads(REFERENCE.read_text())["runs"]
# Since issue 23 the HAC standard error is computed in O(T) (the Bartlett-weighted sum of lag products as
# a sum of squared moving sums): the same estimator, rounded differently, within a few 1e-14 of the
# recorded figures; those figures alone are compared to this relative tolerance, every other bit for bit.
HAC_KEY, HAC_RELATIVE = "sharpe_se_hac", 1e-11


def _same(got, want, key: str = "") -> bool:
    """Equal, bit for bit (the HAC errors to `HAC_RELATIVE`); two NaNs (an undefined interval) are the same."""
    if isinstance(got, float) and isinstance(want, float):
        if math.isnan(got) and math.isnan(want):
            return True
        if key.endswith(HAC_KEY):
            return math.isclose(got, want, rel_tol=HAC_RELATIVE, abs_tol=0.0)
    return got == want


def _differences(got: dict, want: dict) -> list[str]:
    lines = [f"missing {k}" for k in sorted(want.keys() - got.keys())]
    lines += [f"extra {k}" for k in sorted(got.keys() - want.keys())]
    lines += [
        f"{k}: {got[k]!r} != recorded {want[k]!r}"
        for k in sorted(want.keys() & got.keys())
        if not _same(got[k], want[k], k)
    ]
    return lines


@pytest.mark.parametrize("name", STUDIES)
def test_a_small_study_reproduces_the_recorded_figures(name, reference_studies):
    differences = _differences(reference_studies[name].result(), RECORDED[name])
    assert not differences, f"{len(differences)} differences:\n" + "\n".join(differences[:40])


@pytest.mark.slow
def test_the_default_pipeline_reproduces_the_recorded_figures(default_pipeline, tmp_path):
    if torch.cuda.is_available():  # the recorded run is `--device cpu`; `foxhunt pipeline` would take the GPU
        figures = run_reference("pipeline", tmp_path)
    else:  # on a CPU, the console script's `foxhunt pipeline` (--device auto) is that run
        assert default_pipeline.done.returncode == 0, default_pipeline.done.stderr
        figures = run_figures(default_pipeline.out)
    differences = _differences(figures, RECORDED["pipeline"])
    assert not differences, f"{len(differences)} differences:\n" + "\n".join(differences[:40])


def test_the_comparison_names_a_changed_figure():
    recorded = RECORDED["study"]
    key = next(k for k, v in recorded.items() if isinstance(v, float) and not k.endswith(HAC_KEY))
    changed = {**recorded, key: recorded[key] + 1e-12}
    assert _differences(changed, recorded) == [f"{key}: {changed[key]!r} != recorded {recorded[key]!r}"]


def test_the_comparison_names_a_hac_error_moved_beyond_its_tolerance_only():
    recorded = RECORDED["study"]
    key = next(k for k, v in recorded.items() if k.endswith(HAC_KEY) and v > 0)
    rounded = {**recorded, key: recorded[key] * (1 + 1e-13)}
    moved = {**recorded, key: recorded[key] * (1 + 1e-10)}
    assert _differences(rounded, recorded) == []
    assert _differences(moved, recorded) == [f"{key}: {moved[key]!r} != recorded {recorded[key]!r}"]


def test_the_recorded_population_trained_each_trial_as_the_recorded_study_trained_it_alone():
    alone, side_by_side = RECORDED["study"], RECORDED["study_population"]
    shared = [k for k in alone if k.startswith(("trials/0000/", "trials/0001/", "trials/0002/"))]
    assert len(shared) > 1000  # every figure and weights digest of three trials
    assert _differences({k: side_by_side.get(k) for k in shared}, {k: alone[k] for k in shared}) == []
