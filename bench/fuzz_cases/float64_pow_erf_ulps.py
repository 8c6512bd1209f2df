"""float64 `pow` (triton interpreter, wgsl) and `erf` (wgsl): 5-25 ulp off, ~1000 near overflow.

    python bench/fuzz_cases/float64_pow_erf_ulps.py [target]

Found by bench/fuzz_differential.py (seeds 300000929, 300000964, 300000980: 6.2554 ** 6.2554
off by 9 ulp on the interpreter; erf(2.3189) by 25 ulp on wgsl). pow was exp2(y log2 x) in
float64: the log's rounding is scaled by y, so the error grows as |y ln x| ulps (770 where the
result nears 1e308). wgsl's erf summed the alternating Maclaurin series up to |x| = 3, which
cancels. Fixed: the interpreter's _pow takes log x in double-double (within 2 ulp); wgsl's erf
sums a series of positive terms below 1.5 and erfc's continued fraction above (within 3 ulp).
wgsl's pow keeps exp(y log x): lavapipe reassociates float sums, which zeroes the error terms
double-double arithmetic needs; its bound is documented (docs/language.md).
"""
import math
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def pow_erf(x, y, o_pow, o_erf, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    m = offs < n
    a = cube.load(x + offs, mask=m)
    cube.store(o_pow + offs, a ** cube.load(y + offs, mask=m), mask=m)
    cube.store(o_erf + offs, cube.erf(a), mask=m)


target = sys.argv[1] if len(sys.argv) > 1 else "triton"
x = np.array([6.25540049529539, 3.1065307230634893, 1.1, 2.3189436492477546])
y = np.array([6.25540049529539, 5.652432619796404, 7400.0, 1.0])
o_pow, o_erf = np.zeros(4), np.zeros(4)
pow_erf[(1,)](x, y, o_pow, o_erf, 4, BLOCK=4, target=target)
want_pow, want_erf = np.power(x, y), np.array([math.erf(v) for v in x])
print("x ** y ulps off", np.round(np.abs(o_pow - want_pow) / np.spacing(want_pow), 1).tolist())
print("erf(x) ulps off", np.round(np.abs(o_erf - want_erf) / np.spacing(want_erf), 1).tolist())
