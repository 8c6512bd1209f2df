#!/usr/bin/env bash
# Runs 109-112 on the H200 machine (BENCHMARKS.md, "H200: sort, gather and combine
# functions"): the new conformance files (sort/topk, gather/histogram/softmax/keep_dims and
# Triton's reduction options, reduce and associative_scan by combine functions, asserts and
# barriers, reduce_or, div_rn/sqrt_rn, block pointers) on every target there (cpu, wgsl on
# NVIDIA's Vulkan, and the GPU through Triton 3.6 with torch arrays), every GPU test, and
# (unless BENCH=0) bench/line_ops_gpu_bench.py. From the repo root, with .whl/ and .gl/
# carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
date -u | tee $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/conformance/test_sorting.py \
    tests/conformance/test_ported_rows.py tests/conformance/test_combine_functions.py \
    tests/conformance/test_asserts_and_barriers.py tests/conformance/test_products_and_xor.py \
    tests/conformance/test_ported_shapes.py tests/conformance/test_reductions.py \
    tests/conformance/test_rounded_division.py tests/conformance/test_block_pointers.py \
    2>&1 | tail -8 | tee -a $OUT/tests.log
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 -rf tests 2>&1 | tail -6 \
    | tee -a $OUT/tests.log
date -u | tee -a $OUT/tests.log
if [ "${BENCH:-1}" = 1 ]; then
    python3 bench/line_ops_gpu_bench.py 2>&1 | tee $OUT/bench.log
    date -u | tee -a $OUT/tests.log
fi
