"""Triton's row builtins, spelled as Triton's: reductions with ``keep_dims``, ``softmax``,
``squeeze``/``unsqueeze``, ``gather`` and ``histogram``. Checked against NumPy on every
target (bit for bit where values only move); wrong uses are compile errors at the user's
line."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    assert_close,
    assert_points_at_the_line,
    dyadic_array,
    np_dtype,
    random_array,
    run_or_expect_unsupported,
    same_bits,
)

import cubepy as cube

R, C = 8, 16


@cube.kernel
def kept_dims(x, minus_row_sum, minus_col_max, minus_min, row_argmax, R: cube.Comptime[int],
              C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    v = cube.load(x + offs)
    row_sum = cube.sum(v, axis=1, keep_dims=True)
    least = cube.min(v, keep_dims=True)
    cube.static_assert(row_sum.shape == (R, 1) and least.shape == (1, 1))
    cube.store(minus_row_sum + offs, v - row_sum)
    cube.store(minus_col_max + offs, v - cube.max(v, axis=0, keep_dims=True))
    cube.store(minus_min + offs, v - least)
    cube.store(row_argmax + offs, cube.argmax(v, 1, keep_dims=True) + offs * 0)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_reductions_keep_dims(target, rng, dtype):
    # multiples of 1/8: the row sums are exact in any order of addition
    x = dyadic_array(rng, (R, C), dtype, 800) if dtype == "float32" else \
        random_array(rng, (R, C), dtype, -100, 100)
    outs = [np.zeros_like(x) for _ in range(3)] + [np.zeros((R, C), np.int32)]
    kept_dims[(1,)](x, *outs, R=R, C=C, target=target)
    np.testing.assert_array_equal(outs[0], x - x.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(outs[1], x - x.max(axis=0, keepdims=True))
    np.testing.assert_array_equal(outs[2], x - x.min())
    np.testing.assert_array_equal(outs[3], np.broadcast_to(x.argmax(axis=1)[:, None], (R, C)))


@cube.kernel
def softmaxes(x, by_rows, by_cols, R: cube.Comptime[int], C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    v = cube.load(x + offs)
    cube.store(by_rows + offs, cube.softmax(v, dim=1))
    cube.store(by_cols + offs, cube.softmax(v))  # axis 0, as Triton's


def softmax_reference(x: np.ndarray, axis: int) -> np.ndarray:
    wide = x.astype(np.float64)
    e = np.exp(wide - wide.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_softmax_along_either_axis(target, rng, dtype):
    x = random_array(rng, (R, C), dtype, -30, 30)
    by_rows, by_cols = np.zeros_like(x), np.zeros_like(x)
    if run_or_expect_unsupported(target, [dtype], lambda: softmaxes[(1,)](
            x, by_rows, by_cols, R=R, C=C, target=target)):
        assert_close(by_rows, softmax_reference(x, 1))
        assert_close(by_cols, softmax_reference(x, 0))


@cube.kernel
def squeezed(x, out, first, C: cube.Comptime[int]):
    row = cube.unsqueeze(cube.load(x + cube.arange(0, C)), 0)  # (1, C)
    cube.static_assert(row.shape == (1, C))
    col = cube.unsqueeze(cube.squeeze(row, 0), -1)  # (C, 1)
    cube.store(out + cube.arange(0, C), cube.squeeze(col, 1) * 2)
    one = cube.squeeze(cube.load(x + cube.arange(0, 1)), 0)  # a 1-D tile of one: a scalar
    cube.static_assert(one.shape == ())
    cube.store(first, one)


def test_squeeze_and_unsqueeze(target, rng):
    x = random_array(rng, C, "float32")
    x[0] = -0.0
    out, first = np.zeros(C, np.float32), np.zeros(1, np.float32)
    squeezed[(1,)](x, out, first, C=C, target=target)
    np.testing.assert_array_equal(out, x * 2)
    assert same_bits(first, x[:1])


@cube.kernel
def gathered(src, index, out, R: cube.Comptime[int], C: cube.Comptime[int],
             AXIS: cube.Comptime[int], M: cube.Comptime[int]):
    src_offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    if AXIS == 0:
        offs = cube.arange(0, M)[:, None] * C + cube.arange(0, C)[None, :]
    else:
        offs = cube.arange(0, R)[:, None] * M + cube.arange(0, M)[None, :]
    picked = cube.gather(cube.load(src + src_offs), cube.load(index + offs), AXIS)
    cube.store(out + offs, picked)


def gather_case(rng: np.random.Generator, dtype: str, axis: int, m: int, index_dtype: str):
    """A source with signed zeros and NaNs among its values, and indices of ``index_dtype``
    (some past either end) for ``gathered``."""
    src = random_array(rng, (R, C), dtype, 0 if dtype.startswith("u") else -50, 50)
    if np_dtype(dtype).kind == "f":
        src[0, :3] = [-0.0, np.nan, -np.inf]
    n = src.shape[axis]
    shape = (m, C) if axis == 0 else (R, m)
    index = rng.integers(-3, n + 3, shape).astype(np_dtype(index_dtype))
    if index_dtype.startswith("u"):
        index = np.minimum(index, n + 2)
    return src, index


def gather_reference(src: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
    """NumPy's take_along_axis, an index past an end reading that end."""
    n = src.shape[axis]
    return np.take_along_axis(src, np.clip(index.astype(np.int64), 0, n - 1), axis)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "int8"])
