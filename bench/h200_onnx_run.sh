#!/usr/bin/env bash
# burn.onnx on the H200 machine (BENCHMARKS.md, "H200: ONNX import"). PARTS (default
# "tests bench"): tests, the ONNX tests on the GPU backends (cuda/triton on the H200,
# wgpu/wgsl on NVIDIA's Vulkan) and the host-side ones; bench, bench/onnx_gpu_bench.py
# (torch-exported models imported and timed beside torch and onnxruntime) on Cuda, then on
# Wgpu. From the repo root, with .whl/ and .gl/ carried; logs and JSON go to $OUT.
set -u
source bench/h200_env.sh
export CUBEPY_WGPU_ADAPTER=NVIDIA
PARTS=${PARTS:-tests bench}
if [[ $PARTS == *tests* ]]; then
    gpu_tests -k "not cpu" tests/burn/test_onnx_ops.py tests/burn/test_onnx_models.py \
        tests/burn/test_onnx_proto.py
    python3 -c "import onnx, torch; print('onnx', onnx.__version__, 'torch', torch.__version__)" \
        | tee -a $OUT/tests.log
fi
if [[ $PARTS == *bench* ]]; then
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/bench.log
    for backend in cuda wgpu; do
        python3 -W ignore bench/onnx_gpu_bench.py --backend $backend \
            --out $OUT/onnx-$backend.json ${BENCH_ARGS:-} 2>&1 | grep -v "^cubepy.autotune" \
            | tee -a $OUT/bench.log
    done
    date -u | tee -a $OUT/bench.log
fi
