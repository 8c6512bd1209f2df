"""cpu and cpu:debug: `x ** 0.5` was sqrt(x), which differs from C99's pow at -0.0 and -inf.

    python bench/fuzz_cases/cpu_pow_half_is_sqrt.py [target]

Found by bench/fuzz_differential.py: seed 300000925 (cpu, float16 (-0.0) ** 0.5 gave -0.0,
NumPy +0.0) and seed 300001227 (cpu:debug, a min over a tile holding (-inf) ** 0.5 gave NaN,
NumPy inf). cpu: LLVM rewrites pow(x, 0.5) as sqrt(x) under fastmath's `nsz`, with a select
for -inf but no fabs for -0.0. cpu:debug: NumPy itself computes `array ** 0.5`, and np.power
by a scalar or broadcast 0.5, as np.sqrt ((-inf) ** 0.5 is NaN there; NumPy scalars and an
exponent array of its own take C's pow). Fixed: helpers.fpow is compiled without `nsz`, and
debug mode runs helpers.fpow_debug, which hands np.power an exponent array of its own.
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def lanes(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n) ** 0.5, mask=offs < n)


@cube.kernel
def tile(x, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)[:, None] * B + cube.arange(0, B)[None, :]
    cube.store(out + offs, cube.load(x + offs) ** 0.5)


target = sys.argv[1] if len(sys.argv) > 1 else "cpu"
x = np.array([-0.0, -np.inf, 4.0, 0.0], np.float64)
with np.errstate(invalid="ignore"):
    want = np.power(x, np.full(4, 0.5))
for name, kernel, args in [("lanes", lanes, dict(n=4, BLOCK=4)), ("tile", tile, dict(B=2))]:
    out = np.zeros(4)
    kernel[(1,)](x, out, **args, target=target)
    print(f"{name:5s} x {x.tolist()} got {out.tolist()} want {want.tolist()}")
