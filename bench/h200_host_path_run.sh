#!/usr/bin/env bash
# The host path of small elementwise ops on the H200 machine (BENCHMARKS.md, "The host path
# of small elementwise ops"), through bench/h200_env.sh's run_parts: tests, the pointwise,
# tensor and fusion tests on the GPU backends (binary_dense_kernel's number operands);
# bench, bench/host_path_probe.py --device cuda --profile. From the repo root, with .whl/ and
# .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
BENCH_ARGS=${BENCH_ARGS:---device cuda --profile --calls 2000} run_parts \
    bench/host_path_probe.py tests/burn/test_pointwise.py tests/burn/test_tensor.py \
    tests/burn/test_fusion.py tests/burn/test_fusion_softmax.py tests/test_wgsl_threads.py
