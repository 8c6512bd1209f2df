#!/usr/bin/env bash
# Fusion's softmaxes of pending elementwise values on the H200 machine (BENCHMARKS.md,
# "Fusion into softmax"), through bench/h200_env.sh's run_parts: tests, the fused softmax,
# fused reduction, fusion, attention and norm tests on the GPU backends; bench,
# bench/fusion_reduce_bench.py --backend cuda over the softmax cases and the small loss (the
# host path). From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
BENCH_ARGS=${BENCH_ARGS:---backend cuda --cases row_softmax,row_log_softmax,mse} run_parts \
    bench/fusion_reduce_bench.py tests/burn/test_fusion_softmax.py \
    tests/burn/test_fusion_reduce.py tests/burn/test_fusion.py tests/burn/test_attention.py \
    tests/burn/test_norm.py
