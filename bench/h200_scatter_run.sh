#!/usr/bin/env bash
# scatter_reduce on the H200 machine (BENCHMARKS.md, "scatter_reduce"), through
# bench/h200_env.sh's run_parts: tests, the scatter, index and ONNX operator tests on the GPU
# backends; bench, bench/scatter_bench.py --backend cuda (beside torch's scatter_reduce and
# a copy of the messages). From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
BENCH_ARGS=${BENCH_ARGS:---backend cuda} run_parts bench/scatter_bench.py \
    tests/burn/test_scatter_reduce.py tests/burn/test_index.py tests/burn/test_onnx_ops.py
