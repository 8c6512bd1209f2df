#!/usr/bin/env bash
# Activation checkpointing on the H200 machine (BENCHMARKS.md, "H200: activation
# checkpointing"). PARTS (default "tests bench"): tests, the checkpoint and second-order tests
# and the tensor tests on the GPU backends (cuda/triton on the H200, wgpu/wgsl on NVIDIA's
# Vulkan); bench, bench/checkpoint_gpu_bench.py (peak memory and step time against torch's
# checkpoint). From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
PARTS=${PARTS:-tests bench}
if [[ $PARTS == *tests* ]]; then
    gpu_tests -k "not cpu" tests/burn/test_checkpoint.py tests/burn/test_autodiff_second_order.py \
        tests/burn/test_tensor.py tests/burn/test_onnx_ops.py
fi
if [[ $PARTS == *bench* ]]; then
    gpu_bench bench/checkpoint_gpu_bench.py ${BENCH_ARGS:-}
fi
