#!/usr/bin/env bash
# The convolution kernel on the H200 machine (BENCHMARKS.md, "H200: the convolution kernel").
# PART=tests: the convolution tests (conv2d, transposed, their gradients, the layers) on every
# backend (cuda on the GPU, wgpu on NVIDIA's Vulkan). PART=bench: bench/conv_gpu_bench.py
# with BENCH_ARGS. PART=cnn: bench/autodiff_gpu_bench.py (its CNN step: forward and backward)
# and bench/conv_transpose_gpu_bench.py. From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
if [ "${PART:-tests}" = tests ]; then
    date -u | tee $OUT/tests.log
    python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/burn/test_conv.py \
        tests/burn/test_conv_transpose.py tests/burn/test_autodiff.py tests/burn/test_nn.py \
        2>&1 | tail -6 | tee -a $OUT/tests.log
    date -u | tee -a $OUT/tests.log
elif [ "$PART" = cnn ]; then
    python3 bench/autodiff_gpu_bench.py 2>&1 | tee $OUT/cnn.log
    python3 bench/conv_transpose_gpu_bench.py 2>&1 | tee $OUT/conv-transpose.log
else
    log=$OUT/bench.log
    case "${BENCH_ARGS:-}" in *--profile*) log=$OUT/profile.log ;; esac
    date -u | tee $log
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee -a $log
    python3 bench/conv_gpu_bench.py ${BENCH_ARGS:-} 2>&1 | tee -a $log
    date -u | tee -a $log
fi
