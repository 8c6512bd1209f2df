#!/usr/bin/env bash
# Run 89 on the H200 machine (BENCHMARKS.md): after the sixteenth session (attention's
# backward pass, the autotuner review, burn's cpu reductions, the differential fuzzer's
# fixes): every GPU test on the H200, the attention backward pass autotuned against torch's
# fused backward, and the new kernels' tests on the NVIDIA Vulkan adapter (wgsl). Logs and
# JSON go to $OUT. From the repo root, with .whl/ and .gl/ carried:
#   bash bench/h200_backward_run.sh
set -u
source bench/h200_env.sh
LOG=$OUT/backward.log
{ date -u; python3 -c "import numba, numpy, triton, torch, os; print('numba', numba.__version__, \
'numpy', numpy.__version__, 'triton', triton.__version__, 'torch', torch.__version__, \
'cores', os.cpu_count())"; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv; } | tee $LOG
echo "== attention backward vs torch (bf16, tuned)" | tee -a $LOG
python3 bench/h200_attention_backward.py --out $OUT/attention-backward.json 2>&1 | tee -a $LOG
echo "== every GPU test (Triton on the H200)" | tee -a $LOG
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests 2>&1 | tail -5 | tee -a $LOG
echo "== attention backward and autotune on the NVIDIA Vulkan adapter (wgsl)" | tee -a $LOG
CUBEPY_WGPU_ADAPTER=NVIDIA python3 -m pytest -q -p no:cacheprovider -n 8 -k wgsl \
    tests/test_flash_attention_backward.py tests/autotune tests/conformance 2>&1 | tail -5 | tee -a $LOG
date -u | tee -a $LOG
