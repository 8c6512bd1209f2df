"""The cpu target's two code shapes: lane loops for kernels on 1-D tiles, NumPy tile
operations otherwise; the integer wraparound both must keep; and K loops whose dot products
accumulate in place without changing any other tile."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cube


@cube.kernel
def gelu_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    v = cube.load(x + offs, mask=m, other=0.0)
    cube.store(out + offs, v * 0.5 * (1.0 + cube.erf(v * 0.7071067811865476)), mask=m)


@cube.kernel
def softmax_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    m = cols < n
    v = cube.load(x + row * n + cols, mask=m, other=float("-inf"))
    e = cube.exp(v - cube.max(v, axis=0))
    cube.store(out + row * n + cols, e / cube.sum(e, axis=0), mask=m)


@cube.kernel
def rowsum_kernel(x, out, n, ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    rows = cube.arange(0, ROWS)
    cols = cube.arange(0, BLOCK)
    v = cube.load(x + rows[:, None] * n + cols[None, :])
    cube.store(out + rows, cube.sum(v, axis=1))


@cube.kernel
def wrap_kernel(x, y, out, BLOCK: cube.Comptime[int]):
    idx = cube.arange(0, BLOCK)
    a = cube.load(x + idx)
    b = cube.load(y + idx)
    for _ in range(1):  # control flow keeps the tile form
        a = a + 0
    cube.store(out + idx, (a + b) >> 8)


@cube.kernel
def dot_from_a_kept_tile(a, b, start, out, STEPS: cube.Comptime[int], K: cube.Comptime[int]):
    """The loop's initial accumulator is a tile used again after the loop (and through a
    reshape, a view of it), so an in-place sum must start from a copy."""
    r = cube.arange(0, K)
    square = r[:, None] * K + r[None, :]
    a_tile = cube.load(a + square)
    b_tile = cube.load(b + square)
    first = cube.load(start + r)
    init = cube.reshape(first, (K, 1)) + cube.zeros((K, K), cube.float32)
    acc = init
    for _ in range(STEPS):
        acc = cube.dot(a_tile, b_tile, acc)
    cube.store(out + square, acc + init)


def _source(kernel, *args, **comptime) -> str:
    return kernel.source("cpu", *args, **comptime)


def test_elementwise_kernel_is_one_lane_loop():
    x = np.zeros(100, np.float32)
    source = _source(gelu_kernel, x, x.copy(), 100, BLOCK=128)
    assert source.count("for lane_0_raw in range(128):") == 1
    assert "np.where" not in source and "erf_scalar(" in source


def test_reductions_split_lane_loops():
    x = np.zeros((4, 100), np.float32)
    source = _source(softmax_kernel, x, x.copy(), 100, BLOCK=128)
    # load + max | exp + sum | divide + store: three loops; the loaded row and e cross them
    assert source.count("for lane_0_raw in range(128):") == 3
    assert source.count("= np.empty(128, np.float32)") == 2


def test_2d_tiles_keep_the_tile_form():
    x = np.zeros((8, 16), np.float32)
    source = _source(rowsum_kernel, x, np.zeros(8, np.float32), 16, ROWS=8, BLOCK=16)
    assert "lane" not in source


@pytest.mark.parametrize("target", ["cpu", "cpu:debug"])
def test_softmax_lane_loops_are_right(target, rng):
    x = rng.standard_normal((5, 100)).astype(np.float32)
    out = np.full_like(x, np.nan)
    softmax_kernel[(5,)](x, out, 100, BLOCK=128, target=target)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("target", ["cpu", "cpu:debug"])
def test_uint32_wraps_in_the_tile_form(target):
    """A fused array expression would compute (a + b) in 64 bits and shift the carry in."""
    x = np.full(16, 4_000_000_000, np.uint32)
    out = np.zeros(16, np.uint32)
    wrap_kernel[(1,)](x, x, out, BLOCK=16, target=target)
    np.testing.assert_array_equal(out, (x + x) >> 8)


def _dot_args(rng, k: int = 16):
    a = rng.standard_normal((k, k)).astype(np.float32)
    b = rng.standard_normal((k, k)).astype(np.float32)
    start = rng.standard_normal(k).astype(np.float32)
    return a, b, start, np.full((k, k), np.nan, np.float32)


def test_a_k_loop_accumulates_in_place(rng):
    source = _source(dot_from_a_kept_tile, *_dot_args(rng), STEPS=3, K=16)
    assert "+= product_0" in source and "np.copy(" in source


@pytest.mark.parametrize("target", ["cpu", "cpu:debug"])
def test_in_place_accumulation_leaves_the_initial_tile_alone(target, rng):
    a, b, start, out = _dot_args(rng)
    dot_from_a_kept_tile[(1,)](a, b, start, out, STEPS=3, K=16, target=target)
    init = np.broadcast_to(start.astype(np.float64)[:, None], (16, 16))
    expected = 2 * init + 3 * (a.astype(np.float64) @ b)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
