"""The cpu target's two code shapes: lane loops for kernels on 1-D tiles, NumPy tile
operations otherwise; and the integer wraparound both must keep."""

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
