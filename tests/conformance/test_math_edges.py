"""Math at the edges of its domain, the same on every target as NumPy: found by differential
review (the cpu target's fastmath turned rsqrt(0) and rsqrt(inf) into NaN)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from util import allows_flushed_subnormals, poison, run_or_expect_unsupported

import cubepy as cube

SPECIAL = [0.0, -0.0, np.inf, 4.0, np.nan, 7.0, 1e-30, 0.25]


@cube.func
def rsqrt_or_sigmoid(v, FN: cube.Comptime[str]):
    if FN == "rsqrt":
        y = cube.rsqrt(v)
    else:
        y = cube.sigmoid(v)
    return y


@cube.kernel
def lanes_kernel(x, out, B: cube.Comptime[int], FN: cube.Comptime[str] = "rsqrt"):
    offs = cube.arange(0, B)
    cube.store(out + offs, rsqrt_or_sigmoid(cube.load(x + offs), FN))


@cube.kernel
def tile_kernel(x, out, B: cube.Comptime[int], FN: cube.Comptime[str] = "rsqrt"):
    offs = cube.arange(0, B)[:, None] * B + cube.arange(0, B)[None, :]
    cube.store(out + offs, rsqrt_or_sigmoid(cube.load(x + offs), FN))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # NumPy under Triton's
@pytest.mark.parametrize(("kernel", "dtype"),  # interpreter
                         [(lanes_kernel, "float16"), (lanes_kernel, "float32"),
                          (lanes_kernel, "float64"), (tile_kernel, "float32")])
def test_rsqrt_of_zero_and_infinity(target, dtype, kernel):
    # 1-D tiles run as scalar lane loops on cpu, 2-D ones as array expressions: both paths
    # (one dtype for the second: a 2-D float16 kernel costs ~10 s of Numba compile in CI)
    x = np.tile(np.array(SPECIAL, dtype), 8)
    out = poison(x.shape, dtype)
    block = 64 if kernel is lanes_kernel else 8
    if run_or_expect_unsupported(target, [dtype],
                                 lambda: kernel[(1,)](x, out, B=block, target=target)):
        with np.errstate(divide="ignore", invalid="ignore"):
            want = (1 / np.sqrt(x.astype(np.float64))).astype(dtype)
        special = ~np.isfinite(want) | (want == 0)
        np.testing.assert_array_equal(out[special], want[special])  # signs of inf too
        np.testing.assert_allclose(out[~special], want[~special], rtol=2e-3 if dtype ==
                                   "float16" else 1e-6)


SUBNORMAL = {"float32": [1.5113536e-39, 1.4e-45, 1e-40, 1.1754942e-38, 1.17549435e-38, 2.0],
             "float64": [1e-310, 5e-324, 2.2250738585072e-308, 2.2250738585072014e-308, 1e-300,
                         2.0]}


@pytest.mark.parametrize(("kernel", "dtype"), [(lanes_kernel, "float32"),
                                               (lanes_kernel, "float64"),
                                               (tile_kernel, "float32")])
def test_rsqrt_of_subnormals(target, dtype, kernel):
    """rsqrt of a subnormal is a normal number (1.5e-39 gives 2.6e19): the cpu target's fast
    1/sqrt estimate read subnormals as 0 and gave -inf in its tile form."""
    x = np.resize(np.array(SUBNORMAL[dtype], dtype), 64)
    out = poison(64, dtype)
    block = 64 if kernel is lanes_kernel else 8
    if not run_or_expect_unsupported(target, [dtype],
                                     lambda: kernel[(1,)](x, out, B=block, target=target)):
        return
    want = 1 / np.sqrt(x.astype(np.float64))
    close = np.isclose(out, want, rtol=1e-6, atol=0)
    if allows_flushed_subnormals(target):
        close |= (x < np.finfo(dtype).tiny) & (out == np.inf)
    assert np.all(close), (x[~close], out[~close], want[~close])


@pytest.mark.parametrize(("kernel", "dtype"), [(lanes_kernel, "float32"),
                                               (lanes_kernel, "float64"),
                                               (tile_kernel, "float32")])
def test_rsqrt_within_two_ulp(target, rng, dtype, kernel):
    """rsqrt over the normal range, within 2 ulp (WGSL's bound for inverseSqrt): the cpu
    target's fast estimate and Newton step gave 3 ulp for float32 1117816464.0 (fuzzer seed
    11000089)."""
    tiny, huge = (-37, 37) if dtype == "float32" else (-300, 300)
    x = (rng.uniform(1, 10, 64) * 10.0 ** rng.integers(tiny, huge, 64)).astype(dtype)
    x[:4] = [1117816464.0, 1.0, 2.0, 3.0]
    out = poison(64, dtype)
    block = 64 if kernel is lanes_kernel else 8
    if run_or_expect_unsupported(target, [dtype],
                                 lambda: kernel[(1,)](x, out, B=block, target=target)):
        off = ulps_off(out, 1 / np.sqrt(x.astype(np.longdouble)).astype(np.float64), dtype)
        assert off.max() <= 2, (x[off > 2], out[off > 2], off.max())


@cube.kernel
def tanh_kernel(x, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)
    cube.store(out + offs, cube.tanh(cube.load(x + offs)))


TANH_ARGUMENTS = [1e-30, 5.3e-14, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 0.2999, 0.3001,
                  0.5, 1.0, 2.0, 5.0, 9.0, 20.0, 100.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tanh_within_a_few_ulp_for_small_arguments(target, dtype):
    """tanh(x) of small |x| is x to within an ulp or so: computed as (1 - e^-2x) / (1 + e^-2x)
    it cancelled (tanh(1e-8) gave 0 on Triton's interpreter and 3e-8 on lavapipe)."""
    x = np.array(TANH_ARGUMENTS + [-v for v in TANH_ARGUMENTS] + [0.0] * 28, dtype)
    out = poison(64, dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: tanh_kernel[(1,)](
            x, out, B=64, target=target)):
        want = np.tanh(x.astype(np.float64))
        ulp = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
        # 4 ulp: the exp of the large-argument form and its division, a couple each
        assert np.all(np.abs(out - want) <= 4 * ulp), np.abs(out - want) / ulp


@cube.kernel
def pow_kernel(x, k, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)
    a = cube.load(x + offs)
    cube.store(out + offs, a ** cube.load(k + offs))
    cube.store(out + B + offs, a ** -2)
    cube.store(out + 2 * B + offs, a ** -3)


def ulps_off(got: np.ndarray, want: np.ndarray, dtype: str) -> np.ndarray:
    """|got - want| in ulps of want in ``dtype`` (subnormals' spacing for subnormals)."""
    ulp = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / ulp


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy under Triton's interpreter
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_of_a_negative_whole_exponent_does_not_overflow(target, dtype):
    """``x ** -k`` where ``x ** k`` overflows but ``x ** -k`` is a subnormal: computed as
    ``1 / x ** k`` it gave 0 (int8 (-28) ** -28 on Triton's interpreter, NumPy 3.0e-41)."""
    big = {"float32": [-28.0, 2e19, 3e22, -5e19, 7e13, 3.0, 0.5, -1e-12],
           "float64": [1e160, -3e161, 1e104, -2e103, 1.5e154, 3.0, 0.5, -1e-100]}[dtype]
    expo = {"float32": [-28.0, -2.0, -2.0, -2.0, -3.0, -5.0, 7.0, -2.0],
            "float64": [-2.0, -2.0, -3.0, -3.0, -2.0, -5.0, 7.0, -2.0]}[dtype]
    x, k = np.array(big, dtype), np.array(expo, dtype)
    out = poison(24, dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: pow_kernel[(1,)](
            x, k, out, B=8, target=target)):
        x64 = x.astype(np.float64)
        with np.errstate(all="ignore"):
            want = np.concatenate([x64 ** k, x64 ** -2.0, x64 ** -3.0])
        close = ulps_off(out, want, dtype) <= 2
        if allows_flushed_subnormals(target):
            close |= (np.abs(want) < np.finfo(dtype).tiny) & (out == 0)
        assert np.all(close), (out, want)


@cube.kernel
def pow_tiles_kernel(x, y, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)
    cube.store(out + offs, cube.load(x + offs) ** cube.load(y + offs))


@cube.kernel
def erf_kernel(x, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)
    cube.store(out + offs, cube.erf(cube.load(x + offs)))


def test_float64_pow_within_its_bound(target, rng):
    """float64 ``x ** y`` over the whole range of results: within 4 ulp of NumPy's (Triton's
    interpreter took exp2(y log2 x), off by |y ln x| ulps: 770 near overflow). wgsl's
    software pow has that bound (docs/language.md, "Where targets differ")."""
    x = np.concatenate([rng.uniform(0.5, 2.0, 32), np.exp(rng.uniform(-700, 700, 32))])
    y = rng.uniform(-700, 700, 64) / np.log(x)
    out = poison(64, "float64")
    if run_or_expect_unsupported(target, ["float64"], lambda: pow_tiles_kernel[(1,)](
            x, y, out, B=64, target=target)):
        want = np.power(x, y)
        z = np.abs(y * np.log(x))
        bound = 4 + (2 * z if target == "wgsl" else 0)
        assert np.all(ulps_off(out, want, "float64") <= bound), ulps_off(out, want, "float64")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy under Triton's interpreter
def test_float64_pow_past_the_range_is_infinite(target):
    """A float64 ``x ** y`` past the range is inf (Triton's interpreter gave NaN for a tiny
    ``x`` and a fractional negative ``y``: its double-double correction made inf - inf)."""
    x = np.array([4.8141420907014544e-55, 1e-300, 0.5, 2.0, 1e-200, 10.0, 3.0, 1e10])
    y = np.array([-5.726095199584961, -2.0, -1100.5, 1100.25, -2.5, 400.5, 700.0, 31.5])
    out = poison(8, "float64")
    if run_or_expect_unsupported(target, ["float64"], lambda: pow_tiles_kernel[(1,)](
            x, y, out, B=8, target=target)):
        np.testing.assert_array_equal(out, np.full(8, np.inf))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy under Triton's interpreter
def test_float64_pow_of_one_to_huge_exponents(target):
    """``(-1) ** y`` and ``1 ** y`` for whole ``|y|`` past 1e300 (even integers): 1, as C99's
    pow (Triton's interpreter gave NaN: its double-double product split ``y`` and overflowed;
    fuzzer seed 12000265)."""
    x = np.array([-1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 4.0, -1.0])
    y = np.array([1.7976931348623157e308, -1e308, 1e301, 2e300, -1.5e300, 1e300, 0.5, 3.0])
    out = poison(8, "float64")
    if run_or_expect_unsupported(target, ["float64"], lambda: pow_tiles_kernel[(1,)](
            x, y, out, B=8, target=target)):
        np.testing.assert_array_equal(out, np.power(x, y))


ERF_ARGUMENTS = [1e-30, 1e-8, 9.37e-6, 1e-4, 0.01, 0.0584, 0.1, 0.3, 0.49, 0.51, 0.8, 1.0, 1.5,
                 2.0, 3.0, 5.0]


def test_float32_erf_within_a_few_ulp(target):
    """float32 erf within 4 ulp, small arguments included (wgsl's erf was 1 - erfc, which
    cancelled there: erf(9.37e-6) was 2 % off)."""
    x = np.array(ERF_ARGUMENTS + [-v for v in ERF_ARGUMENTS] + [0.0] * 32, np.float32)
    out = poison(64, "float32")
    erf_kernel[(1,)](x, out, B=64, target=target)
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert np.all(ulps_off(out, want, "float32") <= 4), ulps_off(out, want, "float32")


def test_float64_erf_within_a_few_ulp(target):
    """float64 erf within 4 ulp from 0 to 6 (wgsl's software erf summed the alternating
    Maclaurin series up to 3, which cancelled: 25 ulp off at 2.3)."""
    x = np.linspace(-6.0, 6.0, 64)
    out = poison(64, "float64")
    if run_or_expect_unsupported(target, ["float64"], lambda: erf_kernel[(1,)](
            x, out, B=64, target=target)):
        want = np.array([math.erf(v) for v in x])
        assert np.all(ulps_off(out, want, "float64") <= 4), ulps_off(out, want, "float64")


@cube.kernel
def pow_half_lanes_kernel(x, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)
    a = cube.load(x + offs)
    cube.store(out + offs, a ** 0.5)
    cube.store(out + B + offs, cube.pow(a, 0.5))


@cube.kernel
def pow_half_tile_kernel(x, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)[:, None] * B + cube.arange(0, B)[None, :]
    cube.store(out + offs, cube.load(x + offs) ** 0.5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy under Triton's interpreter
@pytest.mark.parametrize(("kernel", "dtype"), [(pow_half_lanes_kernel, "float32"),
                                               (pow_half_tile_kernel, "float64")])
def test_pow_by_a_half_is_c99s_not_sqrt(target, kernel, dtype):
    """``x ** 0.5`` is C99's pow: (-0.0) ** 0.5 is +0.0 and (-inf) ** 0.5 is inf, where sqrt
    gives -0.0 and NaN. The cpu target's fastmath (nsz) and NumPy's ``array ** 0.5`` (debug
    mode) both took sqrt. 1-D tiles run as lane loops on cpu, 2-D ones as array expressions."""
    x = np.tile(np.array([-0.0, -np.inf, 0.0, np.inf, 4.0, 0.25, -4.0, np.nan], dtype), 2)
    lanes = kernel is pow_half_lanes_kernel  # two results (** and cube.pow), or one
    out = poison(32 if lanes else 16, dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: kernel[(1,)](
            x, out, B=16 if lanes else 4, target=target)):
        with np.errstate(invalid="ignore"):
            want = np.tile(np.power(x, np.full(x.shape, 0.5, dtype)), 2 if lanes else 1)
        np.testing.assert_array_equal(out, want)  # exact: the squares' roots are whole
        number = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(out[number]), np.signbit(want[number]))


SIGMOID_ARGUMENTS = {
    "float32": [-92.0, -95.0, -100.0, -103.0, -104.0, -88.0, -87.0, -20.0, -1.0, -0.0, 0.0,
                0.5, 3.0, 20.0, 100.0, np.inf, -np.inf, np.nan],
    "float64": [-710.0, -720.0, -740.0, -745.0, -746.0, -708.0, -20.0, -1.0, -0.0, 0.0, 0.5,
                3.0, 40.0, 800.0, np.inf, -np.inf, np.nan],
}


@pytest.mark.parametrize(("kernel", "dtype"), [(lanes_kernel, "float32"),
                                               (lanes_kernel, "float64"),
                                               (tile_kernel, "float32")])
def test_sigmoid_of_large_negative_arguments_is_subnormal(target, dtype, kernel):
    """sigmoid(-92) is 1.1e-40 in float32: 1 / (1 + exp(92)) overflowed first and gave 0 on
    every target (fuzzer seeds 7000152, 8000517, 9000509). Within 4 ulp (subnormals' spacing
    for subnormals), or 0 where the target may flush subnormals; on wgsl within WGSL's bound
    for the adapter's ``exp``, 3 + 2|x| ulp (lavapipe's is 28 ulp off at -87)."""
    x = np.resize(np.array(SIGMOID_ARGUMENTS[dtype], dtype), 64)
    out = poison(64, dtype)
    block = 64 if kernel is lanes_kernel else 8
    if not run_or_expect_unsupported(target, [dtype],
                                     lambda: kernel[(1,)](x, out, B=block, FN="sigmoid",
                                                          target=target)):
        return
    assert_sigmoid_close(x, out, dtype, target == "wgsl", allows_flushed_subnormals(target))


def assert_sigmoid_close(x: np.ndarray, out: np.ndarray, dtype: str, coarse_exp: bool,
                         flushes: bool) -> None:
    """NaN for NaN, else within 4 ulp, or 0 for a subnormal result where the target may flush
    subnormals. A ``coarse_exp`` (exp2 of x log2(e), whose rounding grows with |x|: WGSL's
    adapters, NVIDIA's float32 ``ex2.approx``) may be off by WGSL's bound, 3 + 2|x| ulp, more."""
    with np.errstate(over="ignore"):
        want = (1 / (1 + np.exp(-x.astype(np.longdouble)))).astype(np.float64)
    nan = np.isnan(x)
    assert np.isnan(out[nan]).all()
    x, out, want = x[~nan], out[~nan], want[~nan]
    close = ulps_off(out, want, dtype) <= 4 + (3 + 2 * np.abs(x) if coarse_exp else 0)
    if flushes:
        close |= (np.abs(want) < np.finfo(dtype).tiny) & (out == 0)
    assert close.all(), (x[~close], out[~close], want[~close])
