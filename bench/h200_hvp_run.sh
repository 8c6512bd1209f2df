#!/usr/bin/env bash
# Gradients of gradients on the H200 machine (BENCHMARKS.md, "H200: gradients of gradients"),
# through bench/h200_env.sh's run_parts: tests, the autodiff tests (second order among them)
# and the captured and training tests on the GPU backends; bench, bench/hvp_gpu_bench.py (an
# MLP's Hessian-vector product against torch). From the repo root, with .whl/ and .gl/
# carried; logs go to $OUT.
set -u
source bench/h200_env.sh
run_parts bench/hvp_gpu_bench.py tests/burn/test_autodiff_second_order.py \
    tests/burn/test_autodiff.py tests/burn/test_autodiff_api.py tests/burn/test_attention.py \
    tests/burn/test_captured.py tests/burn/test_train.py
