"""NumPy's float `//`, `%`, `**` and division by a literal zero on every target.

`//` and `%` are np.floor_divide and np.remainder (built on C's exact fmod, so `-0.3 // 0.1` is
-4 and `-5 // inf` is -1, where floor(a / b) gives -3 and -0.0); `**` is C99's pow with its
special values (`1 ** nan` is 1, `(-0.0) ** -1` is -inf, `(-1) ** inf` is 1). float16 and
bfloat16 compute in float32 and round, as NumPy and ml_dtypes do, so their answers are exact too.
"""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest
from util import (
    FLOAT_DTYPES,
    assert_close,
    cdiv,
    next_pow2,
    np_dtype,
    poison,
    run_or_expect_unsupported,
)

import cubepy as cube

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
E = importlib.import_module("test_elementwise")  # its divmod and pow kernels, on floats here

BLOCK = 128
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
           0.1, -0.3, 7.0, 2.5, -2.5, 65.0, -65.0, 100.0, 1000.0]


def special_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of special values (zeros, infinities, NaN, +-1, halves, odd and even whole
    numbers), in the dtype."""
    a = np.array([x for x in SPECIAL for _ in SPECIAL])
    b = np.array([y for _ in SPECIAL for y in SPECIAL])
    return a.astype(np_dtype(dtype)), b.astype(np_dtype(dtype))


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit but for NaN's payload: zeros' signs count."""
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(want64)
    np.testing.assert_array_equal(np.isnan(got64), nan)
    np.testing.assert_array_equal(got64[~nan], want64[~nan])
    np.testing.assert_array_equal(np.signbit(got64[~nan]), np.signbit(want64[~nan]))


def numpy_ref(fn, *args):
    """NumPy's answer, in float32 for the 16-bit floats (as NumPy's float16 loops and ml_dtypes'
    bfloat16 ones compute), rounded to the input dtype."""
    dtype = args[0].dtype
    wide = [a.astype(np.float32) if a.dtype.itemsize == 2 else a for a in args]
    with np.errstate(all="ignore"):
        return fn(*wide).astype(dtype)


