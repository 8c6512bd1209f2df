"""triton (interpreter): bfloat16 subnormals read or written as 0, and `other=-0.0` read as +0.0.

    python bench/fuzz_cases/triton_bf16_subnormals_and_negative_zero_other.py [target]

Found by bench/fuzz_differential.py. On Triton's interpreter cubepy computes bfloat16 in float32:
- a bfloat16 subnormal (e.g. 5.877e-39 = 2**-127) loaded and stored back (or loaded and widened to
  float32, or a float32 subnormal stored into a bfloat16 array) comes out as 0.0;
- a masked bfloat16 load with `other=-0.0` gives +0.0 in the masked lanes: the emitter skips the
  select for a "zero" `other` (codegen.py `_zero_const` compares with == 0, true for -0.0).
cpu, cpu:debug give the NumPy/ml_dtypes answers (wgsl has no bfloat16).
"""
import sys

import ml_dtypes
import numpy as np

import cubepy as cube

BF16 = ml_dtypes.bfloat16


@cube.kernel
def copy(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n), mask=offs < n)


@cube.kernel
def widen(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.float32), mask=offs < n)


@cube.kernel
def other_negative_zero(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    a = cube.load(x + offs, mask=offs < n - 1, other=-0.0)  # the last lane reads `other`
    cube.store(out + offs, a, mask=offs < n)


target = sys.argv[1] if len(sys.argv) > 1 else "triton"
x = np.array([5.877471754111438e-39, -9.183549615799121e-41, 1.0], np.float32).astype(BF16)
out = np.zeros(3, BF16)
copy[(1,)](x, out, 3, BLOCK=4, target=target)
print("copy      got", out.astype(np.float64).tolist(), "expected", x.astype(np.float64).tolist())
out32 = np.zeros(3, np.float32)
widen[(1,)](x, out32, 3, BLOCK=4, target=target)
print("widen     got", out32.tolist(), "expected", x.astype(np.float32).tolist())
x = np.array([1.0, 2.0], BF16)
out = np.full(2, 7.0, BF16)
other_negative_zero[(1,)](x, out, 2, BLOCK=2, target=target)
print("other=-0.0 got", out.astype(np.float64).tolist(), "expected [1.0, -0.0]")
