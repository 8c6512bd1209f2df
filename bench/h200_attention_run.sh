#!/usr/bin/env bash
# burn's fused attention on the H200 machine (BENCHMARKS.md, "H200: attention in burn").
# PART=tests: the attention tests (burn's op and layers, the transformer example, the
# examples' kernels) and the convolution tests on every backend and target (cuda/triton on
# the GPU, wgpu/wgsl on NVIDIA's Vulkan, the CPU). PART=bench: bench/attention_gpu_bench.py
# with BENCH_ARGS, the stem convolution (bench/conv_gpu_bench.py --cases 6) and the
# transformer example trained on the GPU. From the repo root, with .whl/ and .gl/ carried;
# logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
if [ "${PART:-tests}" = tests ]; then
    date -u | tee $OUT/tests.log
    python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/burn/test_attention.py \
        tests/burn/test_transformer.py tests/burn/test_conv.py \
        tests/test_flash_attention.py tests/test_flash_attention_backward.py \
        2>&1 | tail -8 | tee -a $OUT/tests.log
    date -u | tee -a $OUT/tests.log
else
    date -u | tee $OUT/bench.log
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee -a $OUT/bench.log
    python3 bench/attention_gpu_bench.py --json $OUT/bench.json ${BENCH_ARGS:-} 2>&1 \
        | tee -a $OUT/bench.log
    python3 bench/conv_gpu_bench.py --cases 6 2>&1 | tee $OUT/conv-stem.log
    python3 examples/train_transformer.py --backend cuda 2>&1 | tee $OUT/transformer.log
    date -u | tee -a $OUT/bench.log
fi