@pytest.mark.parametrize("axis, m, index_dtype", [(0, R, "int32"), (1, 2 * C, "int64"),
                                                  (1, 4, "uint32"), (0, 2, "int32")])
def test_gather_matches_take_along_axis(target, rng, dtype, axis, m, index_dtype):
    src, index = gather_case(rng, dtype, axis, m, index_dtype)
    out = np.zeros(index.shape, src.dtype)
    if run_or_expect_unsupported(target, [dtype, index_dtype], lambda: gathered[(1,)](
            src, index, out, R=R, C=C, AXIS=axis, M=m, target=target)):
        assert same_bits(out, gather_reference(src, index, axis))


@cube.kernel
def counted(x, n, counts, masked_counts, BLOCK: cube.Comptime[int], BINS: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n, other=-1)  # -1 counts nowhere
    cube.store(counts + cube.arange(0, BINS), cube.histogram(v, BINS))
    cube.store(masked_counts + cube.arange(0, BINS),
               cube.histogram(v, BINS, mask=(offs % 2) == 0))


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
def test_histogram_counts_each_bin(target, rng, dtype):
    n, bins = 200, 32
    x = rng.integers(0, bins + 8, n).astype(np_dtype(dtype))  # some past the last bin
    counts, masked = np.zeros(bins, np.int32), np.zeros(bins, np.int32)
    if run_or_expect_unsupported(target, [dtype], lambda: counted[(1,)](
            x, n, counts, masked, BLOCK=256, BINS=bins, target=target)):
        assert_histograms(x, counts, masked)


def assert_histograms(x: np.ndarray, counts: np.ndarray, masked: np.ndarray) -> None:
    """``counted``'s outputs: every element's bin, and the even-indexed elements' bins."""
    bins = counts.size
    inside = x[x < bins].astype(np.int64)
    np.testing.assert_array_equal(counts, np.bincount(inside, minlength=bins))
    even = x[::2][x[::2] < bins].astype(np.int64)
    np.testing.assert_array_equal(masked, np.bincount(even, minlength=bins))


@cube.kernel
def squeeze_of_a_long_axis(x):
    cube.store(x + cube.arange(0, 8), cube.squeeze(cube.load(x + cube.arange(0, 8)), 0))


@cube.kernel
def gather_of_float_indices(x):
    offs = cube.arange(0, 8)
    cube.store(x + offs, cube.gather(cube.load(x + offs), cube.load(x + offs), 0))


@cube.kernel
def gather_of_other_shapes(x):
    v = cube.load(x + cube.arange(0, 4)[:, None] * 4 + cube.arange(0, 4)[None, :])
    cube.store(x + cube.arange(0, 8), cube.gather(v, cube.arange(0, 8)[:, None], 0))


@cube.kernel
def histogram_of_floats(x, out):
    cube.store(out + cube.arange(0, 8), cube.histogram(cube.load(x + cube.arange(0, 8)), 8))


@cube.kernel
def histogram_of_six_bins(x, out):
    v = cube.load(out + cube.arange(0, 8))
    cube.store(out + cube.arange(0, 8), cube.histogram(v, 6))


@cube.kernel
def keep_dims_at_run_time(x, out, keep):
    cube.store(out, cube.sum(cube.load(x + cube.arange(0, 8)), keep_dims=keep))


@cube.kernel
def reduce_or_of_floats(x, out):
    cube.store(out, cube.reduce_or(cube.load(x + cube.arange(0, 8))))


