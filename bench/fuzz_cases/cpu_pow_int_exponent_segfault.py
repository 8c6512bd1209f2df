"""cpu: `x ** k` with an integer tile `k` kills the process (SIGSEGV).

    python bench/fuzz_cases/cpu_pow_int_exponent_segfault.py [target] [variant]

Found by bench/fuzz_differential.py (an int32 `a ** a`). `float32 ** int32` promotes the exponent
to float32 (an int->float conversion); Numba compiles `**` under fastmath's `afn` flag, LLVM then
rewrites pow(x, sitofp(i32 n)) into the powi intrinsic, and the compiled kernel crashes when
run. Plain Numba shows the same: `np.float32(x[0]) ** np.float32(k[0])` with int32 `k` and
`fastmath={"afn"}` segfaults; without `afn` it runs. Runs fine on cpu:debug, triton and wgsl.
"""
import sys

import numpy as np

import cubepy as cube


@cube.kernel
def pow_int_exponent(x, k, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    m = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=m) ** cube.load(k + offs, mask=m), mask=m)


@cube.kernel
def geometric(out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, 0.5 ** offs, mask=offs < n)  # runs: the arange form is fine


target = sys.argv[1] if len(sys.argv) > 1 else "cpu"
variant = sys.argv[2] if len(sys.argv) > 2 else "tile"
if variant == "tile":
    x = np.array([2.0, 3.0, 0.5], np.float32)
    k = np.array([3, -1, 2], np.int32)
    out = np.zeros(3, np.float32)
    pow_int_exponent[(1,)](x, k, out, 3, BLOCK=4, target=target)
    print("got", out.tolist(), "expected", np.power(x, k.astype(np.float32)).tolist())
else:
    out = np.zeros(5, np.float32)
    geometric[(1,)](out, 5, BLOCK=8, target=target)
    print("got", out.tolist(), "expected", (0.5 ** np.arange(5)).tolist())
