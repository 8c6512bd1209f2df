# Sourced first by the bench/h200_*_run.sh scripts on the H200 machine (from the repo root,
# with .whl/ and .gl/ carried): wgpu and the Vulkan loader (.whl/gpu-env.sh), fused
# multiply-adds in Triton as on our builds, unbuffered logs, scratch caches, and $OUT.
OUT=${OUT:-/tmp/h200-out}
source .whl/gpu-env.sh
export TRITON_DEFAULT_FP_FUSION=1 PYTHONUNBUFFERED=1 CUBEPY_CACHE_DIR=/tmp/cc TRITON_CACHE_DIR=/tmp/tc
export XDG_RUNTIME_DIR=/tmp/xdg; mkdir -p -m 700 $XDG_RUNTIME_DIR $OUT

# gpu_tests PYTEST_ARGS...: pytest on 8 workers, its last 15 lines between two timestamps in
# $OUT/tests.log (the tests part of the run scripts).
gpu_tests() {
    date -u | tee $OUT/tests.log
    python3 -m pytest -q -p no:cacheprovider -n 8 -rfs "$@" 2>&1 | tail -15 | tee -a $OUT/tests.log
    date -u | tee -a $OUT/tests.log
}

# gpu_bench SCRIPT ARGS...: the GPU's clocks, then python3 SCRIPT ARGS (the autotuner's log
# lines dropped) and a timestamp, in $OUT/bench.log (the bench part of the run scripts).
gpu_bench() {
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/bench.log
    python3 -W ignore "$@" 2>&1 | grep -v "^cubepy.autotune" | tee -a $OUT/bench.log
    date -u | tee -a $OUT/bench.log
}

# run_parts BENCH_SCRIPT TEST_FILE...: a run script's body. PARTS (default "tests bench"):
# tests, gpu_tests -k "not cpu" over the test files (the GPU backends: cuda/triton on the
# H200, wgpu/wgsl on NVIDIA's Vulkan); bench, gpu_bench BENCH_SCRIPT ${BENCH_ARGS}.
run_parts() {
    local bench=$1
    shift
    export CUBEPY_WGPU_ADAPTER=NVIDIA
    PARTS=${PARTS:-tests bench}
    if [[ $PARTS == *tests* ]]; then
        gpu_tests -k "not cpu" "$@"
    fi
    if [[ $PARTS == *bench* ]]; then
        gpu_bench "$bench" ${BENCH_ARGS:-}
    fi
}
