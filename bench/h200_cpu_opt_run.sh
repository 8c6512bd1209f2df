#!/usr/bin/env bash
# Run 94 on the H200 machine (BENCHMARKS.md): cpu kernels compiled at CUBEPY_CPU_OPT=2 (the new
# default) against 3 (Numba's default, what cubepy used before): cold compile times
# (bench/cpu_compile_probe.py --levels 3,2) and run times (bench/cpu_bench.py, the burn
# reductions), then the cpu tests under that machine's Numba and every GPU test. Logs go to
# $OUT. From the repo root, with .whl/ and .gl/ carried (two calls: each fits the device's
# ten-minute limit):
#   bash bench/h200_cpu_opt_run.sh bench
#   bash bench/h200_cpu_opt_run.sh tests
set -u
MODE=${1:?usage: h200_cpu_opt_run.sh bench|tests}
OUT=${OUT:-/tmp/h200-out}
source .whl/gpu-env.sh
export TRITON_DEFAULT_FP_FUSION=1 PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tc
export XDG_RUNTIME_DIR=/tmp/xdg; mkdir -p -m 700 $XDG_RUNTIME_DIR $OUT
if [ "$MODE" = bench ]; then
{ date -u; python3 -c "import numba, llvmlite, numpy, os; print('numba', numba.__version__, \
'llvmlite', llvmlite.__version__, 'numpy', numpy.__version__, 'cores', os.cpu_count())"; } \
    | tee $OUT/cpu-opt.log
python3 bench/cpu_compile_probe.py --levels 3,2 --turns 2 2>&1 | tee -a $OUT/cpu-opt.log
for level in 3 2; do
    echo "== CUBEPY_CPU_OPT=$level" | tee -a $OUT/cpu-opt.log
    CUBEPY_CPU_OPT=$level CUBEPY_CACHE_DIR=/tmp/cc-$level NUMBA_CACHE_DIR=/tmp/cc-$level/numba \
        python3 bench/cpu_bench.py --only gelu,softmax,matmul 2>&1 | grep "^|" | tee -a $OUT/cpu-opt.log
    CUBEPY_CPU_OPT=$level CUBEPY_CACHE_DIR=/tmp/cc-$level NUMBA_CACHE_DIR=/tmp/cc-$level/numba \
        python3 bench/cpu_reduce_probe.py --dtypes float32 --shapes 4096x4096,64x65536 2>&1 \
        | tee -a $OUT/cpu-opt.log
done
exit 0
fi
export CUBEPY_CACHE_DIR=/tmp/cc
date -u | tee $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 8 tests/cpu tests/conformance/test_shapes.py \
    -k "not triton and not wgsl" 2>&1 | tail -2 | tee -a $OUT/tests.log
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests 2>&1 | tail -2 | tee -a $OUT/tests.log
date -u | tee -a $OUT/tests.log
