#!/usr/bin/env bash
# burn.train.MixedPrecision on the H200 machine (BENCHMARKS.md, "H200: mixed precision").
# PARTS (default "tests example bench"): tests, the precision, training and transformer
# tests on every backend and target (cuda/triton on the GPU, wgpu/wgsl on NVIDIA's Vulkan,
# the CPU); example, the transformer example on cuda captured in float32 and in bfloat16,
# and eagerly in float16 (its dynamic loss scale); bench, bench/transformer_gpu_bench.py
# captured in each of PRECISIONS (default "mixed float32 bf16") with GPU kernel times.
# From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
PARTS=${PARTS:-tests example bench}
if [[ $PARTS == *tests* ]]; then
    gpu_tests ${TESTS:-tests/burn/test_precision.py tests/burn/test_train.py \
        tests/burn/test_transformer.py}
fi
if [[ $PARTS == *example* ]]; then
    for mode in "--captured" "--captured --precision bfloat16" "--precision float16"; do
        echo "train_transformer.py --backend cuda $mode" | tee -a $OUT/example.log
        python3 examples/train_transformer.py --backend cuda $mode 2>&1 \
            | grep -v "^cubepy.autotune" | tail -3 | tee -a $OUT/example.log
    done
fi
if [[ $PARTS == *bench* ]]; then
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/bench.log
    for precision in ${PRECISIONS:-mixed float32 bf16}; do
        python3 bench/transformer_gpu_bench.py --gpu-time --captured --precision $precision \
            ${BENCH_ARGS:-} 2>&1 | grep -v "^cubepy.autotune\|_warn_once\|acc_events" \
            | tee -a $OUT/bench.log
    done
    date -u | tee -a $OUT/bench.log
fi
