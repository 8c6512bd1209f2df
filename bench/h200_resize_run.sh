#!/usr/bin/env bash
# ONNX Resize and the cpu block change on the H200 machine (BENCHMARKS.md, "H200: ONNX Resize,
# cubic and antialiased"), through bench/h200_env.sh's run_parts: tests, the ONNX and
# elementwise tests on the GPU backends; bench, bench/resize_gpu_bench.py (Resize against
# torch's interpolate). From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
run_parts bench/resize_gpu_bench.py tests/burn/test_onnx_ops.py tests/burn/test_onnx_models.py \
    tests/burn/test_pointwise.py
