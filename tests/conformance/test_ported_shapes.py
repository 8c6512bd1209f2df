"""Triton's shape and index builtins, spelled as Triton's: ``ravel``, ``view``,
``broadcast``, ``swizzle2d`` (the grouped order of a matmul's tiles) and ``static_print``
(at compile time). Checked against NumPy on every target; wrong uses are compile errors at the
user's line."""

from __future__ import annotations

import numpy as np
import pytest
from util import assert_points_at_the_line, random_array

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
def ravel_of_a_scalar(out):
    cube.store(out, cube.ravel(1.0))


@cube.kernel
def broadcast_mismatch(out):
    a, b = cube.broadcast(cube.arange(0, 4), cube.arange(0, 8))
    cube.store(out + a, b)


@cube.kernel
def view_of_another_size(out):
    cube.store(out + cube.arange(0, 8), cube.view(cube.arange(0, 4), (8,)))


@pytest.mark.parametrize("kernel, message", [
    (ravel_of_a_scalar, "cube.ravel() needs a tile, got 1.0"),
    (broadcast_mismatch, "cube.broadcast(): shapes (4,) and (8,) do not broadcast"),
    (view_of_another_size, "cannot reshape a tile of shape (4,) (4 elements) to (8,)"),
])
def test_wrong_uses_point_at_the_line(kernel, message):
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(16, np.int32), target="cpu"),
                              message, "test_ported_shapes.py")
