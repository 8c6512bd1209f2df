#!/usr/bin/env bash
# Runs 96 and 98 on the H200 machine (BENCHMARKS.md, "Triton's random builtins and value hints"):
# bench/random_gpu_bench.py (cube.rand's bits against tl.rand's on the GPU; a fused dropout in
# cubepy and in Triton against torch's dropout and a device copy), then the new conformance
# tests, the edited dtype and math-edge tests and the examples on every target there (cpu, the
# GPU through Triton 3.6, wgsl on NVIDIA's Vulkan), and every GPU test. From the repo root,
# with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
date -u | tee $OUT/random-bench.log
python3 bench/random_gpu_bench.py 2>&1 | tee -a $OUT/random-bench.log
date -u | tee $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 8 tests/conformance/test_random_builtins.py \
    tests/conformance/test_ported_builtins.py tests/conformance/test_launch.py \
    tests/conformance/test_dtypes.py tests/conformance/test_math_edges.py \
    tests/test_examples.py 2>&1 | tail -4 | tee -a $OUT/tests.log
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests 2>&1 | tail -2 | tee -a $OUT/tests.log
date -u | tee -a $OUT/tests.log
