"""Triton's shape and index builtins, spelled as Triton's: ``ravel``, ``view``, ``broadcast``,
``flip``, ``join``, ``split``, ``interleave``, ``cat``, ``swizzle2d`` (the grouped order of a
matmul's tiles) and ``static_print`` (at compile time). Checked against NumPy on every target,
bit for bit where values only move (NaN payloads aside); wrong uses are compile errors at the
user's line."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    assert_close,
    assert_points_at_the_line,
    np_dtype,
    random_array,
    run_or_expect_unsupported,
    same_bits,
)

import cubepy as cube


@cube.kernel
def reshaped(x, flat, viewed, ROWS: cube.Comptime[int], COLS: cube.Comptime[int]):
    block = cube.load(x + cube.arange(0, ROWS)[:, None] * COLS + cube.arange(0, COLS)[None, :])
    cube.store(flat + cube.arange(0, ROWS * COLS), cube.ravel(block) * 2.0)
    pairs = cube.view(block, (ROWS * COLS // 2, 2))
    cube.store(viewed + cube.arange(0, ROWS * COLS // 2), cube.sum(pairs, axis=1))


def test_ravel_and_view_keep_row_major_order(target, rng):
    x = random_array(rng, (4, 8), "float32")
    flat, viewed = np.zeros(32, np.float32), np.zeros(16, np.float32)
    reshaped[(1,)](x, flat, viewed, ROWS=4, COLS=8, target=target)
    np.testing.assert_array_equal(flat, x.ravel() * 2)
    np.testing.assert_allclose(viewed, x.reshape(16, 2).sum(axis=1), rtol=1e-6)


@cube.kernel
def outer(out, ROWS: cube.Comptime[int], COLS: cube.Comptime[int]):
    rows, cols = cube.broadcast(cube.arange(0, ROWS)[:, None], cube.arange(0, COLS)[None, :])
    cube.static_assert(rows.shape == (ROWS, COLS) and cols.shape == (ROWS, COLS))
    scalar, tile = cube.broadcast(3, cols)  # a scalar becomes a tile of the common shape
    cube.store(out + cube.ravel(rows * COLS + cols), cube.ravel(rows * 100 + tile * scalar))


def test_broadcast_gives_both_the_common_shape(target):
    out = np.zeros(32, np.int32)
    outer[(1,)](out, ROWS=4, COLS=8, target=target)
    rows, cols = np.meshgrid(np.arange(4), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(out, (rows * 100 + cols * 3).ravel())


def swizzle_reference(size_i: int, size_j: int, size_g: int) -> np.ndarray:
    """new[(i, j)] as (new_i, new_j): the k-th position in row-major order takes the k-th
    position of the order that goes down each column of a band of size_g rows, band by band."""
    order = [(i, j) for band in range(0, size_i, size_g) for j in range(size_j)
             for i in range(band, min(band + size_g, size_i))]
    return np.array(order, np.int32).reshape(size_i, size_j, 2)


@cube.kernel
def swizzled(out_i, out_j, size_i, size_j, size_g, BI: cube.Comptime[int],
             BJ: cube.Comptime[int]):
    i, j = cube.broadcast(cube.arange(0, BI)[:, None], cube.arange(0, BJ)[None, :])
    inside = (i < size_i) & (j < size_j)
    new_i, new_j = cube.swizzle2d(i, j, size_i, size_j, size_g)
    cube.store(out_i + i * size_j + j, new_i, mask=inside)
    cube.store(out_j + i * size_j + j, new_j, mask=inside)


@pytest.mark.parametrize("size_i, size_j, size_g", [(4, 4, 2), (5, 3, 2), (7, 6, 3),
                                                    (8, 8, 8), (6, 5, 1), (3, 4, 8)])
def test_swizzle2d_runs_down_the_columns_of_each_band(target, size_i, size_j, size_g):
    out_i, out_j = (np.full(size_i * size_j, -1, np.int32) for _ in range(2))
    swizzled[(1,)](out_i, out_j, size_i, size_j, size_g, BI=8, BJ=8, target=target)
    want = swizzle_reference(size_i, size_j, size_g)
    np.testing.assert_array_equal(out_i.reshape(size_i, size_j), want[..., 0])
    np.testing.assert_array_equal(out_j.reshape(size_i, size_j), want[..., 1])


@cube.kernel
def swizzled_at_compile_time(out, I: cube.Comptime[int], J: cube.Comptime[int]):
    new_i, new_j = cube.swizzle2d(I, J, 5, 3, 2)  # Python ints: a Python answer
    cube.static_assert(isinstance(new_i, int))
    cube.store(out, new_i * 10 + new_j)


def test_swizzle2d_of_python_ints_is_computed_at_compile_time(target):
    want = swizzle_reference(5, 3, 2)
    for i, j in [(0, 1), (1, 2), (4, 0), (4, 2)]:
        out = np.zeros(1, np.int32)
        swizzled_at_compile_time[(1,)](out, I=i, J=j, target=target)
        assert out[0] == want[i, j, 0] * 10 + want[i, j, 1]


@cube.kernel
def printed(x, out, BLOCK: cube.Comptime[int]):
    v = cube.load(x + cube.arange(0, BLOCK))
    cube.static_print("BLOCK is", BLOCK, "and v is", v)
    cube.store(out + cube.arange(0, BLOCK), v)


def test_static_print_prints_once_per_specialization_at_compile_time(capsys):
    x, out = np.ones(16, np.float32), np.zeros(16, np.float32)
    printed[(1,)](x, out, BLOCK=16, target="cpu:debug")
    first = capsys.readouterr().out
    assert "test_ported_shapes.py:" in first
    assert "BLOCK is 16 and v is a float32 tile of shape (16,)" in first
    printed[(1,)](x, out, BLOCK=16, target="cpu:debug")  # compiled already: nothing
    assert "BLOCK is" not in capsys.readouterr().out


@cube.kernel
def triton_spellings(x, moved, sums, R: cube.Comptime[int], C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    v = cube.load(x + offs)
    back = cube.reshape(v, R * C).reshape(R, C)  # shapes as ints, and a tile's method
    four = cube.trans(cube.expand_dims(back, (0, 3)), 0, 2, 1, 3)  # trans(x, *dims): permute
    cube.static_assert(four.shape == (1, C, R, 1))
    cube.store(moved + offs, four.permute(2, 1, 0, 3).view((R, C)) + cube.broadcast_to(
        cube.arange(0, C)[None, :], R, C).to(cube.float32))
    cube.store(sums + cube.arange(0, R), v.sum(1) + v.max(axis=1) + v.exp().min(1))


def test_triton_spellings_of_shapes_and_methods(target, rng):
    x = random_array(rng, (4, 8), "float32")
    moved, sums = np.zeros((4, 8), np.float32), np.zeros(4, np.float32)
    triton_spellings[(1,)](x, moved, sums, R=4, C=8, target=target)
    np.testing.assert_array_equal(moved, x + np.arange(8, dtype=np.float32))
    assert_close(sums, x.sum(1).astype(np.float64) + x.max(1) + np.exp(x.astype(np.float64)).min(1))


@cube.kernel
def ravel_of_a_scalar(out):
    cube.store(out, cube.ravel(1.0))


@cube.kernel
def broadcast_mismatch(out):
    a, b = cube.broadcast(cube.arange(0, 4), cube.arange(0, 8))
    cube.store(out + a, b)


@cube.kernel
def view_of_another_size(out):
    cube.store(out + cube.arange(0, 8), cube.view(cube.arange(0, 4), (8,)))


FLIP_R, FLIP_C = 8, 16


@cube.kernel
def flipped_2d(x, by_rows, by_cols, mirrored, weighted, R: cube.Comptime[int],
               C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    v = cube.load(x + offs)
    cube.store(by_rows + offs, cube.flip(v, 0))
    cube.store(by_cols + offs, cube.flip(v, dim=-1))
    cube.store(mirrored + offs, v - cube.flip(v))  # the last axis by default
    cube.store(weighted + cube.arange(0, R),
               cube.sum(cube.flip(v, 1) * cube.arange(0, C)[None, :].to(v.dtype), axis=1))


def assert_flipped(x: np.ndarray, outs: list[np.ndarray]) -> None:
    """``flipped_2d``'s outputs for ``x``."""
    wide = x.astype(np.float64 if x.dtype.kind == "f" else np.int64)
    np.testing.assert_array_equal(outs[0], x[::-1])
    np.testing.assert_array_equal(outs[1], x[:, ::-1])
    assert_close(outs[2], wide - wide[:, ::-1])
    terms = wide[:, ::-1] * np.arange(x.shape[1])
    if x.dtype.kind != "f":
        np.testing.assert_array_equal(outs[3], terms.sum(axis=1))
        return
    # a sum of n terms may cancel: its rounding is bounded by (n + 1) eps times the sum of
    # their magnitudes (each row's own), plus the store's half ulp
    eps = np.finfo(x.dtype).eps
    bound = (x.shape[1] + 1) * eps * np.abs(terms).sum(axis=1) + eps * np.abs(terms.sum(axis=1))
    assert np.all(np.abs(outs[3] - terms.sum(axis=1)) <= bound), (outs[3], terms.sum(axis=1))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64"])
