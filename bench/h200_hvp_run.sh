#!/usr/bin/env bash
# Gradients of gradients on the H200 machine (BENCHMARKS.md, "H200: gradients of gradients").
# PARTS (default "tests bench"): tests, the autodiff tests (second order among them) and the
# captured and training tests on the GPU backends (cuda/triton on the H200, wgpu/wgsl on
# NVIDIA's Vulkan); bench, bench/hvp_gpu_bench.py (an MLP's Hessian-vector product against
# torch). From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
PARTS=${PARTS:-tests bench}
if [[ $PARTS == *tests* ]]; then
    gpu_tests -k "not cpu" tests/burn/test_autodiff_second_order.py tests/burn/test_autodiff.py \
        tests/burn/test_autodiff_api.py tests/burn/test_attention.py tests/burn/test_captured.py \
        tests/burn/test_train.py
fi
if [[ $PARTS == *bench* ]]; then
    gpu_bench bench/hvp_gpu_bench.py ${BENCH_ARGS:-}
fi
