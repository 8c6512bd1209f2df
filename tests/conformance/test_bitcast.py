"""``x.to(dtype, bitcast=True)`` and ``cube.cast(x, dtype, bitcast=True)``: the bits of each
value read as another dtype of the same width, as NumPy's ``view``. Every pair of widths
cubepy has, over random bit patterns and the special ones (zeros of both signs, subnormals,
infinities, quiet and signalling NaNs with payloads), bit for bit on every target; a target
that lacks a dtype refuses it; misuse is an error at the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    BF16,
    assert_close,
    assert_points_at_the_line,
    np_dtype,
    run_or_expect_unsupported,
)

import cubepy as cube

PAIRS = [
    ("float32", "int32"), ("int32", "float32"), ("float32", "uint32"), ("uint32", "float32"),
    ("int32", "uint32"), ("uint32", "int32"), ("float64", "int64"), ("int64", "float64"),
    ("float16", "int16"), ("int16", "float16"), ("bfloat16", "int16"), ("int16", "bfloat16"),
    ("float16", "bfloat16"), ("bfloat16", "float16"), ("int8", "uint8"), ("uint8", "int8"),
]
# Bit patterns that float layouts of each width treat specially: signed zeros, the smallest and
# largest subnormals, the smallest normal, the largest finite value, infinities, quiet and
# signalling NaNs with payloads (for 16 bits, float16's and bfloat16's alike).
SPECIAL_BITS = {
    8: [0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF],
    16: [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01,
         0xFE01, 0x0080, 0x7F7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC1, 0xFFFF],
    32: [0x00000000, 0x80000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000,
         0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00123, 0x7FBFFFFF, 0xFFFFFFFF],
    64: [0, 1 << 63, 1, (1 << 52) - 1, 1 << 52, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000,
         0xFFF0000000000000, 0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000000123,
         (1 << 64) - 1],
}


def bit_patterns(rng: np.random.Generator, dtype: str, n: int) -> np.ndarray:
    """``n`` values of ``dtype`` whose bits are the special patterns, then random ones."""
    bits = np_dtype(dtype).itemsize * 8
    unsigned = np.dtype(f"uint{bits}")
    random = rng.integers(0, np.iinfo(unsigned).max, n, dtype=unsigned, endpoint=True)
    special = np.array(SPECIAL_BITS[bits], dtype=unsigned)
    random[: special.size] = special
    return random.view(np_dtype(dtype))


@cube.kernel
def bitcast_lanes(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=mask).to(out.dtype, bitcast=True),
               mask=mask)


@cube.kernel
def bitcast_blocks(x, out, n, ROWS: cube.Comptime[int], COLS: cube.Comptime[int]):
    # 2-D tiles: the cpu target's tile form, where the 1-D kernel runs as lane loops
    offs = (cube.cube_pos(0) * ROWS * COLS + cube.arange(0, ROWS)[:, None] * COLS
            + cube.arange(0, COLS)[None, :])
    mask = offs < n
    cube.store(out + offs, cube.cast(cube.load(x + offs, mask=mask), out.dtype, bitcast=True),
               mask=mask)


def assert_same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    width = np.dtype(f"uint{expected.itemsize * 8}")
    wrong = np.flatnonzero(got.view(width) != expected.view(width))
    assert wrong.size == 0, (
        f"{wrong.size} of {got.size} differ, first at {wrong[0]}: got bits "
        f"{got.view(width)[wrong[0]]:#x}, expected {expected.view(width)[wrong[0]]:#x}")


@pytest.mark.parametrize("src, dst", PAIRS, ids=lambda d: str(d))
@pytest.mark.parametrize("form", ["lanes", "blocks"])
def test_bitcast_keeps_every_bit(target, rng, src, dst, form):
    n = 2000  # ragged: the last cube is masked
    x = bit_patterns(rng, src, n)
    out = np.zeros(n, np_dtype(dst))
    if form == "lanes":
        launch = lambda: bitcast_lanes[(cube.cdiv(n, 256),)](x, out, n, BLOCK=256,  # noqa: E731
                                                            target=target)
    else:
        launch = lambda: bitcast_blocks[(cube.cdiv(n, 128),)](  # noqa: E731
            x, out, n, ROWS=8, COLS=16, target=target)
    if run_or_expect_unsupported(target, [src, dst], launch):
        assert_same_bits(out, x.view(np_dtype(dst)))


@cube.kernel
def bitcast_after_arithmetic(x, values, bits, n, BLOCK: cube.Comptime[int]):
    # y is computed (cpu and wgsl hold a 16-bit float's arithmetic in float32): its bitcast
    # reads the value that its store writes
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    y = cube.load(x + offs, mask=mask) * 3.0 + 1.0
    cube.store(values + offs, y, mask=mask)
    cube.store(bits + offs, y.to(bits.dtype, bitcast=True), mask=mask)


@pytest.mark.parametrize("src, dst", [("float16", "int16"), ("bfloat16", "int16"),
                                      ("float16", "bfloat16"), ("float32", "uint32")], ids=str)
def test_bitcast_of_a_computed_value_reads_the_value_stored(target, rng, src, dst):
    n = 1000
    x = rng.standard_normal(n).astype(np_dtype(src))
    values, bits = np.zeros(n, np_dtype(src)), np.zeros(n, np_dtype(dst))
    launch = lambda: bitcast_after_arithmetic[(4,)](x, values, bits, n, BLOCK=256,  # noqa: E731
                                                     target=target)
    if run_or_expect_unsupported(target, [src, dst], launch):
        assert_close(values, x.astype(np.float64) * 3.0 + 1.0)
        assert_same_bits(bits, values.view(np_dtype(dst)))


@cube.kernel
def float_sign_bits(x, out, n, BLOCK: cube.Comptime[int]):
    # what bitcasts are for: the sign bit of float32 values, -0.0 and NaN included
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    bits = cube.load(x + offs, mask=mask).to(cube.uint32, bitcast=True)
    cube.store(out + offs, (bits >> 31).to(cube.int32), mask=mask)


def test_sign_bits_of_floats(target):
    x = np.array([1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45], np.float32)
    x = np.concatenate([x, -np.abs(np.float32([np.nan])), np.abs(np.float32([np.nan]))])
    out = np.full(x.size, 7, np.int32)
    float_sign_bits[(1,)](x, out, x.size, BLOCK=16, target=target)
    np.testing.assert_array_equal(out, np.signbit(x).astype(np.int32))


@cube.kernel
def sortable_keys(x, keys, back, n, BLOCK: cube.Comptime[int]):
    # the radix-sort key of a float: flip every bit of a negative number, only the sign bit
    # of a positive one, so that unsigned order is float order; and back again
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    bits = cube.load(x + offs, mask=mask).to(cube.uint32, bitcast=True)
    key = cube.where((bits >> 31) == 1, ~bits, bits | 0x80000000)
    cube.store(keys + offs, key, mask=mask)
    undone = cube.where((key >> 31) == 1, key & 0x7FFFFFFF, ~key)
    cube.store(back + offs, undone.to(cube.float32, bitcast=True), mask=mask)


def test_float_sort_keys_round_trip(target, rng):
    x = np.concatenate([rng.standard_normal(500), [0.0, -0.0, np.inf, -np.inf, 1e-45,
                                                   -1e-45, 3.4e38, -3.4e38]]).astype(np.float32)
    keys, back = np.zeros(x.size, np.uint32), np.zeros(x.size, np.float32)
    sortable_keys[(cube.cdiv(x.size, 256),)](x, keys, back, x.size, BLOCK=256, target=target)
    assert_same_bits(back, x)
    order = np.argsort(keys, kind="stable")
    assert np.all(np.diff(x[order].astype(np.float64)) >= 0)  # -0.0 before +0.0: equal


@cube.kernel
def scalar_bitcast(out, bits):
    cube.store(out, bits.to(cube.float32, bitcast=True) * 2.0)


def test_bitcast_of_a_scalar_argument(target):
    out = np.zeros(1, np.float32)
    scalar_bitcast[(1,)](out, 0x3FC00000, target=target)  # 1.5
    assert out[0] == 3.0


@cube.kernel
def bitcast_of_a_constant(out):
    cube.store(out, cube.cast(-1, cube.uint32, bitcast=True))


def test_bitcast_of_a_constant_folds_to_its_bits(target):
    out = np.zeros(1, np.uint32)
    bitcast_of_a_constant[(1,)](out, target=target)
    assert out[0] == 0xFFFFFFFF


@cube.kernel
def wider(x):
    v = cube.load(x + cube.arange(0, 16))
    cube.store(x + cube.arange(0, 16), v.to(cube.int64, bitcast=True).to(cube.float32))


@cube.kernel
def to_bool(x):
    v = cube.load(x + cube.arange(0, 16))
    cube.store(x + cube.arange(0, 16), v.to(cube.bool, bitcast=True).to(cube.float32))


@cube.kernel
def of_a_pointer(x):
    p = (x + cube.arange(0, 16)).to(cube.int64, bitcast=True)
    cube.store(x + cube.arange(0, 16), p.to(cube.float32))


@cube.kernel
def run_time_flag(x, flag):
    v = cube.load(x + cube.arange(0, 16))
    cube.store(x + cube.arange(0, 16), cube.cast(v, cube.int32, bitcast=flag).to(cube.float32))


@pytest.mark.parametrize("kernel, message", [
    (wider, "cannot bitcast float32 (32 bits) to int64 (64 bits): a bitcast keeps the width"),
    (to_bool, "cannot bitcast float32 to bool: bool has no bit pattern to reinterpret"),
    (of_a_pointer, "pointers cannot be bitcast"),
    (run_time_flag, "cube.cast()'s bitcast must be True or False"),
])
def test_wrong_bitcasts_point_at_the_line(kernel, message):
    args = (1,) if kernel is run_time_flag else ()
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(16, np.float32), *args,
                                                   target="cpu"),
                              message, "test_bitcast.py")



def _to_gpu(a: np.ndarray):
    """``a`` on the GPU as torch, bit for bit (bfloat16 travels as its int16 patterns)."""
    torch = pytest.importorskip("torch")
    if a.dtype == BF16:
        return torch.from_numpy(a.view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(a).cuda()


def _to_host(t, dtype: np.dtype) -> np.ndarray:
    torch = pytest.importorskip("torch")
    if dtype == BF16:
        return t.view(torch.int16).cpu().numpy().view(BF16)
    return t.cpu().numpy()


@pytest.mark.gpu
@pytest.mark.parametrize("src, dst", PAIRS, ids=lambda d: str(d))
def test_bitcast_keeps_every_bit_on_the_gpu(rng, src, dst):
    n = 2000
    x = bit_patterns(rng, src, n)
    out = _to_gpu(np.zeros(n, np_dtype(dst)))
    bitcast_lanes[(cube.cdiv(n, 256),)](_to_gpu(x), out, n, BLOCK=256)
    assert_same_bits(_to_host(out, np_dtype(dst)), x.view(np_dtype(dst)))
