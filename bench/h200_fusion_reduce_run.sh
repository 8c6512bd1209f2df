#!/usr/bin/env bash
# Fusion's reductions of pending elementwise values on the H200 machine (BENCHMARKS.md,
# "Fusion: elementwise chains computed inside reductions"), through bench/h200_env.sh's
# run_parts: tests, the fused reduction, fusion, reduction, pointwise, scatter and atomics
# tests on the GPU backends (with Triton 3.6's compile of the float compare-and-swap for
# gfx942); bench, bench/fusion_reduce_bench.py --backend cuda. From the repo root, with
# .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
BENCH_ARGS=${BENCH_ARGS:---backend cuda} run_parts bench/fusion_reduce_bench.py \
    tests/burn/test_fusion_reduce.py tests/burn/test_fusion.py tests/burn/test_reduce.py \
    tests/burn/test_pointwise.py tests/burn/test_scatter_reduce.py tests/conformance/test_memory.py
