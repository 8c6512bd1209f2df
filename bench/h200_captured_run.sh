#!/usr/bin/env bash
# burn.train.CapturedStep on the H200 machine (BENCHMARKS.md, "H200: captured training
# steps"). PARTS (default "tests bench example"; also cnn): tests, the tests of captured
# steps, the capturable optimizers, the transformer example and the launch records on every
# backend and target (cuda/triton on the GPU, wgpu/wgsl on NVIDIA's Vulkan, the CPU); bench,
# bench/transformer_gpu_bench.py captured and eager, with GPU kernel times; example, the
# transformer example trained eagerly and captured; cnn, bench/cnn_captured_gpu_bench.py
# with CNN_ARGS. From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
PARTS=${PARTS:-tests bench example}
if [[ $PARTS == *tests* ]]; then
    gpu_tests ${TESTS:-tests/burn/test_captured.py tests/burn/test_optim.py \
        tests/burn/test_transformer.py tests/burn/test_index.py tests/test_launch_trace.py}
fi
if [[ $PARTS == *bench* ]]; then
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/bench.log
    for mode in --captured ""; do
        python3 bench/transformer_gpu_bench.py --gpu-time $mode ${BENCH_ARGS:-} 2>&1 \
            | grep -v "^cubepy.autotune" | tee -a $OUT/bench.log
    done
    date -u | tee -a $OUT/bench.log
fi
if [[ $PARTS == *cnn* ]]; then
    python3 bench/cnn_captured_gpu_bench.py ${CNN_ARGS:-} 2>&1 | grep -v "^cubepy.autotune" \
        | tee $OUT/cnn.log
fi
if [[ $PARTS == *example* ]]; then
    for mode in "" --captured; do
        python3 examples/train_transformer.py --backend cuda $mode 2>&1 \
            | grep -v "^cubepy.autotune" | tail -3 | tee -a $OUT/example.log
    done
fi
