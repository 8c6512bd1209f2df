#!/usr/bin/env bash
# The Fusion backend on the H200 machine (BENCHMARKS.md, "H200: burn's Fusion backend"):
# its tests, then burn's whole op suite with every backend wrapped in Fusion (cpu, cuda on the
# GPU, wgpu on NVIDIA's Vulkan), the spirals example fused on cuda and wgpu, and (unless
# BENCH=0) bench/fusion_gpu_bench.py, bench/fusion_host_probe.py (also without multiply-add
# contraction), bench/fusion_kernel_probe.py, bench/autodiff_gpu_bench.py (plain and fused) and bench/autodiff_profile.py.
# From the repo root, with .whl/ and .gl/ carried; logs go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
date -u | tee $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/burn/test_fusion.py 2>&1 | tail -6 \
    | tee -a $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 16 -rf --fusion tests/burn 2>&1 | tail -12 \
    | tee -a $OUT/tests.log
date -u | tee -a $OUT/tests.log
for backend in cuda wgpu; do  # fused, then unfused for the time
    for fusion in --fusion ""; do
        echo "train_mlp.py $fusion --backend $backend" | tee -a $OUT/tests.log
        python3 examples/train_mlp.py $fusion --backend $backend 2>&1 | tail -1 \
            | tee -a $OUT/tests.log
    done
done
if [ "${BENCH:-1}" = 1 ]; then
    python3 bench/fusion_gpu_bench.py 2>&1 | grep -v "^cubepy.autotune" | tee $OUT/fusion_bench.log
    python3 bench/fusion_host_probe.py 2>&1 | grep -v "^ \{5,\}[0-9]" | tee $OUT/probe.log
    # the bf16 chains without multiply-add contraction: bit-equal to the unfused ops?
    TRITON_DEFAULT_FP_FUSION=0 TRITON_CACHE_DIR=/tmp/tc-nofma python3 bench/fusion_host_probe.py \
        2>&1 | grep "^bf16" | sed 's/^/no fma: /' | tee -a $OUT/probe.log
    python3 bench/fusion_kernel_probe.py 2>&1 | grep -v "^cubepy.autotune" | tee -a $OUT/probe.log
    python3 bench/autodiff_gpu_bench.py 2>&1 | grep -v "^cubepy.autotune" \
        | tee $OUT/autodiff_bench.log
    python3 bench/autodiff_profile.py 2>&1 | grep -v "^cubepy.autotune" | tee $OUT/profile.log
    date -u | tee -a $OUT/tests.log
fi
