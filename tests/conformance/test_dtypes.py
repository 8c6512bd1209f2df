"""dtypes: every dtype round-trips through load/arithmetic/store; casts; promotion rules."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    assert_close,
    cdiv,
    dyadic_array,
    np_dtype,
    poison,
    poison_for,
    random_array,
    run_or_expect_unsupported,
    target_supports,
)

import cubepy as cube

BLOCK = 64
N = 300


@cube.kernel
def arith_roundtrip_kernel(x, y, out, copy, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    b = cube.load(y + offs, mask=mask)
    cube.store(out + offs, a * b + a + 1, mask=mask)
    cube.store(copy + offs, a, mask=mask)


@cube.kernel
def bool_roundtrip_kernel(x, y, out, copy, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask)
    b = cube.load(y + offs, mask=mask)
    cube.store(out + offs, (a ^ b) | (a & ~b), mask=mask)
    cube.store(copy + offs, a, mask=mask)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dtype_roundtrip(target, rng, dtype):
    if dtype == "bool":
        x, y = random_array(rng, N, dtype), random_array(rng, N, dtype)
        expected, kern = (x ^ y) | (x & ~y), bool_roundtrip_kernel
    else:
        if dtype in FLOAT_DTYPES:
            # Multiples of 1/8 in [-1, 1]: a * b + a + 1 is exact in every float dtype.
            x, y = dyadic_array(rng, N, dtype), dyadic_array(rng, N, dtype)
        else:
            lo = 0 if np_dtype(dtype).kind == "u" else -8
            x, y = random_array(rng, N, dtype, lo, 9), random_array(rng, N, dtype, lo, 9)
        wide = np.float64 if dtype in FLOAT_DTYPES else np.int64
        expected, kern = x.astype(wide) * y + x + 1, arith_roundtrip_kernel
        expected = expected.astype(np_dtype(dtype))
    out, copy = poison_for(expected), poison_for(x)
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: kern[(cdiv(N, BLOCK),)](x, y, out, copy, N, BLOCK=BLOCK, target=target),
    ):
        assert out.dtype == np_dtype(dtype)
        assert_close(out, expected)
        assert_close(copy, x)


# ---------------------------------------------------------------- casts


@cube.kernel
def to_int32_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.int32), mask=offs < n)


@cube.kernel
def to_int64_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.int64), mask=offs < n)


@cube.kernel
def to_int8_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.cast(cube.load(x + offs, mask=offs < n), cube.int8), mask=offs < n)


@cube.kernel
def to_uint8_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.uint8), mask=offs < n)


@cube.kernel
def to_uint32_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.uint32), mask=offs < n)


@cube.kernel
def to_float16_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(
        out + offs, cube.cast(cube.load(x + offs, mask=offs < n), cube.float16), mask=offs < n
    )


@cube.kernel
def to_bfloat16_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.bfloat16), mask=offs < n)


@cube.kernel
def to_float32_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.float32), mask=offs < n)


@cube.kernel
def to_float64_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.float64), mask=offs < n)


@cube.kernel
def to_bool_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n).to(cube.bool), mask=offs < n)


CAST_KERNELS = {
    "int32": to_int32_kernel,
    "int64": to_int64_kernel,
    "int8": to_int8_kernel,
    "uint8": to_uint8_kernel,
    "uint32": to_uint32_kernel,
    "float16": to_float16_kernel,
    "bfloat16": to_bfloat16_kernel,
    "float32": to_float32_kernel,
    "float64": to_float64_kernel,
    "bool": to_bool_kernel,
}

# (source dtype, destination dtype, input range): every value is representable after the cast,
# so NumPy's astype is the reference (float -> int truncates toward zero).
CASTS = [
    ("float32", "int32", (-100.9, 100.9)),
    ("float64", "int64", (-1e12, 1e12)),
    ("float32", "int8", (-100.9, 100.9)),
    ("float32", "uint8", (0, 255.9)),
    ("float16", "int32", (-1000, 1000)),
    ("int32", "float32", (-100000, 100000)),
    ("int64", "float64", (-(10**12), 10**12)),
    ("int8", "float32", (-128, 128)),
    ("uint8", "float32", (0, 256)),
    ("uint32", "float64", (0, 4 * 10**9)),
    ("float32", "float16", (-100, 100)),
    ("float32", "bfloat16", (-100, 100)),
    ("float16", "float32", (-100, 100)),
    ("bfloat16", "float32", (-100, 100)),
    ("float64", "float32", (-100, 100)),
    ("float32", "float64", (-100, 100)),
    ("int32", "int8", (-128, 128)),
    ("int8", "int32", (-128, 128)),
    ("uint8", "int32", (0, 256)),
    ("int64", "int32", (-(2**31), 2**31)),
    ("int32", "int64", (-(2**31), 2**31)),
    ("uint32", "int64", (0, 2**32)),
    ("int32", "uint32", (0, 2**31)),
    ("bool", "int32", None),
    ("bool", "float32", None),
    ("int32", "bool", (-2, 3)),
    ("float32", "bool", None),
]


@pytest.mark.parametrize("src,dst,rng_range", CASTS, ids=[f"{s}-to-{d}" for s, d, _ in CASTS])
def test_cast(target, rng, src, dst, rng_range):
    n = 250
    if src == "float32" and dst == "bool":
        x = np.where(rng.random(n) < 0.3, 0.0, rng.uniform(-2, 2, n)).astype(np.float32)
    else:
        x = random_array(rng, n, src, *(rng_range or (None, None)))
    expected = x.astype(np_dtype(dst))
    out = poison_for(expected)
    if run_or_expect_unsupported(
        target,
        [src, dst],
        lambda: CAST_KERNELS[dst][(cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, target=target),
    ):
        assert_close(out, expected)


# ---------------------------------------------------------------- promotion

# Each RULE specializes the kernel on one promotion rule of docs/language.md, checked at
# compile time with static_assert on `.dtype`. Tiles are made inside their rule's branch, so a
# specialization only holds the dtypes that its rule names.
PROMOTION_RULES = {
    "int8+int32": ["int8"],
    "uint8+int32": ["uint8"],
    "uint32+int32": ["uint32"],
    "float16+bfloat16": ["float16", "bfloat16"],
    "int-literal-weak": ["int8"],
    "float-literal-weak": ["float16"],
    "float-literal-on-int": [],
    "truediv-int": ["int8"],
    "compare": ["float64"],
    "float-wider": ["float64"],
    "int+float16": ["float16"],
    "math-on-int": [],
    "math-on-bfloat16": ["bfloat16"],
    "dot-f16-acc": ["float16"],
    "bool+int8": ["bool", "int8"],
}


@cube.kernel
def promotion_kernel(out, RULE: cube.Comptime[int]):
    i32 = cube.zeros((16,), cube.int32)
    f = cube.zeros((16,), cube.float32)
    if RULE == 0:
        cube.static_assert((cube.zeros((16,), cube.int8) + i32).dtype == cube.int32, "i8 + i32")
    elif RULE == 1:
        cube.static_assert((cube.zeros((16,), cube.uint8) + i32).dtype == cube.int32, "u8 + i32")
    elif RULE == 2:
        u32 = cube.zeros((16,), cube.uint32)
        cube.static_assert((u32 + i32).dtype == cube.uint32, "uint32 + int32")
    elif RULE == 3:
        h = cube.zeros((16,), cube.float16)
        bh = cube.zeros((16,), cube.bfloat16)
        cube.static_assert((h + bh).dtype == cube.float32, "float16 + bfloat16")
    elif RULE == 4:
        cube.static_assert((cube.zeros((16,), cube.int8) + 1).dtype == cube.int8, "weak int")
    elif RULE == 5:
        h = cube.zeros((16,), cube.float16)
        cube.static_assert((h * 2.0).dtype == cube.float16, "float literal is weak")
    elif RULE == 6:
        cube.static_assert((i32 * 2.0).dtype == cube.float32, "float literal on int")
    elif RULE == 7:
        i8 = cube.zeros((16,), cube.int8)
        cube.static_assert((i8 / i8).dtype == cube.float32, "/ on integers")
    elif RULE == 8:
        cube.static_assert((f < cube.zeros((16,), cube.float64)).dtype == cube.bool, "compare")
    elif RULE == 9:
        cube.static_assert((f + cube.zeros((16,), cube.float64)).dtype == cube.float64, "wider")
    elif RULE == 10:
        h = cube.zeros((16,), cube.float16)
        cube.static_assert((i32 + h).dtype == cube.float16, "floating kind wins")
    elif RULE == 11:
        cube.static_assert(cube.exp(i32).dtype == cube.float32, "math on int")
    elif RULE == 12:
        bh = cube.zeros((16,), cube.bfloat16)
        cube.static_assert(cube.sqrt(bh).dtype == cube.bfloat16, "math on bfloat16")
    elif RULE == 13:
        m = cube.zeros((16, 16), cube.float16)
        cube.static_assert(cube.dot(m, m).dtype == cube.float32, "dot of float16")
    else:
        b = cube.zeros((16,), cube.bool)
        cube.static_assert((b + cube.zeros((16,), cube.int8)).dtype == cube.int8, "bool + i8")
    cube.store(out + cube.arange(0, 16), f.to(cube.int32) + RULE)


@pytest.mark.parametrize("rule", range(len(PROMOTION_RULES)), ids=list(PROMOTION_RULES))
def test_promotion_rules(target, rule):
    out = poison(16, "int32")
    dtypes = list(PROMOTION_RULES.values())[rule]
    try:
        promotion_kernel[(1,)](out, RULE=rule, target=target)
    except cube.UnsupportedError as err:
        # The tiles never reach memory, so a target may accept a dtype it cannot store; if it
        # refuses, the refusal must name the target and a dtype it lacks.
        assert not target_supports(target, dtypes), err
        assert cube.target_info(target).name in str(err) or target in str(err)
        return
    assert_close(out, np.full(16, rule, dtype=np.int32))


@cube.kernel
def mixed_int_kernel(a8, u8, a32, u32, o1, o2, o3, o4, o5, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    x8 = cube.load(a8 + offs, mask=mask)
    y8 = cube.load(u8 + offs, mask=mask)
    x32 = cube.load(a32 + offs, mask=mask)
    y32 = cube.load(u32 + offs, mask=mask)
    cube.store(o1 + offs, x8 + x32, mask=mask)
    cube.store(o2 + offs, y8 + x32, mask=mask)
    cube.store(o3 + offs, x32 * 0.5, mask=mask)
    cube.store(o4 + offs, x8 + 1, mask=mask)
    cube.store(o5 + offs, y32 + x32, mask=mask)


def test_mixed_integer_promotion_values(target, rng):
    n = 200
    a8 = random_array(rng, n, "int8", -128, 127)  # + 1 stays in int8 range
    u8 = random_array(rng, n, "uint8", 128, 256)  # zero-extended, never sign-extended
    a32 = random_array(rng, n, "int32", -1000, 1000)
    u32 = random_array(rng, n, "uint32", 2000, 10**9)
    outs = [
        poison(n, "int32"),
        poison(n, "int32"),
        poison(n, "float32"),
        poison(n, "int8"),
        poison(n, "uint32"),
    ]
    if run_or_expect_unsupported(
        target,
        ["int8", "uint8", "uint32"],
        lambda: mixed_int_kernel[(cdiv(n, BLOCK),)](
            a8, u8, a32, u32, *outs, n, BLOCK=BLOCK, target=target
        ),
    ):
        assert_close(outs[0], a8.astype(np.int32) + a32)
        assert_close(outs[1], u8.astype(np.int32) + a32)
        assert_close(outs[2], a32.astype(np.float32) * np.float32(0.5))
        assert_close(outs[3], (a8 + np.int8(1)).astype(np.int8))
        assert_close(outs[4], (u32.astype(np.int64) + a32).astype(np.uint32))


@cube.kernel
def half_mix_kernel(h, bh, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(
        out + offs, cube.load(h + offs, mask=mask) + cube.load(bh + offs, mask=mask), mask=mask
    )


def test_float16_plus_bfloat16_is_float32(target, rng):
    n = 200
    h = random_array(rng, n, "float16", -4, 4)
    bh = random_array(rng, n, "bfloat16", -4, 4)
    out = poison(n, "float32")
    if run_or_expect_unsupported(
        target,
        ["float16", "bfloat16"],
        lambda: half_mix_kernel[(cdiv(n, BLOCK),)](h, bh, out, n, BLOCK=BLOCK, target=target),
    ):
        # Both convert exactly to float32, so the sum is one float32 rounding.
        assert_close(out, h.astype(np.float32) + bh.astype(np.float32))


@cube.kernel
def wide_int_kernel(x, y, o_mul, o_sub, o_div, o_mod, o_shr, o_gt, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    a = cube.load(x + offs, mask=mask, other=1)
    b = cube.load(y + offs, mask=mask, other=1)
    cube.store(o_mul + offs, a * b, mask=mask)
    cube.store(o_sub + offs, a - b, mask=mask)
    cube.store(o_div + offs, a // b, mask=mask)
    cube.store(o_mod + offs, a % b, mask=mask)
    cube.store(o_shr + offs, a >> 3, mask=mask)
    cube.store(o_gt + offs, (a > b).to(cube.int32), mask=mask)


@pytest.mark.parametrize("dtype", ["int64", "uint32"])
def test_integers_beyond_31_bits(target, rng, dtype):
    """int64 values past 2**32 and uint32 values past 2**31 (no sign bit, unsigned compare)."""
    n = 300
    if dtype == "int64":
        x = random_array(rng, n, dtype, -(3 * 10**9), 3 * 10**9)
        y = random_array(rng, n, dtype, 1, 10**6) * np.where(rng.random(n) < 0.5, -1, 1)
        mul = x * y
    else:
        x = random_array(rng, n, dtype, 2**31, 2**32)
        y = random_array(rng, n, dtype, 1, 2**32)
        mul = (x.astype(np.uint64) * y % 2**32).astype(np.uint32)  # wraps modulo 2**32
    sub = (x.astype(np.int64) - y.astype(np.int64)).astype(np_dtype(dtype))  # uint32: wraps
    outs = [poison(n, dtype) for _ in range(5)] + [poison(n, "int32")]
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: wide_int_kernel[(cdiv(n, BLOCK),)](x, y, *outs, n, BLOCK=BLOCK, target=target),
    ):
        expected = [mul, sub, x // y, x % y, x >> 3, (x > y).astype(np.int32)]
        for got, want in zip(outs, expected):
            assert_close(got, want)


@cube.kernel
def int64_with_int32_kernel(x, y, k, s, o_div, o_mod, o_shl, o_shr, o_where, o_shl_s,
                            BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    a = cube.load(x + i)  # int64
    d = cube.load(y + i)  # int32, widened to int64 by each op
    amount = cube.load(k + i)  # int32
    cube.store(o_div + i, a // d)
    cube.store(o_mod + i, a % d)
    cube.store(o_shl + i, a << amount)
    cube.store(o_shr + i, a >> amount)
    cube.store(o_where + i, cube.where(d.to(cube.int64) > 2, a, -a))
    cube.store(o_shl_s + i, a << s)  # a Python int: an int32 scalar


def test_int64_with_int32_operands(target, rng):
    """int32 values widened to int64 compare, divide and shift as int64 (lavapipe once compared
    a widened int32 with a constant wrongly: `i64(y) >= 0` was always true)."""
    n = 128
    x = rng.integers(-(2**40), 2**40, n, dtype=np.int64)
    x[:4] = [-7, 7, -(2**62), 2**62]
    y = rng.integers(-9, 10, n, dtype=np.int64).astype(np.int32)
    y[:6] = [2, -2, 0, -(2**31), 2**31 - 1, -1]
    k = rng.integers(-3, 70, n, dtype=np.int64).astype(np.int32)
    outs = [poison(n, "int64") for _ in range(6)]
    if not run_or_expect_unsupported(
        target, ["int64"],
        lambda: int64_with_int32_kernel[(1,)](x, y, k, 5, *outs, BLOCK=n, target=target),
    ):
        return
    y64, k64 = y.astype(np.int64), k.astype(np.int64)
    inside = (k64 >= 0) & (k64 < 64)
    shift = np.clip(k64, 0, 63)
    with np.errstate(divide="ignore"):
        expected = [x // y64, x % y64, np.where(inside, x << shift, 0),
                    np.where(inside, x >> shift, np.where(x < 0, -1, 0)),
                    np.where(y64 > 2, x, -x), x << 5]
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(got, want)


@cube.kernel
def cast_after_arithmetic(x, wide, single, whole, n, BLOCK: cube.Comptime[int],
                          ROWS: cube.Comptime[int]):
    # ROWS > 1: a 2-D tile, which the cpu target runs in its tile form rather than lane loops
    offs = cube.arange(0, ROWS)[:, None] * BLOCK + cube.arange(0, BLOCK)[None, :]
    m = offs < n
    v = cube.load(x + offs, mask=m)
    cube.store(wide + offs, cube.exp(v).to(cube.float64), mask=m)
    cube.store(single + offs, (v * 3.0).to(cube.float32), mask=m)
    cube.store(whole + offs, (v * 3.0).to(cube.int32), mask=m)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's overflow under the interpreter
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("rows", [1, 2])
def test_a_cast_reads_the_16_bit_value(target, dtype, rows):
    """Arithmetic on float16 and bfloat16 may run in float32 registers (cpu, wgsl, bfloat16 on
    Triton's interpreter), but a cast reads the value of the tile's dtype, as NumPy and the GPUs
    do: float16 exp(12.79) is inf as a float64, not 358277, and 683 * 3 in bfloat16 is 2048."""
    x = np.array([12.7890625, 1.0, 683.0, 0.1, -7.3, 3e-3, 100.0, 2.0], np_dtype(dtype))
    n = x.size
    wide, single, whole = poison(n, "float64"), poison(n, "float32"), poison(n, "int32")
    if not run_or_expect_unsupported(target, [dtype], lambda: cast_after_arithmetic[(1,)](
            x, wide, single, whole, n, BLOCK=8 // rows, ROWS=rows, target=target)):
        return
    as_float = x.astype(np.float32)
    tripled = (as_float * 3).astype(x.dtype).astype(np.float32)
    np.testing.assert_array_equal(wide, np.exp(as_float).astype(x.dtype).astype(np.float64))
    np.testing.assert_array_equal(single, tripled)
    np.testing.assert_array_equal(whole, tripled.astype(np.int32))
