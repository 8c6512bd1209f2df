"""``sort`` and ``topk``, spelled as Triton's: every dtype, either axis, either order, checked
bit for bit against NumPy's sort with cubepy's order of equal floats (-0.0 before +0.0, NaNs
last); wrong uses are compile errors at the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    assert_points_at_the_line,
    dtype_name,
    random_array,
    run_or_expect_unsupported,
    same_bits,
)

import cubepy as cube

ROWS, COLS = 8, 32


def sort_reference(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """NumPy's sort along ``axis``, equal floats ordered as cubepy orders them: -0.0 before
    +0.0, and NaNs last with their sign bit cleared; reversed when ``descending``."""
    if dtype_name(x.dtype) in FLOAT_DTYPES:
        wide = x.astype(np.float64)
        wide = np.where(np.isnan(wide), np.abs(wide), wide)
        order = np.lexsort((~np.signbit(wide), wide), axis=axis)
        want = np.take_along_axis(wide, order, axis).astype(x.dtype)
    else:
        want = np.sort(x, axis=axis)
    return np.flip(want, axis) if descending else want


def sort_case(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Values with many ties; floats with signed zeros, infinities and NaNs of both signs."""
    x = random_array(rng, shape, dtype, 0 if dtype.startswith("u") else -20, 20)
    if dtype in FLOAT_DTYPES:
        flat = x.reshape(-1)
        specials = [-0.0, 0.0, np.inf, -np.inf, np.nan, -np.nan, -0.0, np.nan]
        places = rng.choice(flat.size, len(specials), replace=False)
        flat[places] = np.array(specials).astype(x.dtype)
    return x


@cube.kernel
def sorted_2d(x, out, top, R: cube.Comptime[int], C: cube.Comptime[int],
              DIM: cube.Comptime[int], DESC: cube.Comptime[bool], K: cube.Comptime[int]):
    rows, cols = cube.arange(0, R)[:, None], cube.arange(0, C)[None, :]
    v = cube.load(x + rows * C + cols)
    cube.store(out + rows * C + cols, cube.sort(v, dim=DIM, descending=DESC))
    if DIM == 0:
        cube.store(top + cube.arange(0, K)[:, None] * C + cols,
                   cube.topk(v, K, dim=0, descending=DESC))
    else:
        cube.store(top + rows * K + cube.arange(0, K)[None, :], cube.topk(v, K, descending=DESC))


def assert_sorted_2d(x: np.ndarray, out: np.ndarray, top: np.ndarray, dim: int,
                     descending: bool, k: int) -> None:
    assert same_bits(out, sort_reference(x, dim, descending))
    # topk's first k: the largest when descending, else the smallest
    ranked = sort_reference(x, dim, descending)
    assert same_bits(top, np.take(ranked, np.arange(k), axis=dim))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim, descending", [(-1, False), (0, True)])
def test_sort_and_topk_match_numpy(target, rng, dtype, dim, descending):
    x = sort_case(rng, (ROWS, COLS), dtype)
    k = 4
    out = np.zeros_like(x)
    top = np.zeros((k, COLS) if dim == 0 else (ROWS, k), x.dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: sorted_2d[(1,)](
            x, out, top, R=ROWS, C=COLS, DIM=dim, DESC=descending, K=k, target=target)):
        assert_sorted_2d(x, out, top, dim % 2, descending, k)


@pytest.mark.parametrize("k", [1, 2, COLS])
def test_topk_of_every_size_and_the_smallest(target, rng, k):
    x = sort_case(rng, (ROWS, COLS), "float32")
    for descending in (True, False):
        out, top = np.zeros_like(x), np.zeros((ROWS, k), x.dtype)
        sorted_2d[(1,)](x, out, top, R=ROWS, C=COLS, DIM=1, DESC=descending, K=k, target=target)
        assert_sorted_2d(x, out, top, 1, descending, k)


@cube.kernel
def sorted_masked(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n, other=float("inf"))  # lanes past n sort last
    cube.store(out + offs, cube.sort(v), mask=offs < n)


@pytest.mark.parametrize("n", [1, 37, 256])
def test_sort_of_a_masked_row(target, rng, n):
    x = random_array(rng, n, "float32", -1000, 1000)
    out = np.zeros(n, np.float32)
    sorted_masked[(1,)](x, out, n, BLOCK=256, target=target)
    np.testing.assert_array_equal(out, np.sort(x))


@cube.kernel
def sorted_middle_axis(x, out, A: cube.Comptime[int], B: cube.Comptime[int],
                       C: cube.Comptime[int]):
    offs = (cube.arange(0, A)[:, None, None] * B * C + cube.arange(0, B)[None, :, None] * C
            + cube.arange(0, C)[None, None, :])
    cube.store(out + offs, cube.sort(cube.load(x + offs), dim=1))


def test_sort_along_a_middle_axis(target, rng):
    x = random_array(rng, (2, 16, 4), "int32", -100, 100)
    out = np.zeros_like(x)
    sorted_middle_axis[(1,)](x, out, A=2, B=16, C=4, target=target)
    np.testing.assert_array_equal(out, np.sort(x, axis=1))


@cube.kernel
def sort_of_a_scalar(x):
    cube.store(x, cube.sort(cube.load(x)))


@cube.kernel
def sort_past_the_axes(x):
    offs = cube.arange(0, 8)
    cube.store(x + offs, cube.sort(cube.load(x + offs), dim=1))


@cube.kernel
def sort_at_run_time_order(x, desc):
    offs = cube.arange(0, 8)
    cube.store(x + offs, cube.sort(cube.load(x + offs), descending=desc))


@cube.kernel
def topk_of_three(x):
    offs = cube.arange(0, 8)
    cube.store(x + cube.arange(0, 4), cube.topk(cube.load(x + offs), 3))


@cube.kernel
def topk_past_the_length(x):
    offs = cube.arange(0, 8)
    cube.store(x + cube.arange(0, 16), cube.topk(cube.load(x + offs), 16))


@cube.kernel
def sort_of_pointers(x):
    cube.store(x, cube.sort(x + cube.arange(0, 8)))


@pytest.mark.parametrize("kernel, message", [
    (sort_of_a_scalar, "cube.sort() needs a tile, got a float32 scalar"),
    (sort_past_the_axes, "cube.sort(): dim 1 is not an axis of a tile of shape (8,)"),
    (sort_at_run_time_order, "descending must be a compile-time bool"),
    (topk_of_three, "k must be a compile-time power of two from 1 to 8"),
    (topk_past_the_length, "k must be a compile-time power of two from 1 to 8"),
    (sort_of_pointers, "cube.sort() of a pointer tile"),
])
def test_wrong_uses_point_at_the_line(kernel, message):
    x = np.zeros(16, np.float32)
    args = (x, 1) if kernel is sort_at_run_time_order else (x,)
    assert_points_at_the_line(lambda: kernel[(1,)](*args, target="cpu:debug"), message,
                              "test_sorting.py")


def test_reference_orders_equal_floats():
    x = np.array([np.nan, 0.0, -0.0, 1.0, -np.nan, -np.inf], np.float32)
    want = sort_reference(x, 0, False)
    assert same_bits(want, np.array([-np.inf, -0.0, 0.0, 1.0, np.nan, np.nan], np.float32))
    assert not np.signbit(want[-2:]).any()
