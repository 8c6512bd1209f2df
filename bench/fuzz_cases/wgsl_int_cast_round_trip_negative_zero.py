"""wgsl: a float cast to a signed int and back keeps a negative zero (-0.25 -> 0 -> -0.0).

    python bench/fuzz_cases/wgsl_int_cast_round_trip_negative_zero.py [target]

Found by bench/fuzz_differential.py (seeds 300001452 and 300001572: `where(c, cast(x, int64),
x)` and `cast(x, int64) / max(...)` gave -0.0 for x in (-1, 0), NumPy +0.0). The generated WGSL
is `f64(i64(x))`; lavapipe folds it into trunc(x), which keeps the sign of a zero, for int32
and int64, float32 and float64 (uint32 is exact). An integer has no -0, so NumPy gives +0.0.
Documented (docs/language.md, "Where targets differ": fast-math, wgsl).
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def round_trip(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    a = cube.load(x + offs, mask=offs < n)
    cube.store(out + offs, cube.cast(cube.cast(a, cube.int32), a.dtype), mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "wgsl"
x = np.array([-0.25, -0.75, 0.5, -1.5], np.float32)
out = np.zeros_like(x)
round_trip[(1,)](x, out, 4, BLOCK=4, target=target)
print("x", x.tolist(), "got", out.tolist(), "want", x.astype(np.int32).astype(np.float32).tolist())
