#!/usr/bin/env bash
# Runs 90-93 on the H200 machine (BENCHMARKS.md): attention's backward pass with dQ summed by
# float32 atomics in the dK/dV kernel (five block products instead of seven). Logs and JSON
# go to $OUT. From the repo root, with .whl/ and .gl/ carried:
#   MODE=sweep bash bench/h200_atomic_dq_run.sh     # run 90 (atomics then acq_rel)
#   MODE=relaxed bash bench/h200_atomic_dq_run.sh   # run 91: the atomic configs, relaxed
#   MODE=tuned bash bench/h200_atomic_dq_run.sh     # run 92: the probe, the tuned comparison
#   MODE=tests bash bench/h200_atomic_dq_run.sh     # run 93: every GPU test, wgsl on NVIDIA
set -u
source bench/h200_env.sh
MODE=${MODE:-tuned}
LOG=$OUT/atomic-dq-$MODE.log
{ date -u; python3 -c "import numba, numpy, triton, torch, os; print('numba', numba.__version__, \
'numpy', numpy.__version__, 'triton', triton.__version__, 'torch', torch.__version__, \
'cores', os.cpu_count())"; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv; } | tee $LOG
case $MODE in
sweep)
    echo "== the backward's GPU tests" | tee -a $LOG
    python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests/test_flash_attention_backward.py \
        2>&1 | tail -5 | tee -a $LOG
    echo "== every tuner config vs torch (bf16)" | tee -a $LOG
    python3 bench/h200_attention_backward.py --sweep --out $OUT/atomic-dq-sweep.json 2>&1 | tee -a $LOG ;;
relaxed)
    echo "== the atomic configs, relaxed, vs torch (bf16)" | tee -a $LOG
    python3 bench/h200_attention_backward.py --sweep --atomic-only \
        --out $OUT/atomic-relaxed-sweep.json 2>&1 | tee -a $LOG ;;
tuned)
    echo "== an atomic add's memory order" | tee -a $LOG
    python3 bench/atomic_sem_probe.py 2>&1 | tee -a $LOG
    echo "== attention backward vs torch (bf16, tuned)" | tee -a $LOG
    python3 bench/h200_attention_backward.py --out $OUT/atomic-dq-tuned.json 2>&1 | tee -a $LOG ;;
tests)
    echo "== every GPU test (Triton on the H200)" | tee -a $LOG
    python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests 2>&1 | tail -5 | tee -a $LOG
    echo "== atomics, math and the backward on the NVIDIA Vulkan adapter (wgsl)" | tee -a $LOG
    CUBEPY_WGPU_ADAPTER=NVIDIA python3 -m pytest -q -p no:cacheprovider -n 8 -k wgsl \
        tests/test_flash_attention_backward.py tests/conformance/test_memory.py \
        tests/conformance/test_math_edges.py 2>&1 | tail -5 | tee -a $LOG ;;
esac
date -u | tee -a $LOG
