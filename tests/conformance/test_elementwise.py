"""Elementwise kernels: vector add, gelu, math functions, where chains, integer and bit ops."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    FLOAT_DTYPES,
    NUMERIC_DTYPES,
    SIGNED_INT_DTYPES,
    assert_close,
    cdiv,
    erf_ref,
    np_dtype,
    poison,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube

N = 1000
BLOCK = 128


@cube.kernel
def add_kernel(x, y, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    b = cube.load(y + offs, mask=mask)
    cube.store(out + offs, a + b, mask=mask)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_vector_add(target, rng, dtype):
    x, y = random_array(rng, N, dtype), random_array(rng, N, dtype)
    out = poison(N, dtype)
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: add_kernel[(cdiv(N, BLOCK),)](x, y, out, N, BLOCK=BLOCK, target=target),
    ):
        assert_close(out, x + y)


@cube.kernel
def gelu_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask, other=0.0)
    cube.store(out + offs, v * 0.5 * (1.0 + cube.erf(v * 0.7071067811865476)), mask=mask)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_gelu(target, rng, dtype):
    x = random_array(rng, N, dtype, -3.0, 3.0)
    out = poison(N, dtype)
    x64 = x.astype(np.float64)
    expected = 0.5 * x64 * (1.0 + erf_ref(x64 / np.sqrt(2.0)))
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: gelu_kernel[(cdiv(N, BLOCK),)](x, out, N, BLOCK=BLOCK, target=target),
    ):
        assert_close(out, expected)


# ---------------------------------------------------------------- math functions, one kernel each


@cube.kernel
def exp_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.exp(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def exp2_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.exp2(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def log_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.log(cube.load(x + offs, mask=offs < n, other=1.0)), mask=offs < n)


@cube.kernel
def log2_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.log2(cube.load(x + offs, mask=offs < n, other=1.0)), mask=offs < n)


@cube.kernel
def sqrt_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.sqrt(cube.load(x + offs, mask=offs < n, other=1.0)), mask=offs < n)


@cube.kernel
def rsqrt_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.rsqrt(cube.load(x + offs, mask=offs < n, other=1.0)), mask=offs < n)


@cube.kernel
def sin_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.sin(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def cos_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.cos(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def tanh_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.tanh(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def erf_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.erf(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def sigmoid_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.sigmoid(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def abs_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.abs(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def floor_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.floor(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def ceil_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.ceil(cube.load(x + offs, mask=offs < n)), mask=offs < n)


@cube.kernel
def pow_kernel(x, y, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask, other=1.0)
    cube.store(out + offs, cube.pow(a, cube.load(y + offs, mask=mask, other=1.0)), mask=mask)


@cube.kernel
def maximum_kernel(x, y, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    cube.store(out + offs, cube.maximum(a, cube.load(y + offs, mask=mask)), mask=mask)


@cube.kernel
def minimum_kernel(x, y, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    cube.store(out + offs, cube.minimum(a, cube.load(y + offs, mask=mask)), mask=mask)


@cube.kernel
def fma_kernel(x, y, z, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    b = cube.load(y + offs, mask=mask)
    cube.store(out + offs, cube.fma(a, b, cube.load(z + offs, mask=mask)), mask=mask)


# name: (kernel, reference on float64 inputs, input range per argument)
MATH = {
    "exp": (exp_kernel, np.exp, [(-5, 5)]),
    "exp2": (exp2_kernel, np.exp2, [(-5, 5)]),
    "log": (log_kernel, np.log, [(0.05, 20)]),
    "log2": (log2_kernel, np.log2, [(0.05, 20)]),
    "sqrt": (sqrt_kernel, np.sqrt, [(0.01, 20)]),
    "rsqrt": (rsqrt_kernel, lambda v: 1.0 / np.sqrt(v), [(0.05, 20)]),
    "sin": (sin_kernel, np.sin, [(-4, 4)]),
    "cos": (cos_kernel, np.cos, [(-4, 4)]),
    "tanh": (tanh_kernel, np.tanh, [(-4, 4)]),
    "erf": (erf_kernel, erf_ref, [(-3, 3)]),
    "sigmoid": (sigmoid_kernel, lambda v: 1.0 / (1.0 + np.exp(-v)), [(-6, 6)]),
    "abs": (abs_kernel, np.abs, [(-3, 3)]),
    "floor": (floor_kernel, np.floor, [(-5, 5)]),
    "ceil": (ceil_kernel, np.ceil, [(-5, 5)]),
    "pow": (pow_kernel, np.power, [(0.1, 4), (-2, 2)]),
    "maximum": (maximum_kernel, np.maximum, [(-3, 3), (-3, 3)]),
    "minimum": (minimum_kernel, np.minimum, [(-3, 3), (-3, 3)]),
    "fma": (fma_kernel, lambda a, b, c: a * b + c, [(-3, 3), (-3, 3), (-3, 3)]),
}
HALF_SUBSET = ["exp", "log", "sqrt", "sin", "tanh", "erf", "sigmoid", "floor", "maximum", "fma"]
MATH_CASES = [(f, d) for f in MATH for d in ("float32", "float64")] + [
    (f, d) for f in HALF_SUBSET for d in ("float16", "bfloat16")
]


@pytest.mark.parametrize("fn,dtype", MATH_CASES, ids=[f"{f}-{d}" for f, d in MATH_CASES])
def test_math_function(target, rng, fn, dtype):
    kern, ref, ranges = MATH[fn]
    n = 700
    inputs = [random_array(rng, n, dtype, lo, hi) for lo, hi in ranges]
    out = poison(n, dtype)
    expected = ref(*[a.astype(np.float64) for a in inputs])
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: kern[(cdiv(n, BLOCK),)](*inputs, out, n, BLOCK=BLOCK, target=target),
    ):
        assert_close(out, expected)


@cube.kernel
def sqrt_int_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.sqrt(cube.load(x + offs, mask=offs < n, other=1)), mask=offs < n)


def test_math_on_integers_computes_in_float32(target, rng):
    n = 300
    x = random_array(rng, n, "int32", 0, 10000)
    out = poison(n, "float32")
    sqrt_int_kernel[(cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, target=target)
    assert_close(out, np.sqrt(x.astype(np.float64)))


# ---------------------------------------------------------------- selection


@cube.kernel
def where_chain_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask, other=0.0)
    inner = cube.where(v > 0.0, v, 0.5 * v)
    r = cube.where(v < -1.0, -1.0, cube.where(v > 1.0, v * v, inner))
    cube.store(out + offs, r, mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_where_chain(target, rng, dtype):
    x = random_array(rng, N, dtype, -3, 3)
    out = poison(N, dtype)
    expected = np.where(x < -1, -1.0, np.where(x > 1, x * x, np.where(x > 0, x, 0.5 * x)))
    where_chain_kernel[(cdiv(N, BLOCK),)](x, out, N, BLOCK=BLOCK, target=target)
    assert_close(out, expected)


# ---------------------------------------------------------------- integer arithmetic and bits


@cube.kernel
def divmod_kernel(x, y, q, r, q_lit, r_lit, n, BLOCK: cube.Comptime[int],
                  SIGNED: cube.Comptime[bool] = True):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask, other=1)
    b = cube.load(y + offs, mask=mask, other=1)
    cube.store(q + offs, a // b, mask=mask)
    cube.store(r + offs, a % b, mask=mask)
    cube.store(q_lit + offs, a // (-3 if SIGNED else 3), mask=mask)
    cube.store(r_lit + offs, a % 7, mask=mask)


@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_floor_div_mod_negative_operands(target, rng, dtype):
    n = 500
    x = random_array(rng, n, dtype, -100, 100)
    y = random_array(rng, n, dtype, 1, 12) * np.where(rng.random(n) < 0.5, -1, 1).astype(dtype)
    outs = [poison(n, dtype) for _ in range(4)]
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: divmod_kernel[(cdiv(n, BLOCK),)](x, y, *outs, n, BLOCK=BLOCK, target=target),
    ):
        for got, want in zip(outs, [x // y, x % y, x // np_dtype(dtype).type(-3), x % 7]):
            assert_close(got, want)


@cube.kernel
def floordiv_rows_kernel(x, y, q, ROWS: cube.Comptime[int], COLS: cube.Comptime[int]):
    # 2-D tiles: the cpu target's tile form (divmod_kernel's 1-D tiles run as lane loops)
    offs = cube.arange(0, ROWS)[:, None] * COLS + cube.arange(0, COLS)[None, :]
    cube.store(q + offs, cube.load(x + offs) // cube.load(y + offs))


@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_the_most_negative_integer_divided_by_minus_one_wraps(target, dtype):
    # NumPy's INT_MIN // -1 is INT_MIN (the quotient wraps) and INT_MIN % -1 is 0; the cpu
    # target's int64 division gave 0
    low = np.iinfo(np_dtype(dtype)).min
    x = np.array([low, low, low + 1, 5, low, -7, low, 9], np_dtype(dtype))
    y = np.array([-1, 1, -1, -1, 2, -1, -1, 0], np_dtype(dtype))
    outs = [poison(8, dtype) for _ in range(4)]
    q_rows = poison(8, dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: divmod_kernel[(1,)](
            x, y, *outs, 8, BLOCK=8, target=target)):
        floordiv_rows_kernel[(1,)](x, y, q_rows, ROWS=2, COLS=4, target=target)
        with np.errstate(divide="ignore", over="ignore"):
            want_q, want_r = x // y, x % y
        for got, want in [(outs[0], want_q), (outs[1], want_r), (q_rows, want_q)]:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_integer_division_by_zero_gives_zero(target, rng, dtype):
    # NumPy's answer on every target: GPUs leave it undefined, WGSL gives the dividend
    n = 300
    low = 0 if dtype.startswith("u") else -100
    x = random_array(rng, n, dtype, low, 100)
    y = random_array(rng, n, dtype, low // 20, 6) * (rng.random(n) < 0.7).astype(dtype)
    outs = [poison(n, dtype) for _ in range(4)]
    signed = not dtype.startswith("u")
    if run_or_expect_unsupported(
        target, [dtype],
        lambda: divmod_kernel[(cdiv(n, BLOCK),)](x, y, *outs, n, BLOCK=BLOCK, SIGNED=signed,
                                                 target=target),
    ):
        with np.errstate(divide="ignore"):
            for got, want in zip(outs, [x // y, x % y]):
                np.testing.assert_array_equal(got, want)


@cube.kernel
def true_div_kernel(x, y, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask, other=1)
    cube.store(out + offs, a / cube.load(y + offs, mask=mask, other=1), mask=mask)


def test_true_division_of_ints_gives_float32(target, rng):
    n = 400
    x = random_array(rng, n, "int32", -1000, 1000)
    y = random_array(rng, n, "int32", 1, 50)
    out = poison(n, "float32")
    true_div_kernel[(cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, target=target)
    assert_close(out, x.astype(np.float32) / y.astype(np.float32))


@cube.kernel
def bitwise_kernel(x, y, s, o_and, o_or, o_xor, o_not, o_shl, o_shr, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    b = cube.load(y + offs, mask=mask)
    k = cube.load(s + offs, mask=mask)
    cube.store(o_and + offs, a & b, mask=mask)
    cube.store(o_or + offs, a | b, mask=mask)
    cube.store(o_xor + offs, a ^ b, mask=mask)
    cube.store(o_not + offs, ~a, mask=mask)
    cube.store(o_shl + offs, a << k, mask=mask)
    cube.store(o_shr + offs, a >> k, mask=mask)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32"])
def test_bitwise_and_shifts(target, rng, dtype):
    n = 600
    bits = np_dtype(dtype).itemsize * 8
    signed = np_dtype(dtype).kind == "i"
    # Small magnitudes and shifts below half the width: `<<` never overflows, `>>` of
    # negative values is arithmetic (as NumPy's).
    lim = 1 << (bits // 2 - 2)
    x = random_array(rng, n, dtype, -lim if signed else 0, lim)
    y = random_array(rng, n, dtype, -lim if signed else 0, lim)
    s = random_array(rng, n, dtype, 0, bits // 2)
    outs = [poison(n, dtype) for _ in range(6)]
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: bitwise_kernel[(cdiv(n, BLOCK),)](x, y, s, *outs, n, BLOCK=BLOCK, target=target),
    ):
        expected = [x & y, x | y, x ^ y, ~x, x << s, x >> s]
        for got, want in zip(outs, expected):
            assert_close(got, want)


@cube.kernel
def shift_past_width_kernel(x, s, k, o_shl, o_shr, o_shl_k, o_shr_k, o_shl_c, o_shr_c,
                            R: cube.Comptime[int], C: cube.Comptime[int]):
    if R == 1:  # a 1-D kernel (the cpu target's lane loops) or a 2-D one (its tile form)
        offs = cube.arange(0, C)
    else:
        offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    a = cube.load(x + offs)
    amount = cube.load(s + offs)
    cube.store(o_shl + offs, a << amount)
    cube.store(o_shr + offs, a >> amount)
    cube.store(o_shl_k + offs, a << k)  # a run-time scalar amount
    cube.store(o_shr_k + offs, a >> k)
    cube.store(o_shl_c + offs, a << 100)  # a constant amount past every width
    cube.store(o_shr_c + offs, a >> 100)


@pytest.mark.parametrize("shape", [(1, 128), (4, 32)], ids=["1d", "2d"])
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32"])
def test_shifts_past_the_width(target, rng, dtype, shape):
    """NumPy's shifts: by the width or more, or by a negative amount, `<<` gives 0 and `>>`
    0 or -1 (WGSL takes the amount modulo the width; LLVM gives poison)."""
    info = np.iinfo(np_dtype(dtype))
    bits = info.bits
    x = rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(dtype)
    x.flat[:4] = [info.min, info.max, 1, 0]
    amounts = [0, 1, bits - 1, bits, bits + 1, 2 * bits, 100, info.max]
    if info.min < 0:
        amounts += [-1, -bits, info.min]
    s = rng.choice(np.array(amounts, np.int64), shape).astype(dtype)
    outs = [poison(shape, dtype) for _ in range(6)]
    with np.errstate(all="ignore"):
        for k in (bits, bits + 3, -1 if info.min < 0 else info.max):
            k = np_dtype(dtype).type(k)
            if not run_or_expect_unsupported(
                target,
                [dtype],
                lambda k=k: shift_past_width_kernel[(1,)](
                    x, s, k, *outs, R=shape[0], C=shape[1], target=target),
            ):
                return
            expected = [x << s, x >> s, x << k, x >> k, x << np_dtype(dtype).type(100),
                        x >> np_dtype(dtype).type(100)]
            for got, want in zip(outs, expected):
                assert_close(got.reshape(shape), want)


@cube.kernel
def bool_ops_kernel(x, y, o_and, o_or, o_xor, o_not, o_cmp, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    b = cube.load(y + offs, mask=mask)
    cube.store(o_and + offs, a & b, mask=mask)
    cube.store(o_or + offs, a | b, mask=mask)
    cube.store(o_xor + offs, a ^ b, mask=mask)
    cube.store(o_not + offs, ~a, mask=mask)
    cube.store(o_cmp + offs, a == b, mask=mask)


def test_bool_logic(target, rng):
    n = 300
    x, y = random_array(rng, n, "bool"), random_array(rng, n, "bool")
    expected = [x & y, x | y, x ^ y, ~x, x == y]
    outs = [~e for e in expected]  # bool poison: the negation of every expected value
    if run_or_expect_unsupported(
        target,
        ["bool"],
        lambda: bool_ops_kernel[(cdiv(n, BLOCK),)](x, y, *outs, n, BLOCK=BLOCK, target=target),
    ):
        for got, want in zip(outs, expected):
            assert_close(got, want)


@cube.kernel
def compare_kernel(x, y, lt, ge, eq, ne, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    b = cube.load(y + offs, mask=mask)
    cube.store(lt + offs, (a < b).to(cube.int32), mask=mask)
    cube.store(ge + offs, (a >= b).to(cube.int32), mask=mask)
    cube.store(eq + offs, (a == b).to(cube.int32), mask=mask)
    cube.store(ne + offs, (a != b).to(cube.int32), mask=mask)


def test_comparisons(target, rng):
    n = 400
    x = random_array(rng, n, "int32", -5, 5)
    y = random_array(rng, n, "int32", -5, 5)  # small range: many equal pairs
    outs = [poison(n, "int32") for _ in range(4)]
    compare_kernel[(cdiv(n, BLOCK),)](x, y, *outs, n, BLOCK=BLOCK, target=target)
    for got, want in zip(outs, [x < y, x >= y, x == y, x != y]):
        assert_close(got, want.astype(np.int32))


@cube.kernel
def unary_neg_pow_kernel(x, neg, sq, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    cube.store(neg + offs, -a, mask=mask)
    cube.store(sq + offs, a**2, mask=mask)


def test_unary_minus_and_power_operator(target, rng):
    n = 300
    x = random_array(rng, n, "float32", -3, 3)
    neg, sq = poison(n, "float32"), poison(n, "float32")
    unary_neg_pow_kernel[(cdiv(n, BLOCK),)](x, neg, sq, n, BLOCK=BLOCK, target=target)
    assert_close(neg, -x)
    assert_close(sq, x.astype(np.float64) ** 2)


@cube.kernel
def nan_compare_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    m = i < n
    v = cube.load(x + i, mask=m, other=0.0)
    cube.store(out + i, (v != v).to(cube.int32) * 2 + (v == v).to(cube.int32), mask=m)


def test_nan_comparisons(target):
    """NaN != NaN and not NaN == NaN on every target (a WGSL compiler may assume no NaNs)."""
    x = np.array([1.0, np.nan, -2.0, np.inf, np.nan], np.float32)
    out = np.full(5, -1, np.int32)
    nan_compare_kernel[(1,)](x, out, 5, BLOCK=8, target=target)
    np.testing.assert_array_equal(out, np.where(np.isnan(x), 2, 1))
