#!/usr/bin/env bash
# Run 78 on the H200 (BENCHMARKS.md): burn's matmul tiles on the wgsl target of the NVIDIA
# Vulkan adapter (bench/wgsl_tuning_probe.py: cold and sustained times of each candidate,
# and what the tuner picks with the plain and the settling WGSL clock), then the autotune
# tests on that adapter and on CUDA. Logs go to $OUT. From the repo root, with .whl/ and .gl/
# carried:
#   bash bench/h200_wgsl_tuning_run.sh
set -u
OUT=${OUT:-/tmp/h200-out}
SHAPES=${SHAPES:-4096,4096,4096;2048,2048,2048;1024,1024,1024}
source .whl/gpu-env.sh
export TRITON_DEFAULT_FP_FUSION=1 PYTHONUNBUFFERED=1 CUBEPY_CACHE_DIR=/tmp/cc TRITON_CACHE_DIR=/tmp/tc
export XDG_RUNTIME_DIR=/tmp/xdg CUBEPY_WGPU_ADAPTER=NVIDIA; mkdir -p -m 700 $XDG_RUNTIME_DIR $OUT
date -u | tee $OUT/wgsl-tuning-probe.log
python3 bench/wgsl_tuning_probe.py --shapes "$SHAPES" 2>&1 | tee -a $OUT/wgsl-tuning-probe.log
date -u | tee $OUT/autotune-tests.log
python3 -m pytest -q -p no:cacheprovider tests/autotune/test_wgsl_tuning.py 2>&1 | tail -3 \
    | tee -a $OUT/autotune-tests.log
python3 -m pytest -m gpu -q -p no:cacheprovider tests/autotune 2>&1 | tail -3 \
    | tee -a $OUT/autotune-tests.log
