"""triton (interpreter): `x ** -k` for a whole k was 1 / x ** k, which overflows first.

    python bench/fuzz_cases/triton_pow_negative_whole_exponent.py [target]

Found by bench/fuzz_differential.py (seed 300001129: int8 `a ** a`, (-28) ** -28 gave 0, NumPy
3.0e-41). int8 ** int8 computes in float32, where 28 ** 28 = 3.3e40 overflows to inf and 1 / inf
is 0, though 28 ** -28 is a float32 subnormal. The constant `x ** -2` (1 / (x * x)) on every
triton device and wgsl's `powi` (constant whole exponents, f32 and f64) did the same for x past
sqrt(max). Fixed: the interpreter's _pow squares in float64, and takes (1 / |x|) ** k where
|x| ** k overflows; `x ** -2` is (1 / x) * (1 / x) where x * x overflows; wgsl's powi
retries with 1 / x.
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def pow_kernel(x, k, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    m = offs < n
    a = cube.load(x + offs, mask=m)
    cube.store(out + offs, a ** cube.load(k + offs, mask=m), mask=m)
    cube.store(out + n + offs, a ** -2, mask=m)


target = sys.argv[1] if len(sys.argv) > 1 else "triton"
x = np.array([-28.0, 2e19, 3.0], np.float32)
k = np.array([-28.0, -2.0, -5.0], np.float32)
out = np.zeros(6, np.float32)
pow_kernel[(1,)](x, k, out, 3, BLOCK=4, target=target)
x64 = x.astype(np.float64)
print("x ** k  got", out[:3].tolist(), "want", (x64 ** k).astype(np.float32).tolist())
print("x ** -2 got", out[3:].tolist(), "want", (x64 ** -2.0).astype(np.float32).tolist())
