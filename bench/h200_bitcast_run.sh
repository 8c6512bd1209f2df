#!/usr/bin/env bash
# Runs 104 and 106 on the H200 machine (BENCHMARKS.md, "H200: more of Triton's builtins"):
# the bitcast, shape-builtin, cumprod and xor_sum tests on every target there (cpu, wgsl on
# NVIDIA's Vulkan, and the GPU through Triton 3.6 with torch arrays), the float16 rounding
# probe on NVIDIA's Vulkan (its rounding is now a WGSL helper function), the math-edge,
# elementwise, control-flow, dtype, memory and float-semantics tests there, and every GPU
# test. From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
date -u | tee $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/conformance/test_bitcast.py \
    tests/conformance/test_ported_shapes.py tests/conformance/test_products_and_xor.py \
    2>&1 | tail -8 | tee -a $OUT/tests.log
python3 bench/f16_rounding_probe.py wgsl 2>&1 | grep -v Warning | tail -2 | tee -a $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/conformance/test_dtypes.py \
    tests/conformance/test_memory.py tests/conformance/test_float_semantics.py \
    tests/conformance/test_math_edges.py tests/conformance/test_elementwise.py \
    tests/conformance/test_control_flow.py 2>&1 | tail -8 | tee -a $OUT/tests.log
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 -rf tests 2>&1 | tail -4 \
    | tee -a $OUT/tests.log
date -u | tee -a $OUT/tests.log
