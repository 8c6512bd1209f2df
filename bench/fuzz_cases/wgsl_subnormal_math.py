"""wgsl: float32 log2/pow of subnormal inputs and exp2 with subnormal results are wrong.

    python bench/fuzz_cases/wgsl_subnormal_math.py [target]

Found by bench/fuzz_differential.py. lavapipe's log2 reads a subnormal as 2**-127-ish
(log2(4.2e-45) = -127.0, NumPy -147.4), so pow(x, y) = exp2(y * log2(x)) of a subnormal x is off
by tens of percent (2**-127 ** 0.75: 2.88e-29, NumPy 2.12e-29), and exp2 flushes subnormal
results to 0 (exp2(-141.0) read from an array = 0, NumPy 3.6e-43). Plain loads and stores keep
subnormals on wgsl, and docs/language.md says nothing of subnormals. cpu, cpu:debug, triton
match NumPy.
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def subnormal_math(x, e, o_log2, o_pow, o_exp2, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    a = cube.load(x + offs, mask=offs < n)
    cube.store(o_log2 + offs, cube.log2(a), mask=offs < n)
    cube.store(o_pow + offs, a ** 0.75, mask=offs < n)
    cube.store(o_exp2 + offs, cube.exp2(cube.load(e + offs, mask=offs < n)), mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "wgsl"
x = np.array([4.203895392974451e-45, 5.877471754111438e-39, 1e-40], np.float32)
outs = [np.zeros_like(x) for _ in range(3)]
subnormal_math[(1,)](x, np.array([-141.0, -145.0, -149.0], np.float32), *outs, len(x), BLOCK=4, target=target)  # noqa: E501
x64 = x.astype(np.float64)
for name, got, want in zip(["log2(x)", "x ** 0.75", "exp2(e)"], outs,
                           [np.log2(x64), x64 ** 0.75, np.exp2(np.array([-141.0, -145.0, -149.0]))]):  # noqa: E501
    print(f"{name:10s} got {got.tolist()}\n           want {want.astype(np.float32).tolist()}")
