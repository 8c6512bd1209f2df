"""wgsl: two reductions whose WGSL does not compile (found by bench/fuzz_differential.py).

    python bench/fuzz_cases/wgsl_reduce_compile_errors.py [target]

1. argmin/argmax of a bool tile: the generated WGSL compares bools with `<`.
2. max/min reduction of a negated uint32 tile: the generated WGSL negates a u32 (`-sh_u32_0[..]`).
Both run on cpu, cpu:debug and triton.
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def argmin_bool(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    a = cube.load(x + offs, mask=offs < n, other=0)
    cube.store(out + 0, cube.argmin(a.to(cube.bool), axis=0))


@cube.kernel
def max_of_negated_u32(x, out, R, C, BR: cube.Comptime[int], BC: cube.Comptime[int]):
    rows = cube.arange(0, BR)
    cols = cube.arange(0, BC)
    m = (rows[:, None] < R) & (cols[None, :] < C)
    a = cube.load(x + rows[:, None] * C + cols[None, :], mask=m, other=0)
    cube.store(out + cols, cube.max(-a, axis=0), mask=cols < C)


target = sys.argv[1] if len(sys.argv) > 1 else "wgsl"
x = np.array([5, 0, 7, 0], np.uint32)
out = np.zeros(1, np.int32)
try:
    argmin_bool[(1,)](x, out, 4, BLOCK=4, target=target)
    print("argmin(bool):", out.tolist(), "expected", [int(np.argmin(x != 0))])
except Exception as err:
    print("argmin(bool) failed:", str(err).splitlines()[-6:])
out = np.zeros(2, np.uint32)
try:
    max_of_negated_u32[(1,)](x, out, 2, 2, BR=2, BC=2, target=target)
    print("max(-a, axis=0):", out.tolist(), "expected", np.max(-x.reshape(2, 2), axis=0).tolist())
except Exception as err:
    print("max(-a) failed:", str(err).splitlines()[-6:])