@pytest.mark.parametrize("kernel, message", [
    (squeeze_of_a_long_axis, "cube.squeeze(): dim 0 is not an axis of length 1"),
    (gather_of_float_indices, "cube.gather() needs integer indices, got a float32 tile"),
    (gather_of_other_shapes, "needs indices of that shape but along axis 0, got (8, 1)"),
    (histogram_of_floats, "cube.histogram() counts a 1-D integer tile, got a float32 tile"),
    (histogram_of_six_bins, "num_bins must be a compile-time power of two, got 6"),
    (keep_dims_at_run_time, "keep_dims must be a compile-time bool"),
    (reduce_or_of_floats, "cube.reduce_or() needs an integer tile, got float32"),
])
def test_wrong_uses_point_at_the_line(kernel, message):
    x, out = np.zeros(16, np.float32), np.zeros(16, np.int32)
    args = {squeeze_of_a_long_axis: (x,), gather_of_float_indices: (x,),
            gather_of_other_shapes: (x,), keep_dims_at_run_time: (x, x, 1)}.get(kernel, (x, out))
    assert_points_at_the_line(lambda: kernel[(1,)](*args, target="cpu:debug"), message,
                              "test_ported_rows.py")


@cube.kernel
def triton_reduction_options(x, peak, peak_at, low_at, wide_sum, back_sums, back_products,
                             R: cube.Comptime[int], C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    v = cube.load(x + offs)
    value, at = cube.max(v, axis=1, return_indices=True, return_indices_tie_break_left=False)
    cube.store(peak + cube.arange(0, R), value)
    cube.store(peak_at + cube.arange(0, R), at)
    _, lowest = cube.min(v, 0, return_indices=True, keep_dims=True)
    cube.static_assert(lowest.shape == (1, C))
    cube.store(low_at + offs, lowest + offs * 0)
    cube.store(wide_sum + cube.arange(0, R), cube.sum(v * 30000000, 1, dtype=cube.int64))
    cube.store(back_sums + offs, cube.cumsum(v, 1, reverse=True))
    cube.store(back_products + offs, cube.cumprod(v % 3 + 1, 0, reverse=True, dtype=cube.int64))


def reduction_options_case(rng: np.random.Generator) -> tuple[np.ndarray, list[np.ndarray]]:
    """Input and zeroed outputs of ``triton_reduction_options``."""
    x = random_array(rng, (R, C), "int32", -60, 60)
    x[:, 3] = x[:, 11] = 60  # a tie for the max (the others are below 60): the first
    return x, [np.zeros(R, np.int32), np.zeros(R, np.int32), np.zeros((R, C), np.int32),
               np.zeros(R, np.int64), np.zeros((R, C), np.int32), np.zeros((R, C), np.int64)]


def test_reduction_options_of_triton(target, rng):
    x, outs = reduction_options_case(rng)
    triton_reduction_options[(1,)](x, *outs, R=R, C=C, target=target)
    assert_reduction_options(x, outs)


def assert_reduction_options(x: np.ndarray, outs: list[np.ndarray]) -> None:
    peak, peak_at, low_at, wide, back_sums, back_products = outs
    np.testing.assert_array_equal(peak, x.max(axis=1))
    np.testing.assert_array_equal(peak_at, np.full(R, 3))
    np.testing.assert_array_equal(low_at, np.broadcast_to(x.argmin(axis=0), (R, C)))
    # int32 values near 2^31 whose sums would wrap in int32: cast first, summed in int64
    np.testing.assert_array_equal(wide, (x.astype(np.int64) * 30000000).sum(axis=1))
    np.testing.assert_array_equal(back_sums, np.cumsum(x[:, ::-1], axis=1)[:, ::-1])
    factors = (x % 3 + 1).astype(np.int64)
    np.testing.assert_array_equal(back_products, np.cumprod(factors[::-1], axis=0)[::-1])


@cube.kernel
def scans_of_moved_tiles(x, of_flipped, of_transposed, R: cube.Comptime[int],
                         C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    v = cube.load(x + offs)
    cube.store(of_flipped + offs, cube.cumsum(cube.flip(v, 1), 1))
    t_offs = cube.arange(0, C)[:, None] * R + cube.arange(0, R)[None, :]
    cube.store(of_transposed + t_offs, cube.cumsum(cube.trans(v), 1))


@pytest.mark.parametrize("rows, cols", [(8, 16), (16, 64)])
def test_scan_along_rows_of_a_moved_tile(target, rng, rows, cols):
    # wgsl stages such a tile in workgroup memory; its row scan reused that memory for the
    # subgroups' totals while other invocations still read it (every slot is read first now)
    x = random_array(rng, (rows, cols), "int32", -60, 60)
    of_flipped, of_transposed = np.zeros_like(x), np.zeros((cols, rows), np.int32)
    scans_of_moved_tiles[(1,)](x, of_flipped, of_transposed, R=rows, C=cols, target=target)
    np.testing.assert_array_equal(of_flipped, np.cumsum(x[:, ::-1], axis=1))
    np.testing.assert_array_equal(of_transposed, np.cumsum(x.T, axis=1))
