"""float32 -> float16 rounding in registers on a target, against NumPy, over 80,000 values:
random magnitudes from 1e-9 to 1e5, every float16 (of 20,000 drawn), the ties between
neighbours (both signs), the overflow edge (65504, 65519, 65520), infinities, NaN, zeros and
float16's subnormal range.

    python bench/f16_rounding_probe.py [target]

Written for the wgsl target on NVIDIA's Vulkan driver, which folds `f32(f16(x))` (and a
pack2x16float round trip) back to `x` (run 98, BENCHMARKS.md).
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def round_trip(x, out, n, BLOCK: cube.Comptime[int]):
    # the product keeps the float16 value in a register (on cpu and wgsl, a float32 one)
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    v = cube.load(x + offs, mask=m)
    cube.store(out + offs, (v.to(cube.float16) * 1.0).to(cube.float32), mask=m)


TARGET = sys.argv[1] if len(sys.argv) > 1 else "wgsl"
rng = np.random.default_rng(0)
parts = [rng.standard_normal(20000) * 10.0 ** rng.uniform(-9, 5, 20000)]
h = rng.integers(0, 0x7c00, 20000, dtype=np.uint16).view(np.float16).astype(np.float32)
nxt = np.nextafter(h.astype(np.float16), np.float16(np.inf)).astype(np.float32)
edges = [65504, 65519, 65520, 65536, 1e9, -1e9, np.inf, -np.inf, np.nan, 0.0, -0.0, 2**-24,
         2**-25, 3 * 2**-26, 2**-14, 6.1e-5]
parts += [h, (h + nxt) / 2, -(h + nxt) / 2, np.array(edges, np.float32)]
x = np.concatenate(parts).astype(np.float32)
out = np.zeros_like(x)
round_trip[(cube.cdiv(x.size, 256),)](x, out, x.size, BLOCK=256, target=TARGET)
want = x.astype(np.float16).astype(np.float32)
bad = ~((out == want) | (np.isnan(out) & np.isnan(want)))
print(TARGET, "mismatches", bad.sum(), "of", x.size, x[bad][:5], out[bad][:5], want[bad][:5])
