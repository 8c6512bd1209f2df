"""Triton's block pointers, spelled as Triton's: ``make_block_ptr``, ``cube.load`` and
``cube.store`` through them, ``advance``, carried by ``for`` and ``while`` loops; on every
target against NumPy, blocks past the view's edges included; wrong uses are compile errors at
the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from util import assert_close, assert_points_at_the_line, cdiv, random_array

import cubepy as cube


@cube.kernel
def block_matmul(a, b, c, M, N, K, BM: cube.Comptime[int], BN: cube.Comptime[int],
                 BK: cube.Comptime[int]):
    pm, pn = cube.cube_pos(0), cube.cube_pos(1)
    a_blocks = cube.make_block_ptr(a, (M, K), (K, 1), (pm * BM, 0), (BM, BK), (1, 0))
    b_blocks = cube.make_block_ptr(b, (K, N), (N, 1), (0, pn * BN), (BK, BN), (1, 0))
    acc = cube.zeros((BM, BN), cube.float32)
    for _ in range(0, K, BK):
        x = cube.load(a_blocks, boundary_check=(0, 1), padding_option="zero")
        y = cube.load(b_blocks, boundary_check=(0, 1))
        acc += cube.dot(x, y)
        a_blocks = cube.advance(a_blocks, (0, BK))
        b_blocks = cube.advance(b_blocks, (BK, 0))
    c_block = cube.make_block_ptr(c, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    cube.store(c_block, acc.to(c.dtype), boundary_check=(0, 1))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matmul_through_block_pointers_carried_by_a_loop(target, rng, dtype):
    m, n, k = 37, 45, 70  # ragged in every direction
    a = random_array(rng, (m, k), dtype, -1, 1)
    b = random_array(rng, (k, n), dtype, -1, 1)
    c = np.full((m, n), np.nan, a.dtype)
    block_matmul[(cdiv(m, 16), cdiv(n, 16))](a, b, c, m, n, k, BM=16, BN=16, BK=16,
                                             target=target)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64),
                 atol=1e-5 if dtype == "float32" else 2e-2)


@cube.kernel
def strided_copy(x, out, n, stride, BLOCK: cube.Comptime[int]):
    # a while loop carries a 1-D block pointer over a strided view; past its end NaN pads
    src = cube.make_block_ptr(x, (n,), (stride,), (0,), (BLOCK,), (0,))
    dst = cube.make_block_ptr(out, (2 * n,), (1,), (0,), (BLOCK,), (0,))
    done = 0
    while done < n + BLOCK:
        cube.store(dst, cube.load(src, boundary_check=(0,), padding_option="nan"),
                   boundary_check=(0,))
        src = cube.advance(src, (BLOCK,))
        dst = cube.advance(dst, (BLOCK,))
        done += BLOCK


def test_a_while_loop_carries_a_block_pointer_and_nan_pads(target, rng):
    n, stride = 50, 3
    x = random_array(rng, n * stride, "float32")
    out = np.zeros(2 * n, np.float32)
    strided_copy[(1,)](x, out, n, stride, BLOCK=16, target=target)
    np.testing.assert_array_equal(out[:n], x[::stride])
    written = 16 * cdiv(n + 16, 16)  # blocks while done < n + BLOCK
    assert np.isnan(out[n:written]).all() and (out[written:] == 0).all()


@cube.kernel
def carried_row(x, out, n_rows, C: cube.Comptime[int]):
    row = 0  # a carried scalar in a 2-D address: the cpu target once named it wrongly
    acc = cube.zeros((4, C), cube.float32)
    for _ in range(0, n_rows, 4):
        acc += cube.load(x + (row + cube.arange(0, 4))[:, None] * C + cube.arange(0, C)[None, :])
        row += 4
    cube.store(out + cube.arange(0, 4)[:, None] * C + cube.arange(0, C)[None, :], acc)


def test_a_carried_scalar_in_a_2d_address(target):
    x = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    out = np.zeros((4, 8), np.float32)
    carried_row[(1,)](x, out, 16, C=8, target=target)
    np.testing.assert_array_equal(out, x.reshape(4, 4, 8).sum(axis=0))


@cube.kernel
def masked_block_load(x):
    p = cube.make_block_ptr(x, (8,), (1,), (0,), (8,), (0,))
    cube.store(x + cube.arange(0, 8), cube.load(p, mask=cube.arange(0, 8) < 4))


@cube.kernel
def advance_of_a_pointer(x):
    cube.store(x + cube.arange(0, 8), cube.load(cube.advance(x + cube.arange(0, 8), (1,))))


@cube.kernel
def block_of_six(x):
    p = cube.make_block_ptr(x, (8,), (1,), (0,), (6,), (0,))
    cube.store(x + cube.arange(0, 8), cube.load(p))


@cube.kernel
def check_of_a_missing_axis(x):
    p = cube.make_block_ptr(x, (8,), (1,), (0,), (8,), (0,))
    cube.store(x + cube.arange(0, 8), cube.load(p, boundary_check=(1,)))


@cube.kernel
def nan_padding_of_ints(x):
    p = cube.make_block_ptr(x, (8,), (1,), (0,), (8,), (0,))
    cube.store(x + cube.arange(0, 8), cube.load(p, padding_option="nan"))


@cube.kernel
def moved_in_a_branch(x, flag):
    p = cube.make_block_ptr(x, (8,), (1,), (0,), (8,), (0,))
    if flag > 0:
        p = cube.advance(p, (8,))
    cube.store(x + cube.arange(0, 8), cube.load(p))


@cube.kernel
def replaced_in_a_loop(x, y, n):
    p = cube.make_block_ptr(x, (8,), (1,), (0,), (8,), (0,))
    for _ in range(n):
        p = cube.make_block_ptr(y, (8,), (1,), (0,), (8,), (0,))
    cube.store(x + cube.arange(0, 8), cube.load(p))


@cube.kernel
def offsets_of_another_rank(x):
    p = cube.make_block_ptr(x, (8, 8), (8, 1), (0,), (8, 8), (1, 0))
    cube.store(x + cube.arange(0, 8), cube.load(p)[0, :])


@pytest.mark.parametrize("kernel, args, message", [
    (masked_block_load, (), "cube.load() of a block pointer takes no mask or other"),
    (advance_of_a_pointer, (), "cube.advance() moves a block pointer"),
    (block_of_six, (), "not a power of two"),
    (check_of_a_missing_axis, (), "boundary_check (1,) names no axes of a 1-D block"),
    (nan_padding_of_ints, (), 'padding_option="nan" for int32 elements'),
    (moved_in_a_branch, (1,), "block pointer 'p' is moved in a run-time branch"),
    (replaced_in_a_loop, ("y", 3), "loop-carried block pointer 'p' must stay a block pointer "
                                   "into the same view"),
    (offsets_of_another_rank, (), "offsets must list 2 values, one per axis of the block"),
])
def test_wrong_uses_point_at_the_line(kernel, args, message):
    x = np.zeros(64, np.int32 if kernel is nan_padding_of_ints else np.float32)
    args = tuple(np.zeros(8, np.float32) if a == "y" else a for a in args)
    assert_points_at_the_line(lambda: kernel[(1,)](x, *args, target="cpu:debug"), message,
                              "test_block_pointers.py")
