#!/usr/bin/env bash
# Run 88 on the H200 machine (BENCHMARKS.md): after the fifteenth session's review fixes
# (integer division by zero, float //, % and ** as NumPy's, int64 widening and literal zero
# divisors on wgsl, rsqrt and tile sums on cpu), check them where CI cannot: every GPU test on
# the H200 (Triton compiles the new helpers for sm_90 and runs them), the conformance and
# error suites on the NVIDIA Vulkan adapter (a second WGSL compiler and driver besides
# lavapipe), and the cpu tests under that machine's Numba and NumPy 2.5. Logs go to $OUT.
# From the repo root, with .whl/ and .gl/ carried:
#   bash bench/h200_review_run.sh
set -u
source bench/h200_env.sh
{ date -u; python3 -c "import numba, numpy, triton, wgpu, os; print('numba', numba.__version__, \
'numpy', numpy.__version__, 'triton', triton.__version__, 'wgpu', wgpu.__version__, \
'cores', os.cpu_count())"; } | tee $OUT/review.log
echo "== every GPU test (Triton on the H200)" | tee -a $OUT/review.log
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests 2>&1 | tail -3 | tee -a $OUT/review.log
echo "== conformance and errors on the NVIDIA Vulkan adapter (wgsl)" | tee -a $OUT/review.log
CUBEPY_WGPU_ADAPTER=NVIDIA python3 -m pytest -q -p no:cacheprovider -n 8 -k wgsl \
    tests/conformance tests/test_errors_review.py tests/wgsl 2>&1 | tail -25 | tee -a $OUT/review.log
echo "== cpu under this machine's Numba and NumPy" | tee -a $OUT/review.log
python3 -m pytest -q -p no:cacheprovider -n 8 -k "cpu" tests/conformance tests/cpu \
    tests/test_errors_review.py 2>&1 | tail -3 | tee -a $OUT/review.log
date -u | tee -a $OUT/review.log
