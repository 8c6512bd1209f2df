#!/usr/bin/env bash
# ONNX Resize and the cpu block change on the H200 machine (BENCHMARKS.md, "H200: ONNX Resize,
# cubic and antialiased"). PARTS (default "tests bench"): tests, the ONNX and elementwise
# tests on the GPU backends (cuda/triton on the H200, wgpu/wgsl on NVIDIA's Vulkan); bench,
# bench/resize_gpu_bench.py (Resize against torch's interpolate). From the repo root, with
# .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
PARTS=${PARTS:-tests bench}
if [[ $PARTS == *tests* ]]; then
    gpu_tests -k "not cpu" tests/burn/test_onnx_ops.py tests/burn/test_onnx_models.py \
        tests/burn/test_pointwise.py
fi
if [[ $PARTS == *bench* ]]; then
    gpu_bench bench/resize_gpu_bench.py ${BENCH_ARGS:-}
fi
