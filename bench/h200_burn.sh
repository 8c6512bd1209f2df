#!/usr/bin/env bash
# burn's H200 checks in one device call (see BENCHMARKS.md): the op suite on the GPU, burn's
# benchmarks beside the raw kernels and torch, and the matmul autotuning (cold tuning, tuned
# ratios, the export for autotune_cache/). Run from the repo root on the GPU machine with
# .whl/ and .gl/ carried (../shared/gpu/fetch-deps.sh); logs go to $OUT.
#   source .whl/gpu-env.sh && COLD=1 bash bench/h200_burn.sh
# COLD=1 starts from empty caches (Triton's, cubepy's, and no shipped autotune_cache/ in this
# copy of the tree), so the tuning times are those of a first run.
set -u
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT/autotune"
export TRITON_DEFAULT_FP_FUSION=1 CUBEPY_CACHE_DIR=/tmp/cubepy-cache PYTHONUNBUFFERED=1
if [ "${COLD:-0}" = 1 ]; then
  export CUBEPY_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d)
  mv autotune_cache "$(mktemp -d)/"
fi
export XDG_RUNTIME_DIR=/tmp/xdg-runtime
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader;
  python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton',
triton.__version__, 'numpy', numpy.__version__)"; } 2>&1 | tee "$OUT/burn-gpu-tests.log"

echo "== every GPU test: burn's op suite on the Cuda backend and cubepy's (pytest -m gpu tests)"
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests 2>&1 \
    | tee -a "$OUT/burn-gpu-tests.log" | tail -8

echo "== burn benchmarks"
python3 bench/burn_gpu_bench.py --json "$OUT/burn-gpu-bench.json" 2>&1 \
    | tee "$OUT/burn-gpu-bench.log" | tail -14

echo "== launch host cost and the autotune dispatch (issues 3 and 5)"
python3 bench/gpu_bench.py --only "launch" --out "$OUT/gpu-bench-launch.json" 2>&1 \
    | tee "$OUT/gpu-bench-launch.log" | grep "host cost"
python3 bench/autotune_probe.py 2>&1 | tee "$OUT/autotune-probe.log" | tail -4

echo "== autotune (examples.matmul.matmul_tuned: cold tuning, tuned ratios, export)"
python3 bench/h200_autotune.py --out "$OUT/autotune" 2>&1 | tail -12
