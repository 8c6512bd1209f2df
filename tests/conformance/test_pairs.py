"""``join``, ``split``, ``interleave`` and ``cat``, as Triton's: pairs along a new last axis,
their halves, two tiles alternating, and one after the other. Bit for bit against NumPy on
every target (``split`` keeps -0.0 and NaN), NaN payloads aside; misuse is an error at the
line."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    assert_points_at_the_line,
    np_dtype,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube

N = 64


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


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit (-0.0 included), but a NaN only as a NaN: storing a float16 NaN through a
    float32 register may change its payload (NVIDIA's Vulkan gives the canonical one)."""
    width = np.dtype(f"uint{want.itemsize * 8}")
    floats = want.dtype.kind == "f"
    nan = np.isnan(want.astype(np.float64)) if floats else np.zeros(want.shape, bool)
    return np.array_equal(got.view(width)[~nan], want.view(width)[~nan]) and \
        bool(np.isnan(got.astype(np.float64)[nan]).all())


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8", "float64"])
def test_join_split_interleave(target, rng, dtype):
    a = random_array(rng, N, dtype, -50, 50)
    b = random_array(rng, N, dtype, -50, 50)
    if np_dtype(dtype).kind == "f":  # split keeps signed zeros and NaN
        a[:4] = [-0.0, np.nan, np.inf, 0.0]
        b[:4] = [np.nan, -0.0, -np.inf, -0.0]
    joined, mixed = np.zeros((N, 2), a.dtype), np.zeros(2 * N, a.dtype)
    first, second, scaled = (np.zeros(N, a.dtype) for _ in range(3))
    if run_or_expect_unsupported(target, [dtype], lambda: pairs[(1,)](
            a, b, joined, mixed, first, second, scaled, N=N, target=target)):
        want = np.stack([a, b], axis=-1)
        assert same_bits(joined, want)
        assert same_bits(mixed, want.reshape(-1))
        assert same_bits(first, a) and same_bits(second, b)
        with np.errstate(invalid="ignore", over="ignore"):
            twice = (a.astype(np.float64) * 2).astype(a.dtype)
        np.testing.assert_array_equal(scaled, twice)


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
    (split_of_an_odd_axis, "cube.split() needs a last axis of 2, got shape (16,)"),
    (interleave_of_scalars, "cube.interleave() needs tiles, got two scalars"),
    (cat_of_two_shapes, "cube.cat() needs tiles of one shape, got (8,) and (16,)"),
])
def test_wrong_pairs_point_at_the_line(kernel, message):
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(16, np.float32), target="cpu"),
                              message, "test_pairs.py")
