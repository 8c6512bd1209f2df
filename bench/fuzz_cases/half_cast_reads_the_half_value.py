"""A cast from float16 (or bfloat16) read float32 arithmetic's unrounded result on cpu, wgsl and
(bfloat16) Triton's interpreter: float16 `exp(12.79).to(float64)` gave 358277.28, not inf.

    python bench/fuzz_cases/half_cast_reads_the_half_value.py [target]

Found by bench/fuzz_differential.py (seeds 7001684 and 7001647, campaign of 2026-12-02). Those
targets keep 16-bit floats in float32 registers and round at casts and stores, but a cast from
a 16-bit float did not round its operand first. Fixed: such a cast reads the 16-bit value,
unless the operand surely holds one already (a load, a cast, a representable constant:
`backends/base.py`, `holds_half_value`); test `test_a_cast_reads_the_16_bit_value`.
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def exp_then_widen(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n)
    cube.store(out + offs, cube.exp(v).to(cube.float64), mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "cpu"
x = np.array([12.7890625, 1.0, -3.5, 11.0], np.float16)
out = np.zeros(4)
exp_then_widen[(1,)](x, out, 4, BLOCK=4, target=target)
print("got     ", out.tolist())
print("expected", np.exp(x).astype(np.float64).tolist())
