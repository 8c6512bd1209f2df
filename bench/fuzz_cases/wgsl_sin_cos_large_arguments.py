"""wgsl: sin/cos of large arguments are wrong (float32 from ~1e8; float64 from ~1e9, NaN past 1e15).

    python bench/fuzz_cases/wgsl_sin_cos_large_arguments.py [target]

Found by bench/fuzz_differential.py (`cube.cos(3.4028235e38)` gave 1.0, NumPy 0.853). float32 uses
the adapter's sin/cos (lavapipe: ±1.0 for |x| >= ~3e8; WGSL only bounds the error on [-pi, pi]);
float64 uses cubepy's own sincos_f64 (codegen_f64.py), whose 3-part Cody-Waite reduction loses
digits as k grows and which returns NaN on purpose for |x| > 1e15. Neither limit is in
docs/language.md. cpu, cpu:debug and triton match NumPy within an ulp or two at every size.
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def sincos(x, o_sin, o_cos, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    a = cube.load(x + offs, mask=offs < n)
    cube.store(o_sin + offs, cube.sin(a), mask=offs < n)
    cube.store(o_cos + offs, cube.cos(a), mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "wgsl"
for dtype in (np.float32, np.float64):
    x = np.array([1e7, 1e8, 1e9, 1e11, 1e13, 1e15, 1e16, 3.4028234663852886e38], dtype)
    s, c = np.zeros_like(x), np.zeros_like(x)
    sincos[(1,)](x, s, c, len(x), BLOCK=8, target=target)
    for xi, si, ci in zip(x.astype(np.float64), s, c):
        print(f"{np.dtype(dtype).name} x={xi:.3g}: sin {si!r} (NumPy {np.sin(xi):.8f}), "
              f"cos {ci!r} (NumPy {np.cos(xi):.8f})")
