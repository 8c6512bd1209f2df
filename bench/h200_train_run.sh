#!/usr/bin/env bash
# burn.train, burn.data and the thread-safe wgsl runtime on the H200 machine (BENCHMARKS.md,
# "H200: burn.train and burn.data"). PART=tests: their tests on every backend (cuda on the GPU,
# wgpu on NVIDIA's Vulkan), the wgsl runtime tests and burn's wgpu op suite on NVIDIA, and the
# classifier example on cuda (plain, fused, killed and resumed) and wgpu. PART=bench:
# bench/train_gpu_bench.py. PART=conv: the transposed convolutions' tests and
# bench/conv_transpose_gpu_bench.py. From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
if [ "${PART:-tests}" = tests ]; then
    date -u | tee $OUT/tests.log
    python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/burn/test_train.py \
        tests/burn/test_data.py tests/burn/test_schedule.py tests/burn/test_fusion.py \
        tests/burn/test_docstrings.py tests/test_wgsl_threads.py 2>&1 | tail -6 \
        | tee -a $OUT/tests.log
    echo "the same files, -m gpu:" | tee -a $OUT/tests.log
    python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu tests/burn/test_train.py \
        tests/burn/test_data.py tests/burn/test_schedule.py tests/burn/test_fusion.py 2>&1 \
        | tail -2 | tee -a $OUT/tests.log
    echo "wgsl runtime tests and burn's op suite on wgpu (NVIDIA):" | tee -a $OUT/tests.log
    python3 -m pytest -q -p no:cacheprovider -n 16 -rf tests/wgsl tests/burn -k "wgsl or wgpu" \
        2>&1 | tail -6 | tee -a $OUT/tests.log
    date -u | tee -a $OUT/tests.log
    for backend in cuda wgpu; do
        for fusion in "" --fusion; do
            echo "train_classifier.py --backend $backend $fusion" | tee -a $OUT/tests.log
            python3 examples/train_classifier.py --backend $backend $fusion 2>&1 | tail -3 \
                | tee -a $OUT/tests.log
        done
    done
    echo "interrupted (SIGINT) once epoch 5's checkpoint is written, then resumed:" \
        | tee -a $OUT/tests.log
    # job control on: without it a background job ignores SIGINT (bash's rule)
    set -m
    python3 examples/train_classifier.py --backend cuda --epochs 40 --checkpoints /tmp/run \
        > /tmp/run.log 2>&1 &
    pid=$!
    set +m
    while [ ! -d /tmp/run/epoch-0004 ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
    kill -INT $pid; wait $pid; echo "rc=$?" | tee -a $OUT/tests.log
    tail -2 /tmp/run.log | tee -a $OUT/tests.log
    ls /tmp/run | tee -a $OUT/tests.log
    python3 examples/train_classifier.py --backend cuda --epochs 40 --checkpoints /tmp/run \
        --resume 2>&1 | grep -v "^epoch \([0-9]\|[1-3][0-9]\)/" | tee -a $OUT/tests.log
    date -u | tee -a $OUT/tests.log
elif [ "${PART:-tests}" = bench ]; then
    python3 bench/train_gpu_bench.py 2>&1 | grep -v "^cubepy.autotune" | tee $OUT/train_bench.log
fi
if [ "${PART:-tests}" = conv ]; then  # the transposed convolutions (run 128)
    python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/burn/test_conv_transpose.py \
        tests/burn/test_train.py tests/burn/test_docstrings.py 2>&1 | tail -4 \
        | tee $OUT/conv_tests.log
    python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/burn/test_autodiff.py \
        tests/burn/test_conv.py -k "conv or pool" 2>&1 | tail -3 | tee -a $OUT/conv_tests.log
    python3 bench/conv_transpose_gpu_bench.py 2>&1 | grep -v "^cubepy.autotune" \
        | tee $OUT/conv_bench.log
fi