def test_flip_2d(target, rng, dtype):
    x = random_array(rng, (FLIP_R, FLIP_C), dtype, -50, 50)
    outs = [np.zeros((FLIP_R, FLIP_C), x.dtype) for _ in range(3)] + [np.zeros(FLIP_R, x.dtype)]
    if run_or_expect_unsupported(target, [dtype], lambda: flipped_2d[(1,)](
            x, *outs, R=FLIP_R, C=FLIP_C, target=target)):
        assert_flipped(x, outs)


@cube.kernel
def flipped_1d(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n, other=-1.0)
    cube.store(out + offs, cube.maximum(v, cube.flip(v)), mask=offs < n)


def test_flip_1d_with_masked_lanes(target, rng):
    n, block = 100, 128
    x = random_array(rng, n, "float32")
    out = np.zeros(n, np.float32)
    flipped_1d[(1,)](x, out, n, BLOCK=block, target=target)
    padded = np.concatenate([x, np.full(block - n, -1.0, np.float32)])
    np.testing.assert_array_equal(out, np.maximum(padded, padded[::-1])[:n])


@cube.kernel
def flip_of_a_scalar(x):
    cube.store(x, cube.flip(1.0))


@cube.kernel
def flip_past_the_axes(x):
    cube.store(x + cube.arange(0, 16), cube.flip(cube.load(x + cube.arange(0, 16)), 1))


