#!/usr/bin/env bash
# Activation checkpointing on the H200 machine (BENCHMARKS.md, "H200: activation
# checkpointing"), through bench/h200_env.sh's run_parts: tests, the checkpoint,
# second-order, tensor and ONNX op tests on the GPU backends; bench,
# bench/checkpoint_gpu_bench.py (peak memory and step time against torch's checkpoint).
# From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
run_parts bench/checkpoint_gpu_bench.py tests/burn/test_checkpoint.py \
    tests/burn/test_autodiff_second_order.py tests/burn/test_tensor.py tests/burn/test_onnx_ops.py
