#!/usr/bin/env bash
# batch_norm's fused kernels and scatter_reduce on the H200 machine (BENCHMARKS.md,
# "batch_norm" and "scatter_reduce"), through bench/h200_env.sh's run_parts: tests, the batch
# norm, scatter, norm, nn, autodiff, captured-step and ONNX tests on the GPU backends; bench,
# bench/batch_norm_bench.py --backend cuda (beside the composed ops, torch's F.batch_norm and
# a copy of x), then bench/scatter_bench.py --backend cuda. From the repo root, with .whl/
# and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
BENCH_ARGS=${BENCH_ARGS:---backend cuda} run_parts bench/batch_norm_bench.py \
    tests/burn/test_batch_norm.py tests/burn/test_scatter_reduce.py tests/burn/test_norm.py \
    tests/burn/test_nn.py tests/burn/test_autodiff.py tests/burn/test_captured.py \
    tests/burn/test_onnx_ops.py tests/burn/test_onnx_models.py
if [[ ${PARTS:-tests bench} == *bench* ]]; then
    python3 -W ignore bench/scatter_bench.py --backend cuda 2>&1 | tee $OUT/scatter.log
fi
