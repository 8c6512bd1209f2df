#!/usr/bin/env bash
# Everything the H200 checks, in one device call (see BENCHMARKS.md). Run from the repo root
# on the GPU machine with .whl/ and .gl/ carried (../shared/gpu/fetch-deps.sh); logs go to $OUT.
#   source .whl/gpu-env.sh && bash bench/h200_run.sh
set -u
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT/autotune"
export TRITON_DEFAULT_FP_FUSION=1 CUBEPY_CACHE_DIR=/tmp/cubepy-cache PYTHONUNBUFFERED=1
export XDG_RUNTIME_DIR=/tmp/xdg-runtime
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader;
  python3 -c "import torch, triton, numpy, wgpu; print('torch', torch.__version__, 'triton',
triton.__version__, 'numpy', numpy.__version__, 'wgpu', wgpu.__version__)"; } 2>&1 \
    | tee "$OUT/gpu-tests.log"

echo "== pytest -m gpu (triton on the GPU with torch arrays)"
python3 -m pytest -m gpu -q -p no:cacheprovider tests 2>&1 | tee -a "$OUT/gpu-tests.log" | tail -5

echo "== the suite on the NVIDIA Vulkan adapter (wgsl)"
CUBEPY_WGPU_ADAPTER=NVIDIA python3 -m pytest -q -p no:cacheprovider -n 8 -k wgsl \
    tests/conformance tests/test_errors.py tests/wgsl tests/test_examples.py 2>&1 \
    | tee "$OUT/wgsl-h200.log" | tail -5

echo "== benchmarks"
python3 bench/gpu_bench.py --out "$OUT/gpu_bench.json" 2>&1 | tee "$OUT/gpu_bench.log" | tail -30

echo "== autotune"
python3 bench/h200_autotune.py --out "$OUT/autotune" 2>&1 | tail -12
