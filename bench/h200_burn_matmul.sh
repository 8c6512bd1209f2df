#!/usr/bin/env bash
# burn's matmul on the H200 in one device call: tuned cold on every shape of
# burn_gpu_bench.py --matmul-shapes (empty caches, no shipped autotune_cache/), the export for
# autotune_cache/, then the same shapes in a fresh process from that export alone (no tuning
# expected), and burn's op suite on the GPU. From the repo root with .whl/ and .gl/ carried:
#   source .whl/gpu-env.sh && bash bench/h200_burn_matmul.sh
set -u
OUT=${OUT:-/tmp/h200-out}
SHAPES=${SHAPES:-"4096,4096,4096;8192,8192,8192;8192,8192,1024;1024,8192,8192;16,8192,8192;1024,1024,32768"}
mkdir -p "$OUT/autotune"
export TRITON_DEFAULT_FP_FUSION=1 PYTHONUNBUFFERED=1 XDG_RUNTIME_DIR=/tmp/xdg-runtime
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
shipped=$(mktemp -d)
mv autotune_cache "$shipped/"
export CUBEPY_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d)
echo "== cold: burn.matmul tuned on each shape, then timed in turns with cuBLAS"
python3 bench/burn_gpu_bench.py --matmul-shapes "$SHAPES" --json "$OUT/burn-matmul-cold.json" \
    2>&1 | grep -v "checked [0-9]" | tee "$OUT/burn-matmul-cold.log"
python3 -m cubepy.autotune export --device "NVIDIA H200" --out "$OUT/autotune" 2>&1 | tail -3
echo "== shipped: a fresh process with the export as autotune_cache/ (kernels.matmul only)"
mv "$shipped/autotune_cache" .
rm -f autotune_cache/kernels.matmul.tuned_matmul--*.json
cp "$OUT"/autotune/kernels.matmul.tuned_matmul--*.json autotune_cache/
export CUBEPY_CACHE_DIR=$(mktemp -d)
python3 bench/burn_gpu_bench.py --matmul-shapes "$SHAPES" --json "$OUT/burn-matmul-shipped.json" \
    2>&1 | tee "$OUT/burn-matmul-shipped.log"
echo "== burn's op suite and the shipped-cache test on the GPU"
{ python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu tests/burn 2>&1 | tail -3
  python3 -m pytest -q -p no:cacheprovider tests/autotune/test_shipped_cache.py 2>&1 | tail -2
} | tee "$OUT/burn-gpu-tests.log"
