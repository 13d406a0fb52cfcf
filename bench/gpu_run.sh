#!/usr/bin/env bash
# One GPU session: the CUDA tests, issue 15's targets, the trials and populations benchmarks; results land in $OUT.
# Run from the repo root on the GPU machine (default OUT: /tmp/foxhunt-gpu):
#   FOXHUNT_GIT_COMMIT=$(git rev-parse HEAD) bash bench/gpu_run.sh [tests] [perf] [trials] [population] [walk] [sb3]
# Default: tests perf trials population. Each log starts with the device, torch and the commit measured.
# At most eight files come back from a device session, so each step writes one log (and one JSON):
#   tests  → gpu_tests.log
#   perf   → perf_targets.json, perf_targets.log      (PERF_ARGS, e.g. "--variants --adopt-best" or "--quick")
#   trials → trials_gpu.json, trials_gpu.log          (only when bench/trials_gpu.py exists; TRIALS_ARGS)
#   population → population_gpu.json, population_gpu.log  (POPULATION_ARGS, e.g. "--sizes 1,4 --repeats 3")
#   real   → real_shape.json, real_shape.log          (issue 23's real-data shape; REAL_BARS, REAL_ARGS)
#   scoring → fold_scoring.json, fold_scoring.log     (one fold's validation work, baselines fitted on the GPU)
#   epoch  → epoch_overhead.json, epoch_overhead.log  (an epoch's diagnostics and tail score, per call and merged)
#   walk   → walk_forward.json, walk_forward.log      (the older walk-forward benchmark)
#   sb3    → peer_sb3.json, peer_sb3.log
# Time on an H200: tests ≈ 3–5 min, perf ≈ 4 min (≈ 6–7 with --variants), population ≈ 3–4 min
# (estimated); run them as separate commands when one command may last 10 minutes at most.
set -uo pipefail
OUT=${OUT:-/tmp/foxhunt-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD/trainer_image${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
if [[ -z "${FOXHUNT_GIT_COMMIT:-}" ]]; then
  FOXHUNT_GIT_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
fi
export FOXHUNT_GIT_COMMIT
# The shipped image has bytecode for every package (pip compiles it at install); where torch's install here
# has none (a read-only tree), compile it once into a prefix the measured processes read (perf_runs.pod_env).
torch_dir=$(python3 -c "import os, torch; print(os.path.dirname(torch.__file__))")
if [[ " ${*:-perf} " =~ " "(perf|real|trials|population)" " ]] && ! ls "$torch_dir"/__pycache__/__init__.*.pyc >/dev/null 2>&1; then
  export FOXHUNT_BENCH_PYCACHE=${FOXHUNT_BENCH_PYCACHE:-/tmp/foxhunt-pycache}
  started=$(date +%s)
  PYTHONPYCACHEPREFIX=$FOXHUNT_BENCH_PYCACHE python3 -m compileall -q -j 0 "$(dirname "$torch_dir")" \
    trainer_image $(ls -d /tmp/site 2>/dev/null) >/dev/null 2>&1
  echo "# bytecode: torch had none; compiled into $FOXHUNT_BENCH_PYCACHE in $(( $(date +%s) - started ))s"
fi
steps=${*:-tests perf trials population}

header() {  # device, driver, torch, python and the commit, at the top of every log
  echo "# commit: $FOXHUNT_GIT_COMMIT"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/# device: /'
  python3 -c "import torch, sys; print('# torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  echo "# bytecode cache prefix: ${FOXHUNT_BENCH_PYCACHE:-none (the packages carry their own)}"
  echo "# command: $*"
}

status=0
if [[ " $steps " == *" tests "* ]]; then
  { header pytest tests_gpu; python3 -m pytest tests_gpu -q -p no:cacheprovider -rA 2>&1; } \
    | tee "$OUT/gpu_tests.log" || status=1
fi
if [[ " $steps " == *" perf "* ]]; then
  { header perf_targets.py ${PERF_ARGS:-}
    python3 bench/perf_targets.py --out "$OUT/perf_targets.json" ${PERF_ARGS:-} 2>&1; } \
    | tee "$OUT/perf_targets.log" || status=1
fi
if [[ " $steps " == *" trials "* && -f bench/trials_gpu.py ]]; then
  { header trials_gpu.py ${TRIALS_ARGS:-}
    python3 bench/trials_gpu.py --out "$OUT/trials_gpu.json" ${TRIALS_ARGS:-} 2>&1; } \
    | tee "$OUT/trials_gpu.log" || status=1
fi
if [[ " $steps " == *" population "* ]]; then
  { header population_gpu.py ${POPULATION_ARGS:-}
    python3 bench/population_gpu.py --out "$OUT/population_gpu.json" ${POPULATION_ARGS:-} 2>&1; } \
    | tee "$OUT/population_gpu.log" || status=1
fi
if [[ " $steps " == *" real "* ]]; then
  { header real_shape.py ${REAL_ARGS:-}
    python3 bench/real_shape.py --bars "${REAL_BARS:-.gpu/data/EURUSD_M1_2018_2019.parquet}" \
      --out "$OUT/real_shape.json" ${REAL_ARGS:-} 2>&1; } | tee "$OUT/real_shape.log" || status=1
fi
if [[ " $steps " == *" scoring "* ]]; then
  { header fold_scoring.py --device cuda
    python3 bench/fold_scoring.py --device cuda --out "$OUT/fold_scoring.json" 2>&1; } \
    | tee "$OUT/fold_scoring.log" || status=1
fi
if [[ " $steps " == *" epoch "* ]]; then
  { header epoch_overhead.py --device cuda
    python3 bench/epoch_overhead.py --device cuda --out "$OUT/epoch_overhead.json" 2>&1; } \
    | tee "$OUT/epoch_overhead.log" || status=1
fi
if [[ " $steps " == *" walk "* ]]; then
  { header walk_forward_gpu.py ${WALK_ARGS:-}
    python3 bench/walk_forward_gpu.py --eurusd "${EURUSD:-.gpu/EURUSD_M1_2018_2019.parquet}" \
      --out "$OUT/walk_forward.json" ${WALK_ARGS:-} 2>&1; } | tee "$OUT/walk_forward.log" || status=1
fi
if [[ " $steps " == *" sb3 "* && -f bench/peer_sb3.py ]]; then
  { header peer_sb3.py
    python3 bench/peer_sb3.py --device cuda --out "$OUT/peer_sb3.json" \
      ${SB3_ARGS:---bars 200000 --sb3-timesteps 30000 --sb3-big-timesteps 12288 --fox-epochs 5} 2>&1; } \
    | tee "$OUT/peer_sb3.log" || status=1
fi
exit $status
