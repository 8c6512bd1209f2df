"""cpu (and partly wgsl): fast-math rewrites that change results NumPy defines.

    python bench/fuzz_cases/cpu_fastmath_folds.py [target]

Found (and shrunk) by bench/fuzz_differential.py. The cpu target compiles with Numba's
fastmath={'reassoc', 'contract', 'arcp', 'nsz', 'afn'} (backends/cpu/codegen.py FASTMATH); the
comment there allows reassociation in reductions and fma contraction, but LLVM applies the flags
to every expression:
- reassoc: x - (x - x) -> x and x + fma(x, x, x) -> x*(x + 2): inf in, -inf/inf out (NumPy nan)
- afn/reassoc: exp(log(x)) -> x: log(-2) is nan, the result -2.0 (also on wgsl, lavapipe's fold)
- arcp: x / s -> x * (1 / s): a subnormal s makes 1/s inf, so 0.0 / -5e-324 gives nan (NumPy
  -0.0) and, inside `//`, x // x of the smallest subnormal gives inf (NumPy 1.0)
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def folds(x, o_sub, o_fma, o_explog, o_fdiv, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    a = cube.load(x + offs, mask=offs < n)
    cube.store(o_sub + offs, a - (a - a), mask=offs < n)
    cube.store(o_fma + offs, a + cube.fma(a, a, a), mask=offs < n)
    cube.store(o_explog + offs, cube.exp(cube.log(a)), mask=offs < n)
    cube.store(o_fdiv + offs, a // a, mask=offs < n)


@cube.kernel
def divide_by_scalar(x, s, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n) / s, mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "cpu"
x = np.array([-np.inf, -2.0, -1.401298464324817e-45, 3.0], np.float32)
outs = [np.zeros_like(x) for _ in range(4)]
folds[(1,)](x, *outs, len(x), BLOCK=4, target=target)
with np.errstate(all="ignore"):
    wants = [x - (x - x), x + (x * x + x), np.exp(np.log(x)), np.floor_divide(x, x)]
print("x =", x.tolist())
for name, got, want in zip(["x - (x - x)", "x + fma(x,x,x)", "exp(log(x))", "x // x"], outs,
                           wants):
    print(f"{name:15s} got {got.tolist()}\n{'':15s} want {want.tolist()}")
xs = np.array([0.0, 1e-320], np.float64)
out = np.zeros_like(xs)
divide_by_scalar[(1,)](xs, np.float64(-5e-324), out, 2, BLOCK=2, target=target)
print("x / -5e-324 for x =", xs.tolist(), "got", out.tolist(), "want", (xs / -5e-324).tolist())