@cube.kernel
def flip_of_pointers(x):
    cube.store(cube.flip(x + cube.arange(0, 16)), 1.0)


PAIRS_N = 64


@cube.kernel
def pairs(a, b, joined, mixed, first, second, scaled, N: cube.Comptime[int]):
    offs = cube.arange(0, N)
    x, y = cube.load(a + offs), cube.load(b + offs)
    both = cube.join(x, y)  # (N, 2)
    cube.store(joined + offs[:, None] * 2 + cube.arange(0, 2)[None, :], both)
    cube.store(mixed + cube.arange(0, 2 * N), cube.interleave(x, y))
    lo, hi = cube.split(both)
    cube.store(first + offs, lo)
    cube.store(second + offs, hi)
    s0, s1 = cube.split(cube.join(x, 2))  # a scalar joins as its broadcast
    cube.store(scaled + offs, s0 * s1)


def assert_pairs(a: np.ndarray, b: np.ndarray, joined: np.ndarray, mixed: np.ndarray,
                 first: np.ndarray, second: np.ndarray, scaled: np.ndarray) -> None:
    """``pairs``'s outputs for ``a`` and ``b``."""
    want = np.stack([a, b], axis=-1)
    assert same_bits(joined, want)
    assert same_bits(mixed, want.reshape(-1))
    assert same_bits(first, a) and same_bits(second, b)
    with np.errstate(invalid="ignore", over="ignore"):
        twice = (a.astype(np.float64) * 2).astype(a.dtype)
    np.testing.assert_array_equal(scaled, twice)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8", "float64"])
