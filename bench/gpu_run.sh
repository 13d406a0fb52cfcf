#!/usr/bin/env bash
# One GPU session: the CUDA tests and the benchmarks that track targets; each step writes STEP.json and STEP.log in $OUT.
# Run from the repo root on the GPU machine (default OUT: /tmp/foxhunt-gpu):
#   FOXHUNT_GIT_COMMIT=$(git rev-parse HEAD) bash bench/gpu_run.sh [STEP …]      (default: tests plan trials population)
#   STEP_TIMEOUT=S stops a benchmark step after S seconds with its threads' stacks in its log (default 0: never)
# Steps (the older names still work: perf = plan, epoch = step):
#   tests      → tests.log                      pytest tests_gpu (the log headed by device, torch, commit); TESTS_PATHS
#                                               and TESTS_K (pytest's -k) pick some
#   plan       → plan.json, plan.log            bench/speed.py plan        (PLAN_ARGS, or PERF_ARGS)
#   real       → real.json, real.log            bench/speed.py real        (REAL_BARS, REAL_ARGS)
#   seeds      → seeds.json, seeds.log          bench/speed.py seeds       (SEEDS_ARGS)
#   scoring    → scoring.json, scoring.log      bench/speed.py scoring --device cuda (SCORING_ARGS)
#   step       → step.json, step.log            bench/step.py lone         (STEP_ARGS)
#   population → population.json, …log         bench/step.py population   (POPULATION_ARGS, e.g. "--sizes 1,8,32,64")
#   kernels    → kernels.json, kernels.log      bench/step_kernels.py: the step's kernels by population size (KERNELS_ARGS)
#   trials     → trials.json, trials.log        bench/search.py trials     (TRIALS_ARGS)
#   search     → search.json, search.log        bench/search.py search     (REAL_BARS, SEARCH_ARGS)
#   learner    → learner.json, learner.log      bench/learner.py control   (LEARNER_ARGS)
#   power      → power.json, power.log          bench/power.py run         (POWER_ARGS, e.g. "--shapes plan --drifts 1 0.5 --noise";
#                                              split the matrix over calls, then bench/power.py merge FILE …;
#                                              a row longer than a call: "--work runs/power-work --resume" in
#                                              each chained call (runs/ is ignored: it stays on a warm machine);
#                                              universe rows (issue 35): POWER_ARGS="--instruments 8 --drifts 0.25 --noise")
#   overlay    → overlay.json, overlay.log      bench/overlay.py on the full files (OVERLAY_DATA, default EURUSD and YNDX
#                                              under .gpu/data; OVERLAY_ARGS, e.g. "--drifts 1 --params n5.json")
#   fixed      → fixed.json, fixed.log          bench/speed.py fixed on the GPU: the real-data shape's run phase by
#                                              phase (REAL_BARS, 50 epochs, shipped steps; FIXED_ARGS)
#   profile    → profile.txt, profile.json, …log  bench/profile_run.py: a real-data `foxhunt train` under cProfile
#                                              (REAL_BARS; PROFILE_ARGS: more train flags)
#   universe   → universe.json, universe.log    bench/speed.py universe    (UNIVERSE_ARGS, e.g. "--repeats 2" or
#                                              "--steps-per-epoch one"): 8 instruments against one, load, 32's memory
# At most eight files come back from a device call and one call lasts at most 10 minutes: four steps a call at
# most, fewer for the long ones. Then, here: python bench/targets.py $OUT/*.json --out … --readme bench/README.md
set -uo pipefail
OUT=${OUT:-/tmp/foxhunt-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# A step that hangs (a new CUDA path: 53c6625's replay did) is stopped after STEP_TIMEOUT seconds (0, the default:
# never) with SIGABRT, on which faulthandler writes every thread's stack into the step's log; the next steps run.
export PYTHONFAULTHANDLER=1
STEP_TIMEOUT=${STEP_TIMEOUT:-0}
export PYTHONPATH="$PWD/trainer_image:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
if [[ -z "${FOXHUNT_GIT_COMMIT:-}" ]]; then
  FOXHUNT_GIT_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
fi
export FOXHUNT_GIT_COMMIT
REAL_BARS=${REAL_BARS:-.gpu/data/EURUSD_M1_2018_2019.parquet}
steps=${*:-tests plan trials population}
steps=" $(echo " $steps " | sed -e 's/ perf / plan /g; s/ epoch / step /g') "
# The shipped image has bytecode for every package (pip compiles it at install); where torch's install here has
# none (a read-only tree), compile it once into a prefix the measured processes read (harness.pod_env).
torch_dir=$(python3 -c "import os, torch; print(os.path.dirname(torch.__file__))")
if [[ "$steps" =~ " "(plan|real|seeds|trials|search|learner|power|overlay|universe|fixed)" " ]] && ! ls "$torch_dir"/__pycache__/__init__.*.pyc >/dev/null 2>&1; then
  export FOXHUNT_BENCH_PYCACHE=${FOXHUNT_BENCH_PYCACHE:-/tmp/foxhunt-pycache}
  started=$(date +%s)
  PYTHONPYCACHEPREFIX=$FOXHUNT_BENCH_PYCACHE python3 -m compileall -q -j 0 "$(dirname "$torch_dir")" \
    trainer_image $(ls -d /tmp/site 2>/dev/null) >/dev/null 2>&1
  echo "# bytecode: torch had none; compiled into $FOXHUNT_BENCH_PYCACHE in $(( $(date +%s) - started ))s"
fi

header() {  # device, driver, torch, python and the commit, at the top of every log
  echo "# commit: $FOXHUNT_GIT_COMMIT"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/# device: /'
  python3 -c "import torch, sys; print('# torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  echo "# bytecode cache prefix: ${FOXHUNT_BENCH_PYCACHE:-none (the packages carry their own)}"
  echo "# command: $*"
}

timed() {  # the command, stopped with SIGABRT (its stacks in the log) after STEP_TIMEOUT seconds
  timeout --signal=ABRT --kill-after=10 "$STEP_TIMEOUT" "$@"
}
status=0
bench() {  # bench STEP SCRIPT ARGS…: the benchmark's JSON and log under $OUT
  local step=$1; shift
  { header "$@"; timed python3 "$@" --out "$OUT/$step.json" 2>&1; } | tee "$OUT/$step.log" || status=1
}
for step in $steps; do
  case $step in
    tests) { header pytest ${TESTS_PATHS:-tests_gpu} ${TESTS_K:+-k "$TESTS_K"}
             timed python3 -m pytest ${TESTS_PATHS:-tests_gpu} ${TESTS_K:+-k "$TESTS_K"} -q -p no:cacheprovider -rA \
               --durations=15 2>&1; } \
             | tee "$OUT/tests.log" || status=1 ;;
    plan) bench plan bench/speed.py plan ${PLAN_ARGS:-${PERF_ARGS:-}} ;;
    real) bench real bench/speed.py real --bars "$REAL_BARS" ${REAL_ARGS:-} ;;
    seeds) bench seeds bench/speed.py seeds ${SEEDS_ARGS:-} ;;
    scoring) bench scoring bench/speed.py scoring --device cuda ${SCORING_ARGS:-} ;;
    step) bench step bench/step.py lone ${STEP_ARGS:-} ;;
    population) bench population bench/step.py population ${POPULATION_ARGS:-} ;;
    kernels) bench kernels bench/step_kernels.py ${KERNELS_ARGS:-} ;;
    trials) bench trials bench/search.py trials ${TRIALS_ARGS:-} ;;
    search) bench search bench/search.py search --bars "$REAL_BARS" ${SEARCH_ARGS:-} ;;
    learner) bench learner bench/learner.py control ${LEARNER_ARGS:-} ;;
    power) bench power bench/power.py run ${POWER_ARGS:-} ;;
    overlay) bench overlay bench/overlay.py --device cuda --data ${OVERLAY_DATA:-eurusd=$REAL_BARS yndx=.gpu/data/YNDX_M1_2015_2016.parquet} \
             ${OVERLAY_ARGS:-} ;;
    fixed) bench fixed bench/speed.py fixed --device cuda --cores '' --kinds train --bars-file "$REAL_BARS" \
             --epochs 50 --steps 0 ${FIXED_ARGS:-} ;;
    profile) { header bench/profile_run.py; python3 bench/profile_run.py "$OUT" --bars "$REAL_BARS" -- ${PROFILE_ARGS:-} 2>&1; } \
             | tee "$OUT/profile.log" || status=1 ;;
    universe) bench universe bench/speed.py universe ${UNIVERSE_ARGS:-} ;;
    walk|sb3) echo "# $step: retired in issue 33 (bench/walk_forward_gpu.py, bench/peer_sb3.py); git history keeps them" ;;
    *) echo "unknown step: $step (tests plan real seeds scoring step population kernels trials search learner power overlay fixed profile universe)" >&2; status=1 ;;
  esac
done
exit $status
