#!/usr/bin/env bash
# One GPU session: the CUDA tests, the walk-forward benchmark, the SB3 peer benchmark.
# Run from the repo root on the GPU machine; results land in $OUT (default /tmp/foxhunt-gpu).
#   bash bench/gpu_run.sh [tests] [walk] [sb3]      (default: all three)
set -uo pipefail
OUT=${OUT:-/tmp/foxhunt-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD/trainer_image${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
steps=${*:-tests walk sb3}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])" | tee -a "$OUT/gpu.txt"
status=0
if [[ " $steps " == *" tests "* ]]; then
  python3 -m pytest tests_gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log" || status=1
fi
if [[ " $steps " == *" walk "* ]]; then
  python3 bench/walk_forward_gpu.py --eurusd "${EURUSD:-.gpu/EURUSD_M1_2018_2019.parquet}" \
    --out "$OUT/walk_forward.json" ${WALK_ARGS:-} 2>&1 | tee "$OUT/walk_forward.log" || status=1
fi
if [[ " $steps " == *" sb3 "* && -f bench/peer_sb3.py ]]; then
  python3 bench/peer_sb3.py --device cuda --out "$OUT/peer_sb3.json" ${SB3_ARGS:---bars 200000 --sb3-timesteps 30000 --sb3-big-timesteps 12288 --fox-epochs 5} 2>&1 | tee "$OUT/peer_sb3.log" || status=1
fi
exit $status
