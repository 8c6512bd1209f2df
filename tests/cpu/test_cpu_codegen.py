"""The cpu target's two code shapes: lane loops for kernels on 1-D tiles, NumPy tile
operations otherwise; the integer wraparound both must keep; and K loops whose dot products
accumulate in place without changing any other tile."""

from __future__ import annotations

import math
import re

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
def running_sum_kernel(x, out, n, B: cube.Comptime[int]):
    offs = cube.arange(0, B)
    acc = cube.zeros((B,), cube.float32)
    for start in range(0, n, B):
        acc = acc + cube.load(x + start + offs, mask=start + offs < n, other=0.0)
    cube.store(out + offs, acc)


@cube.kernel
def carried_tiles_kernel(x, out, STEPS: cube.Comptime[int], B: cube.Comptime[int]):
    """Carried tiles whose buffer the lane loops must not share with the next value: `other`
    reads acc after the next acc is computed, the sum of acc is added up after its segment's
    loop, and (a, b) becomes (b, a + b)."""
    offs = cube.arange(0, B)
    x_tile = cube.load(x + offs)
    acc, a, b = x_tile, x_tile, x_tile * 0.5
    other = cube.zeros((B,), cube.float32)
    total = cube.zeros((B,), cube.float32)
    for _ in range(STEPS):
        s = cube.sum(acc, axis=0)
        new_acc = acc * 0.5 + x_tile
        other = other + acc
        total = total + s
        acc = new_acc
        before = a
        a = b
        b = before + b
    cube.store(out + offs, acc)
    cube.store(out + B + offs, other)
    cube.store(out + 2 * B + offs, total)
    cube.store(out + 3 * B + offs, a)
    cube.store(out + 4 * B + offs, b)


@cube.kernel
def best_of_lanes_kernel(x, out, B: cube.Comptime[int]):
    v = cube.load(x + cube.arange(0, B))
    cube.store(out + 0, cube.argmax(v, axis=0).to(cube.float32))
    cube.store(out + 1, cube.argmin(v, axis=0).to(cube.float32))
    cube.store(out + 2, cube.max(v, axis=0))
    cube.store(out + 3, cube.min(v, axis=0))


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


@cube.kernel
def positive_copy_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n, other=0.0)
    cube.store(out + offs, v, mask=(offs < n) & (v > 0))  # a loaded value decides the mask


def test_elementwise_kernel_is_one_lane_loop():
    x = np.zeros(100, np.float32)
    source = _source(gelu_kernel, x, x.copy(), 100, BLOCK=128)
    assert source.count("for lane_0_raw in range(128):") == 1
    assert "np.where" not in source and "erf_scalar(" in source