def test_join_split_interleave(target, rng, dtype):
    a = random_array(rng, PAIRS_N, dtype, -50, 50)
    b = random_array(rng, PAIRS_N, dtype, -50, 50)
    if np_dtype(dtype).kind == "f":  # split keeps signed zeros and NaN
        a[:4] = [-0.0, np.nan, np.inf, 0.0]
        b[:4] = [np.nan, -0.0, -np.inf, -0.0]
    joined, mixed = np.zeros((PAIRS_N, 2), a.dtype), np.zeros(2 * PAIRS_N, a.dtype)
    first, second, scaled = (np.zeros(PAIRS_N, a.dtype) for _ in range(3))
    if run_or_expect_unsupported(target, [dtype], lambda: pairs[(1,)](
            a, b, joined, mixed, first, second, scaled, N=PAIRS_N, target=target)):
        assert_pairs(a, b, joined, mixed, first, second, scaled)


@cube.kernel
def bool_and_scalar_pairs(x, lo, hi, pair, N: cube.Comptime[int]):
    offs = cube.arange(0, N)
    v = cube.load(x + offs) != 0
    a, b = cube.split(cube.join(v, ~v))
    cube.store(lo + offs, a)
    cube.store(hi + offs, b)
    p0, p1 = cube.split(cube.join(1.5, 2))  # two scalars join as a pair of the common dtype
    cube.store(pair + cube.arange(0, 2), cube.join(p0, p1))


def test_pairs_of_bools_and_of_scalars(target):
    x = np.array([0, 1, 2, 0, 5, 0, 0, 1], np.int32)
    lo, hi, pair = np.zeros(8, bool), np.zeros(8, bool), np.zeros(2, np.float32)
    bool_and_scalar_pairs[(1,)](x, lo, hi, pair, N=8, target=target)
    np.testing.assert_array_equal(lo, x != 0)
    np.testing.assert_array_equal(hi, x == 0)
    np.testing.assert_array_equal(pair, [1.5, 2.0])


@cube.kernel
def concatenated(a, b, rows, flat, R: cube.Comptime[int], C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    x, y = cube.load(a + offs), cube.load(b + offs)
    cube.store(rows + cube.arange(0, 2 * R)[:, None] * C + cube.arange(0, C)[None, :],
               cube.cat(x, y))
    cube.store(flat + cube.arange(0, 2 * R * C), cube.cat(cube.ravel(x), cube.ravel(y),
                                                          can_reorder=True))


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_cat_keeps_the_order(target, rng, dtype):
    a, b = (random_array(rng, (4, 8), dtype, -50, 50) for _ in range(2))
    rows, flat = np.zeros((8, 8), a.dtype), np.zeros(64, a.dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: concatenated[(1,)](
            a, b, rows, flat, R=4, C=8, target=target)):
        assert same_bits(rows, np.concatenate([a, b]))
        assert same_bits(flat, np.concatenate([a.ravel(), b.ravel()]))


@cube.kernel
def cat_of_two_shapes(x):
    both = cube.cat(cube.load(x + cube.arange(0, 8)), cube.load(x + cube.arange(0, 16)))
    cube.store(x + cube.arange(0, 24), both)


@cube.kernel
def split_of_an_odd_axis(x):
    lo, hi = cube.split(cube.load(x + cube.arange(0, 16)))
    cube.store(x, lo + hi)


@cube.kernel
def interleave_of_scalars(x):
    cube.store(x + cube.arange(0, 2), cube.interleave(1.0, 2.0))


@pytest.mark.parametrize("kernel, message", [
    (ravel_of_a_scalar, "cube.ravel() needs a tile, got 1.0"),
    (broadcast_mismatch, "cube.broadcast(): shapes (4,) and (8,) do not broadcast"),
    (view_of_another_size, "cannot reshape a tile of shape (4,) (4 elements) to (8,)"),
    (flip_of_a_scalar, "cube.flip() needs a tile, got 1.0"),
    (flip_past_the_axes, "cube.flip(): dim 1 is not an axis of a tile of shape (16,)"),
    (flip_of_pointers, "pointer tiles cannot be flipped"),
    (split_of_an_odd_axis, "cube.split() needs a last axis of 2, got shape (16,)"),
    (interleave_of_scalars, "cube.interleave() needs tiles, got two scalars"),
    (cat_of_two_shapes, "cube.cat() needs tiles of one shape, got (8,) and (16,)"),
])
def test_wrong_uses_point_at_the_line(kernel, message):
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(16, np.float32), target="cpu"),
                              message, "test_ported_shapes.py")
