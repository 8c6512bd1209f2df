#!/usr/bin/env bash
# The fused backward pass of layer_norm and rms_norm on the H200 machine (BENCHMARKS.md,
# "H200: fused normalization backward"), through bench/h200_env.sh's run_parts: tests, the
# norm, autodiff, second-order, checkpoint and transformer tests on the GPU backends; bench,
# bench/norm_backward_gpu_bench.py (the kernel against the composed ops and torch, and a
# transformer layer's step with each). From the repo root, with .whl/ and .gl/ carried; logs
# go to $OUT.
set -u
source bench/h200_env.sh
run_parts bench/norm_backward_gpu_bench.py tests/burn/test_norm_backward.py \
    tests/burn/test_norm.py tests/burn/test_autodiff.py tests/burn/test_autodiff_second_order.py \
    tests/burn/test_checkpoint.py tests/burn/test_transformer.py tests/burn/test_nn.py