@cube.kernel
def by_zero_kernel(x, o_div, o_floordiv, o_mod, n, BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    a = cube.load(x + i, mask=i < n)
    cube.store(o_div + i, a / 0.0, mask=i < n)  # a literal zero divisor
    cube.store(o_floordiv + i, a // 0.0, mask=i < n)
    cube.store(o_mod + i, a % 0.0, mask=i < n)


def run_divmod(target, a, b) -> list[np.ndarray] | None:
    """[a // b, a % b, a // -3, a % 7, a / 0.0, a // 0.0, a % 0.0]"""
    outs = [poison(a.size, a.dtype) for _ in range(7)]

    def launch():
        E.divmod_kernel[(cdiv(a.size, BLOCK),)](a, b, *outs[:4], a.size, BLOCK=BLOCK,
                                                target=target)
        by_zero_kernel[(1,)](a, *outs[4:], a.size, BLOCK=next_pow2(a.size), target=target)

    return outs if run_or_expect_unsupported(target, [a.dtype.name], launch) else None


def divmod_refs(a, b) -> list[np.ndarray]:
    """NumPy's answers to what run_divmod computes."""
    return [numpy_ref(fn, a, np.broadcast_to(np.asarray(d, a.dtype), a.shape)) for fn, d in
            [(np.floor_divide, b), (np.remainder, b), (np.floor_divide, -3), (np.remainder, 7),
             (np.divide, 0), (np.floor_divide, 0), (np.remainder, 0)]]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_floor_divide_and_remainder_of_special_values(target, dtype):
    """Every pair of specials, constant divisors, and zero divisors (wgsl once dropped the
    store of `a / 0.0`)."""
    a, b = special_pairs(dtype)
    outs = run_divmod(target, a, b)
    if outs is not None:
        for got, want in zip(outs, divmod_refs(a, b)):
            assert_same(got, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_floor_divide_and_remainder_of_random_values(target, rng, dtype):
    """Quotients that round up to a whole number in a / b (floor(a / b) is one too many), and
    quotients past 2^24 (where a - b * floor(a / b) loses every bit of the remainder)."""
    n = 1500
    a = rng.uniform(-100, 100, n)
    b = rng.uniform(-10, 10, n)
    if dtype in ("float32", "float64"):
        a[:500] = rng.uniform(-1e30, 1e30, 500)
        b[:500] = rng.uniform(-1e-3, 1e-3, 500)
    a, b = a.astype(np_dtype(dtype)), b.astype(np_dtype(dtype))
    outs = run_divmod(target, a, b)
    if outs is None:
        return
    want = divmod_refs(a, b)
    assert_same(outs[1], want[1])
    assert_same(outs[3], want[3])
    # wgsl's division is within 2.5 ulp (WGSL's rule): quotients past 2^22 may differ there
    assert_same(outs[0][500:], want[0][500:])
    assert_close(outs[0], want[0])


@cube.kernel
def pow_constant_kernel(x, p2, p3, pm1, pm2, p5, n, BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    a = cube.load(x + i, mask=i < n)
    cube.store(p2 + i, a**2, mask=i < n)  # constant whole exponents: multiplications
    cube.store(p3 + i, a**3.0, mask=i < n)
    cube.store(pm1 + i, a**-1, mask=i < n)
    cube.store(pm2 + i, a**-2, mask=i < n)
    cube.store(p5 + i, a**5, mask=i < n)


def run_pow(target, a, b) -> list[np.ndarray] | None:
    """[a ** b, a ** 2, a ** 3.0, a ** -1, a ** -2, a ** 5]"""
    outs = [poison(a.size, a.dtype) for _ in range(6)]

    def launch():
        E.pow_kernel[(cdiv(a.size, BLOCK),)](a, b, outs[0], a.size, BLOCK=BLOCK, target=target)
        pow_constant_kernel[(1,)](a, *outs[1:], a.size, BLOCK=next_pow2(a.size), target=target)

    return outs if run_or_expect_unsupported(target, [a.dtype.name], launch) else None


def assert_pow(got: np.ndarray, want: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Special inputs or answers (zeros, infinities, NaN, +-1) exactly, others within the
    dtype's tolerance."""
    special = ~np.isfinite(want.astype(np.float64)) | (want == 0) | (np.abs(want) == 1) | \
        ~np.isfinite(a.astype(np.float64)) | ~np.isfinite(b.astype(np.float64)) | (a == 0)
    assert_same(got[special], want[special])
    assert_close(got[~special], want[~special])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_pow_special_values(target, dtype):
    a, b = special_pairs(dtype)
    outs = run_pow(target, a, b)
    if outs is None:
        return
    for got, k in zip(outs, [b, 2, 3, -1, -2, 5]):
        k = np.broadcast_to(np.asarray(k, a.dtype), a.shape)
        assert_pow(got, numpy_ref(np.power, a, k), a, k)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_of_whole_numbers_is_exact(target, rng, dtype):
    """2.0 ** 3.0 is 8.0, not 7.999999999999998: whole bases to whole powers whose result
    is representable come out exact; so do negative bases, with the parity's sign."""
    base = rng.integers(-9, 10, 600).astype(dtype)
    expo = rng.integers(-6, 11, 600).astype(dtype)
    base[base == 0] = 2.0
    outs = run_pow(target, base, expo)
    if outs is None:
        return
    want = numpy_ref(np.power, base, expo)
    exact = (np.abs(base) ** np.abs(expo) < 2**24) & (expo >= 0) | (np.abs(base) == 2)
    assert_same(outs[0][exact], want[exact])
    assert_close(outs[0], want)


@cube.kernel
def pow_int_tile_kernel(x, k, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=mask) ** cube.load(k + offs, mask=mask),
               mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_of_an_int_tile(target, rng, dtype):
    """``x ** k`` for an int32 tile ``k`` (converted to x's dtype, as np.power does). On cpu
    it crashed the process: under fastmath LLVM rewrote pow(x, float(k)) into its powi
    intrinsic, whose library call Numba's JIT left unresolved."""
    x = rng.uniform(0.5, 2.0, 300).astype(dtype)
    k = rng.integers(-6, 7, 300).astype(np.int32)
    out = poison(300, dtype)
    grid = (cdiv(300, BLOCK),)
    if run_or_expect_unsupported(target, [dtype], lambda: pow_int_tile_kernel[grid](
            x, k, out, 300, BLOCK=BLOCK, target=target)):
        assert_close(out, np.power(x.astype(np.float64), k))


@cube.kernel
def negative_zero_fill_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n, other=-0.0))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_masked_load_fills_negative_zero(target, dtype):
    """``other=-0.0`` fills with -0.0 (Triton's interpreter widens bfloat16 loads and took any
    zero ``other`` for the +0.0 fill it already had)."""
    x = np.ones(BLOCK, np_dtype(dtype))
    out = poison(BLOCK, dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: negative_zero_fill_kernel[(1,)](
            x, out, 5, BLOCK=BLOCK, target=target)):
        assert np.all(out[:5] == 1) and np.all(out[5:] == 0) and np.all(np.signbit(out[5:]))
