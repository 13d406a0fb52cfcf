#!/usr/bin/env bash
# One device call: CUDA tests (TESTS_PATHS, optional), then the primed 64-trial search of this tree (commit A) and of
# an older tree (commit B, in BDIR) on the one machine, both reading one bytecode prefix; files under $OUT/{tests,after,before}.
#   Here, first: mkdir -p .gpu/before && git archive B trainer_image bench pyproject.toml | tar -x -C .gpu/before \
#                && rm -rf .gpu/before/bench/results           (a device copy has no .git; carry [".gpu", ".whl"])
#   There:       A=<sha> B=<sha> BDIR=.gpu/before [T=250] [TESTS_PATHS="tests_gpu/…"] bash bench/gpu_search_ab.sh
# T bounds each search (gpu_run.sh's STEP_TIMEOUT); about 210 s a side on an H100, 423 s for both with the install.
set -u
root=${OUT:-/tmp/foxhunt-gpu}
if [[ -n "${TESTS_PATHS:-}" ]]; then
  OUT=$root/tests FOXHUNT_GIT_COMMIT=$A STEP_TIMEOUT=${TESTS_TIMEOUT:-150} bash bench/gpu_run.sh tests
  tail -3 "$root/tests/tests.log"
fi
export FOXHUNT_BENCH_PYCACHE=/tmp/foxhunt-pycache
OUT=$root/after FOXHUNT_GIT_COMMIT=$A SEARCH_ARGS="--repeats 1 --primed --run-timeout 400" STEP_TIMEOUT=${T:-250} \
  bash bench/gpu_run.sh search
PYTHONPYCACHEPREFIX=$FOXHUNT_BENCH_PYCACHE python3 -m compileall -q -j 0 "$PWD/$BDIR/trainer_image" >/dev/null 2>&1
# The before tree's own gpu_run.sh, with optuna from the after side's install (/tmp/site) and the bars from here.
(cd "$BDIR" && PYTHONPATH=/tmp/site OUT=$root/before FOXHUNT_GIT_COMMIT=$B \
  REAL_BARS=$OLDPWD/.gpu/data/EURUSD_M1_2018_2019.parquet SEARCH_ARGS="--repeats 1 --primed --run-timeout 400" \
  STEP_TIMEOUT=${T:-250} bash bench/gpu_run.sh search)
ls -R "$root"
