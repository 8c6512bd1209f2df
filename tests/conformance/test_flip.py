"""``cube.flip(x, dim)``, as Triton's ``tl.flip``: the elements along one axis in reverse
order, on 1-D and 2-D tiles, alone, inside arithmetic and before a reduction, against NumPy on
every target; misuse is an error at the line."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    assert_close,
    assert_points_at_the_line,
    np_dtype,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube

R, C = 8, 16


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


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64"])
def test_flip_2d(target, rng, dtype):
    x = random_array(rng, (R, C), dtype, -50, 50)
    outs = [np.zeros((R, C), x.dtype) for _ in range(3)] + [np.zeros(R, x.dtype)]
    if run_or_expect_unsupported(target, [dtype], lambda: flipped_2d[(1,)](
            x, *outs, R=R, C=C, target=target)):
        wide = x.astype(np.float64 if np_dtype(dtype).kind == "f" else np.int64)
        np.testing.assert_array_equal(outs[0], x[::-1])
        np.testing.assert_array_equal(outs[1], x[:, ::-1])
        assert_close(outs[2], wide - wide[:, ::-1])
        assert_close(outs[3], (wide[:, ::-1] * np.arange(C)).sum(axis=1))


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


@pytest.mark.parametrize("kernel, message", [
    (flip_of_a_scalar, "cube.flip() needs a tile, got 1.0"),
    (flip_past_the_axes, "cube.flip(): dim 1 is not an axis of a tile of shape (16,)"),
    (flip_of_pointers, "pointer tiles cannot be flipped"),
])
def test_wrong_flips_point_at_the_line(kernel, message):
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(16, np.float32), target="cpu"),
                              message, "test_flip.py")
