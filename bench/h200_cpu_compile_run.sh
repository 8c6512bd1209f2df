#!/usr/bin/env bash
# Run 87 on the H200 machine (BENCHMARKS.md): the cpu target's cold compile without Numba's
# wrappers for callees (bench/cpu_compile_probe.py against the previous revision, carried in
# .cache/before), the cpu tests under that machine's Numba, the example's tuned matmul on the
# NVIDIA Vulkan adapter, and every GPU test. Logs go to $OUT. From the repo root, with .whl/,
# .gl/ and .cache/before carried:
#   bash bench/h200_cpu_compile_run.sh
set -u
source bench/h200_env.sh
{ date -u; python3 -c "import numba, llvmlite, numpy, os; print('numba', numba.__version__, \
'llvmlite', llvmlite.__version__, 'numpy', numpy.__version__, 'cores', os.cpu_count())"; } \
    | tee $OUT/cpu-compile.log
python3 bench/cpu_compile_probe.py --other .cache/before --turns 3 2>&1 | tee -a $OUT/cpu-compile.log
date -u | tee $OUT/tests.log
python3 -m pytest -q -p no:cacheprovider -n 8 tests/cpu tests/conformance/test_reductions.py \
    tests/conformance/test_elementwise.py -k "not triton and not wgsl" 2>&1 | tail -2 | tee -a $OUT/tests.log
CUBEPY_WGPU_ADAPTER=NVIDIA python3 -m pytest -q -p no:cacheprovider tests/autotune/test_wgsl_tuning.py \
    tests/test_examples.py -k "wgsl or least_workgroup or own_list" 2>&1 | tail -2 | tee -a $OUT/tests.log
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests 2>&1 | tail -2 | tee -a $OUT/tests.log
date -u | tee -a $OUT/tests.log
