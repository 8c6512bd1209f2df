#!/usr/bin/env bash
# The Autodiff backend on the H200 machine (BENCHMARKS.md, "H200: burn's Autodiff
# backend"): the gradient checks, API, nn, optim and pointwise tests on every backend there
# (cpu, wgpu on NVIDIA's Vulkan, cuda on the GPU), the spirals example on cuda and wgpu, and (unless BENCH=0)
# bench/autodiff_gpu_bench.py. From the repo root, with .whl/ and .gl/ carried; logs go to
# $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
date -u | tee $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/burn/test_autodiff.py \
    tests/burn/test_autodiff_api.py tests/burn/test_nn.py tests/burn/test_optim.py \
    tests/burn/test_pointwise.py 2>&1 | tail -8 | tee -a $OUT/tests.log
date -u | tee -a $OUT/tests.log
for backend in cuda wgpu; do
    python3 examples/train_mlp.py --backend $backend 2>&1 | tail -3 | tee -a $OUT/tests.log
done
if [ "${BENCH:-1}" = 1 ]; then
    python3 bench/autodiff_gpu_bench.py 2>&1 | tee $OUT/bench.log
    date -u | tee -a $OUT/tests.log
fi