@cube.kernel
def half_sum_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n, other=0.0)
    cube.store(out + offs, (v.to(cube.float32) * 3.0).to(out.dtype), mask=offs < n)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_16_bit_store_rounds_once(dtype):
    """A value cast to a 16-bit float and stored is converted from the cast's operand (the
    same bits as rounding twice), so a lane's store does not round it first."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    np_dtype = np.dtype(getattr(ml_dtypes, dtype) if dtype == "bfloat16" else np.float16)
    values = np.array([1.0, -2.5, 3.3e-3, 6e4, np.inf, np.nan, 1e-7, 0.0], np.float32)
    x = values.astype(np_dtype)
    out = np.zeros_like(x)
    source = _source(half_sum_kernel, x, out, x.size, BLOCK=16)
    lines = source.splitlines()
    stored = {re.search(r"= f32_to_b?f16_s\((\w+)\)", line).group(1)
              for line in lines if "a_out_0[" in line}
    defined = [line for line in lines if re.match(rf"\s*({'|'.join(stored)}) = ", line)]
    assert defined and not any("round_" in line for line in defined)  # the cast's operand
    half_sum_kernel[(1,)](x, out, x.size, BLOCK=16, target="cpu")
    expected = (x.astype(np.float32) * np.float32(3.0)).astype(np_dtype)
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("n", [256, 200, 1])
def test_full_and_partial_cubes_compute_alike(n):
    """Full cubes and a last partial one; a mask a loaded value decides, per lane."""
    x = np.random.default_rng(n).standard_normal(n + 56).astype(np.float32)
    out = np.full_like(x, 7.0)
    gelu_kernel[(cube.cdiv(n, 128),)](x, out, n, BLOCK=128, target="cpu")
    erf = np.vectorize(math.erf)
    expected = x[:n] * 0.5 * (1.0 + erf(x[:n] * 0.7071067811865476))
    np.testing.assert_allclose(out[:n], expected, rtol=1e-6, atol=1e-7)
    assert (out[n:] == 7.0).all()  # lanes past n neither read nor written
    out = np.full_like(x, 7.0)
    positive_copy_kernel[(cube.cdiv(n, 128),)](x, out, n, BLOCK=128, target="cpu")
    np.testing.assert_array_equal(out[:n], np.where(x[:n] > 0, x[:n], 7.0))
    assert (out[n:] == 7.0).all()


def test_reductions_split_lane_loops():
    x = np.zeros((4, 100), np.float32)
    source = _source(softmax_kernel, x, x.copy(), 100, BLOCK=128)
    # load + max | exp + sum | divide + store: three lane loops, the max's in chunks of 16
    # lanes (each lane of a chunk keeps its own maximum); the loaded row and e cross them and
    # the sum's 128 partial sums take a buffer too, all allocated once per call
    assert source.count("lane_0 = np.int32(lane_0_raw)") == 3
    assert source.count("for lane_0_from in range(0, 128, 16):") == 1
    assert source.count("= np.empty(128, np.float32)") == 3
    assert source.index("np.empty(") < source.index("for p in range(")


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


def test_an_accumulating_loop_updates_its_tile_in_place():
    x = np.zeros(100, np.float32)
    source = _source(running_sum_kernel, x, np.zeros(16, np.float32), 100, B=16)
    assert source.count("np.empty(16, np.float32)") == 1  # initial, carried and next: one


@pytest.mark.parametrize("target", ["cpu", "cpu:debug"])
def test_carried_tiles_that_cannot_share_a_buffer(target, rng):
    x = rng.standard_normal(16).astype(np.float32)
    out = np.full(5 * 16, np.nan, np.float32)
    carried_tiles_kernel[(1,)](x, out, STEPS=3, B=16, target=target)
    acc, a, b = x.astype(np.float64), x.astype(np.float64), 0.5 * x.astype(np.float64)
    other, total = np.zeros(16), np.zeros(16)
    for _ in range(3):
        other, total = other + acc, total + acc.sum()
        acc, a, b = 0.5 * acc + x, b, a + b
    np.testing.assert_allclose(out, np.concatenate([acc, other, total, a, b]), rtol=1e-5)


@pytest.mark.parametrize("target", ["cpu", "cpu:debug"])
def test_best_lane_across_chunks(target):
    """argmax/argmin keep one candidate per lane of a 16-lane chunk: ties and NaNs in
    different chunks and different lanes of one must still give the first, as NumPy."""
    x = np.zeros(64, np.float32)
    x[[37, 21, 5]] = 3.0  # ties: lanes 5 of chunks 2, 1 and 0
    x[[50, 18]] = -2.0  # ties: lane 2 of chunk 3 before lane 2 of chunk 1
    for case in (x, np.where(np.arange(64) % 16 == 9, np.float32(np.nan), x),
                 np.where(np.isin(np.arange(64), [44, 12]), np.float32(np.nan), x)):
        out = np.full(4, -1, np.float32)
        best_of_lanes_kernel[(1,)](case, out, B=64, target=target)
        want = [case.argmax(), case.argmin(), case.max(), case.min()]
        np.testing.assert_array_equal(out, np.array(want, np.float32))


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


@cube.kernel
def exps_kernel(x, out, n, B: cube.Comptime[int]):
    offs = cube.cube_pos(0) * B + cube.arange(0, B)
    m = offs < n
    v = cube.load(x + offs, mask=m, other=0.0)
    cube.store(out + offs, cube.exp(v), mask=m)
    cube.store(out + n + offs, cube.exp2(v), mask=m)


@pytest.mark.parametrize("target", ["cpu", "cpu:debug"])
def test_lane_exp_is_within_its_bound(target):
    """float32 exp and exp2 in lane loops are lane_exp's straight-line code (libm's expf does
    not vectorize): within 0.51 ulp of float64 NumPy over the whole range (lane_exp's bound;
    subnormal results in subnormal steps), and expf's answers for NaN, the infinities and
    overflow."""
    sweep = np.linspace(-110.0, 90.0, 40_000, dtype=np.float32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.73, 128.5, -103.9,
                        -150.0, -140.0, -126.5, 1e-30, -1e-30], np.float32)
    x = np.concatenate([sweep, special])
    out = np.full(2 * x.size, np.nan, np.float32)
    exps_kernel[(-(-x.size // 1024),)](x, out, x.size, B=1024, target=target)
    if target == "cpu":
        assert "EXP_POWERS_OF_TWO" in _source(exps_kernel, x, out, x.size, B=1024)
    with np.errstate(over="ignore"):
        for got, want in ((out[:x.size], np.exp(x.astype(np.float64))),
                          (out[x.size:], np.exp2(x.astype(np.float64)))):
            rounded = want.astype(np.float32)
            finite = np.isfinite(rounded)
            step = np.spacing(np.abs(rounded[finite])).astype(np.float64)
            assert np.all(np.abs(got[finite] - want[finite]) <= 0.51 * step)
            assert np.array_equal(got[~finite], rounded[~finite], equal_nan=True)
