"""float32 tanh of small arguments: wrong by up to 100% relative on wgsl and on triton's
interpreter (and float64 on the interpreter loses ~8 digits).

    python bench/fuzz_cases/tanh_small_arguments.py [target]

Found by bench/fuzz_differential.py (`tanh(64.0 / INT64_MIN)` = tanh(-6.9e-18) gave -2.98e-8 on
wgsl). Both compute tanh through 1 - exp(-2|x|) (wgsl: the adapter's own `tanh`, lavapipe's;
triton interpreter: cubepy's `_tanh` in backends/triton/prelude.py, "(1 - t) / (1 + t)"), which
cancels for small |x|: tanh(1e-8) is 0 or 3e-8 instead of 1e-8, tanh(1e-5) is off by ~1e-3
relative (~10^4 ulps), tanh(0.01) by ~20 ulps. cpu and cpu:debug are within an ulp; float16 is
fine everywhere. Small pre-activations are common (GELU's tanh form, RNN gates).
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def tanh_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.tanh(cube.load(x + offs, mask=offs < n)), mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "wgsl"
for dtype in (np.float32, np.float64):
    x = np.array([-5.3e-14, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1], dtype)
    out = np.zeros_like(x)
    tanh_kernel[(1,)](x, out, len(x), BLOCK=8, target=target)
    want = np.tanh(x.astype(np.float64))
    rel = np.abs(out - want) / np.abs(want)
    print(np.dtype(dtype).name, "x  ", x.tolist())
    print("        got", out.tolist())
    print("   rel. err", [f"{r:.1e}" for r in rel])
