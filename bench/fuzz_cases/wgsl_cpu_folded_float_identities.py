"""Float identities folded without IEEE's special cases: x * 0.0, x - x (wgsl), x + 0.0, 0.0 - x
(wgsl and cpu).

    python bench/fuzz_cases/wgsl_cpu_folded_float_identities.py [target]

Found by bench/fuzz_differential.py. NumPy (IEEE) answers:
    inf * 0.0 = nan, -2.0 * 0.0 = -0.0, inf - inf = nan, -0.0 + 0.0 = +0.0, 0.0 - 0.0 = +0.0
wgsl (lavapipe) gives 0.0, 0.0, 0.0 (the NaN is lost: a silent wrong value), -0.0, -0.0; cpu gives
the right NaNs but -0.0 for the last two (Numba compiles with fastmath's `nsz`, which lets LLVM
fold x + 0.0 -> x and 0.0 - x -> -x). triton and cpu:debug give NumPy's answers.
docs/language.md leaves no sign of zero unspecified here, and no NaN anywhere.
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def identities(x, o_mul0, o_sub_self, o_add0, o_zero_sub, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    a = cube.load(x + offs, mask=offs < n)
    cube.store(o_mul0 + offs, a * 0.0, mask=offs < n)
    cube.store(o_sub_self + offs, a - a, mask=offs < n)
    cube.store(o_add0 + offs, a + 0.0, mask=offs < n)
    cube.store(o_zero_sub + offs, 0.0 - a, mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "wgsl"
x = np.array([np.inf, -2.0, -0.0, 0.0, np.nan, 3.0], np.float32)
outs = [np.full(x.size, 7.0, np.float32) for _ in range(4)]
identities[(1,)](x, *outs, x.size, BLOCK=8, target=target)
with np.errstate(all="ignore"):
    want = [x * np.float32(0.0), x - x, x + np.float32(0.0), np.float32(0.0) - x]
for name, got, ref in zip(["x * 0.0", "x - x", "x + 0.0", "0.0 - x"], outs, want):
    same = [np.array_equal(g, r, equal_nan=True) and np.signbit(g) == np.signbit(r)
            for g, r in zip(got, ref)]
    print(f"{name:8s} x={x.tolist()}\n         got {got.tolist()}\n    expected {ref.tolist()}"
          f"{'' if all(same) else '   <-- differs'}")
