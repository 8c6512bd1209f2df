"""float32 erf of small arguments on wgsl: up to 2 % off (erf(9.37e-6) gave 1.0371e-5, not
1.0577e-5; erf(0.0584) was 40 ulp off).

    python bench/fuzz_cases/wgsl_erf_small_arguments.py [target]

Found by bench/fuzz_differential.py (seeds 7000978 and 7001281, campaign of 2026-12-02). wgsl's
float32 erf was Numerical Recipes' erfc fit, 1 - t exp(p), whose absolute error (1.2e-7) is
the whole value for small |x|. Fixed: below |x| = 0.5 it sums the Maclaurin series to x^11
(`erf` in cubepy/backends/wgsl/codegen_types.py); test `test_float32_erf_within_a_few_ulp`.
"""
import math
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def erf_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.erf(cube.load(x + offs, mask=offs < n)), mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "wgsl"
x = np.array([9.37e-6, 1e-4, 0.01, 0.0584, 0.1, 0.3, 0.49, 0.8], np.float32)
out = np.zeros_like(x)
erf_kernel[(1,)](x, out, len(x), BLOCK=8, target=target)
want = np.array([math.erf(v) for v in x.astype(np.float64)])
print("x          ", x.tolist())
print("got        ", out.tolist())
print("ulps off   ", (np.abs(out - want) / np.spacing(want.astype(np.float32))).round(1).tolist())
