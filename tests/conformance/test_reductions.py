"""Reductions: softmax, layernorm, sum/max/min on each axis, argmax/argmin, cumsum."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    assert_close,
    cdiv,
    next_pow2,
    np_dtype,
    poison,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube

# ---------------------------------------------------------------- softmax


@cube.kernel
def softmax_row_kernel(x, out, n_cols, stride, BLOCK: cube.Comptime[int]):
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    mask = cols < n_cols
    v = cube.load(x + row * stride + cols, mask=mask, other=-1e30)
    e = cube.exp(v - cube.max(v, axis=0))
    e = cube.where(mask, e, 0.0)
    cube.store(out + row * stride + cols, e / cube.sum(e, axis=0), mask=mask)


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("width", [1, 37, 64, 100])
def test_softmax_rows_ragged(target, rng, width):
    rows = 12
    block = max(16, next_pow2(width))
    x = random_array(rng, (rows, width), "float32", -4, 4)
    out = poison((rows, width), "float32")
    softmax_row_kernel[(rows,)](x, out, width, width, BLOCK=block, target=target)
    assert_close(out, softmax_ref(x))


@cube.kernel
def softmax_block_kernel(
    x, out, n_rows, n_cols, stride, ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]
):
    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)
    cols = cube.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * stride + cols[None, :]
    v = cube.load(x + offs, mask=mask, other=-1e30)
    e = cube.exp(v - cube.max(v, axis=1)[:, None])
    cube.store(out + offs, e / cube.sum(e, axis=1)[:, None], mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_row_blocks_2d(target, rng, dtype):
    n_rows, n_cols, rows_per_cube = 21, 45, 8
    # A strided input: each row is padded to 50 elements and the padding is never read.
    big = random_array(rng, (n_rows, 50), dtype, -4, 4)
    x = big[:, :n_cols]
    out = poison((n_rows, 50), dtype)
    softmax_block_kernel[(cdiv(n_rows, rows_per_cube),)](
        x, out, n_rows, n_cols, 50, ROWS=rows_per_cube, BLOCK=64, target=target
    )
    assert_close(out[:, :n_cols], softmax_ref(x))
    assert np.isnan(out[:, n_cols:]).all(), "the kernel wrote outside its mask"


# ---------------------------------------------------------------- layernorm


@cube.kernel
def layernorm_kernel(
    x, w, b, out, mean_out, rstd_out, n_cols, stride, eps, BLOCK: cube.Comptime[int]
):
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    mask = cols < n_cols
    raw = cube.load(x + row * stride + cols, mask=mask, other=0.0)
    v = raw.to(cube.float32)
    mean = cube.sum(v, axis=0) / n_cols
    diff = cube.where(mask, v - mean, 0.0)
    var = cube.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / cube.sqrt(var + eps)
    weight = cube.load(w + cols, mask=mask, other=0.0).to(cube.float32)
    bias = cube.load(b + cols, mask=mask, other=0.0).to(cube.float32)
    y = diff * rstd * weight + bias
    cube.store(out + row * stride + cols, y.to(raw.dtype), mask=mask)
    cube.store(mean_out + row, mean)
    cube.store(rstd_out + row, rstd)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_layernorm_forward(target, rng, dtype):
    rows, width, eps = 16, 75, 1e-5
    x = random_array(rng, (rows, width), dtype, -3, 3)
    w = random_array(rng, width, dtype, 0.5, 1.5)
    b = random_array(rng, width, dtype, -1, 1)
    out = poison((rows, width), dtype)
    mean_out, rstd_out = poison(rows, "float32"), poison(rows, "float32")
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    mean = x64.mean(axis=1)
    var = x64.var(axis=1)
    rstd = 1.0 / np.sqrt(var + eps)
    expected = (x64 - mean[:, None]) * rstd[:, None] * w64 + b64

    def launch():
        layernorm_kernel[(rows,)](
            x, w, b, out, mean_out, rstd_out, width, width, eps, BLOCK=128, target=target
        )

    if run_or_expect_unsupported(target, [dtype, "float32"], launch):
        # Sums of 75 float32 terms: an absolute error of ~1e-5 is expected; outputs round to dtype.
        assert_close(mean_out, mean, atol=1e-5)
        assert_close(rstd_out, rstd, rtol=1e-4)
        if dtype == "float32":
            assert_close(out, expected, rtol=1e-4, atol=1e-5)
        else:
            assert_close(out, expected)


# ---------------------------------------------------------------- sum / max / min

OPS = {"sum": 0, "max": 1, "min": 2}


@cube.kernel
def reduce_axis1_kernel(
    x,
    out,
    M,
    N,
    stride,
    fill,
    OP: cube.Comptime[int],
    BM: cube.Comptime[int],
    BN: cube.Comptime[int],
):
    rows = cube.cube_pos(0) * BM + cube.arange(0, BM)
    cols = cube.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * stride + cols[None, :], mask=mask, other=fill)
    if OP == 0:
        r = cube.sum(v, axis=1)
    elif OP == 1:
        r = cube.max(v, axis=1)
    else:
        r = cube.min(v, axis=1)
    cube.store(out + rows, r, mask=rows < M)


@cube.kernel
def reduce_axis0_kernel(
    x,
    out,
    M,
    N,
    stride,
    fill,
    OP: cube.Comptime[int],
    BM: cube.Comptime[int],
    BN: cube.Comptime[int],
):
    rows = cube.arange(0, BM)
    cols = cube.cube_pos(0) * BN + cube.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * stride + cols[None, :], mask=mask, other=fill)
    if OP == 0:
        r = cube.sum(v, axis=0)
    elif OP == 1:
        r = cube.max(v, axis=0)
    else:
        r = cube.min(v, axis=0)
    cube.store(out + cols, r, mask=cols < N)


@cube.kernel
def reduce_all_kernel(
    x,
    out,
    M,
    N,
    stride,
    fill,
    OP: cube.Comptime[int],
    BM: cube.Comptime[int],
    BN: cube.Comptime[int],
):
    pid = cube.cube_pos(0)
    rows = pid * BM + cube.arange(0, BM)
    cols = cube.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * stride + cols[None, :], mask=mask, other=fill)
    if OP == 0:
        r = cube.sum(v, axis=None)
    elif OP == 1:
        r = cube.max(v, axis=None)
    else:
        r = cube.min(v, axis=None)
    cube.store(out + pid, r)


def _fill(op, dtype):
    dt = np_dtype(dtype)
    if op == "sum":
        return dt.type(0)
    if dt.kind == "f":
        return dt.type(-np.inf if op == "max" else np.inf)
    info = np.iinfo(dt)
    return dt.type(info.min if op == "max" else info.max)


def _reduce_tol(dtype, terms):
    # A float32 sum of `terms` values of magnitude <= 2 can be off by ~terms * eps * 2 absolute.
    if dtype == "float32":
        return {"rtol": 1e-5, "atol": terms * 2.5e-7}
    return {}


REDUCE_DTYPES = ["float32", "float64", "int32"]


@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("axis", [0, 1, None], ids=["axis0", "axis1", "all"])
def test_reduce(target, rng, op, dtype, axis):
    M, N, BM, BN = 37, 45, 16, 64
    x = (
        random_array(rng, (M, N), dtype, -2, 2)
        if dtype != "int32"
        else random_array(rng, (M, N), dtype, -1000, 1000)
    )
    ref = {"sum": np.sum, "max": np.max, "min": np.min}[op]
    fill = _fill(op, dtype)
    if axis == 1:
        out = poison(M, dtype)
        grid = (cdiv(M, BM),)
        kern, expected, terms = reduce_axis1_kernel, ref(x, axis=1), N
    elif axis == 0:
        BM, BN = 64, 16
        out = poison(N, dtype)
        grid = (cdiv(N, BN),)
        kern, expected, terms = reduce_axis0_kernel, ref(x, axis=0), M
    else:
        grid = (cdiv(M, BM),)
        out = poison(grid[0], dtype)
        expected = np.array([ref(x[i * BM : (i + 1) * BM]) for i in range(grid[0])])
        kern, terms = reduce_all_kernel, BM * N
    kern[grid](x, out, M, N, N, fill, OP=OPS[op], BM=BM, BN=BN, target=target)
    assert_close(
        out, expected.astype(out.dtype), **(_reduce_tol(dtype, terms) if op == "sum" else {})
    )


# ---------------------------------------------------------------- argmax / argmin


@cube.kernel
def argmax_rows_kernel(x, out, M, N, stride, fill, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.cube_pos(0) * BM + cube.arange(0, BM)
    cols = cube.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * stride + cols[None, :], mask=mask, other=fill)
    cube.store(out + rows, cube.argmax(v, axis=1), mask=rows < M)


@cube.kernel
def argmin_cols_kernel(x, out, M, N, stride, fill, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.arange(0, BM)
    cols = cube.cube_pos(0) * BN + cube.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * stride + cols[None, :], mask=mask, other=fill)
    cube.store(out + cols, cube.argmin(v, axis=0), mask=cols < N)


@cube.kernel
def argmax_1d_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    pid = cube.cube_pos(0)
    offs = pid * BLOCK + cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n, other=-1000000.0)
    cube.store(out + pid, cube.argmax(v, axis=0))


# int32 data in [0, 4) has many ties: the spec says the first occurrence wins, as NumPy's.
@pytest.mark.parametrize("dtype", ["float32", "int32"], ids=["distinct", "ties"])
def test_argmax_rows(target, rng, dtype):
    M, N = 30, 45
    x = random_array(rng, (M, N), dtype, 0, 4)
    fill = np_dtype(dtype).type(-1000)
    out = poison(M, "int32")
    argmax_rows_kernel[(cdiv(M, 16),)](x, out, M, N, N, fill, BM=16, BN=64, target=target)
    assert_close(out, np.argmax(x, axis=1).astype(np.int32))


@pytest.mark.parametrize("dtype", ["float32", "int32"], ids=["distinct", "ties"])
def test_argmin_cols(target, rng, dtype):
    M, N = 30, 45
    x = random_array(rng, (M, N), dtype, 0, 4)
    fill = np_dtype(dtype).type(1000)
    out = poison(N, "int32")
    argmin_cols_kernel[(cdiv(N, 16),)](x, out, M, N, N, fill, BM=32, BN=16, target=target)
    assert_close(out, np.argmin(x, axis=0).astype(np.int32))


def test_argmax_1d_per_cube(target, rng):
    n, block = 500, 64
    x = random_array(rng, n, "float32", -10, 10)
    grid = cdiv(n, block)
    out = poison(grid, "int32")
    argmax_1d_kernel[(grid,)](x, out, n, BLOCK=block, target=target)
    expected = [np.argmax(x[i * block : (i + 1) * block]) for i in range(grid)]
    assert_close(out, np.array(expected, dtype=np.int32))


@cube.kernel
def bool_args_kernel(x, amax, amin, M, N, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.arange(0, BM)
    cols = cube.arange(0, BN)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * N + cols[None, :], mask=inside, other=0) > 0
    cube.store(amax + rows, cube.argmax(v, axis=1), mask=rows < M)
    cube.store(amin + cols, cube.argmin(v | ~inside, axis=0), mask=cols < N)


def test_argmax_and_argmin_of_bools(target, rng):
    """True beats False, ties (an all-False row) take the first index, as NumPy's. WGSL has
    no order on bools: its reductions once compared them with `<` and failed to compile."""
    M, N = 20, 27
    x = (rng.random((M, N)) < 0.1).astype(np.int32)
    x[3] = 0
    amax, amin = poison(M, "int32"), poison(N, "int32")
    bool_args_kernel[(1,)](x, amax, amin, M, N, BM=32, BN=32, target=target)
    assert_close(amax, np.argmax(x > 0, axis=1).astype(np.int32))
    assert_close(amin, np.argmin(x > 0, axis=0).astype(np.int32))


@cube.kernel
def negated_max_kernel(x, out, M, N, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.arange(0, BM)
    cols = cube.arange(0, BN)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * N + cols[None, :], mask=inside, other=0)
    cube.store(out + cols, cube.max(-v, axis=0), mask=cols < N)


def test_max_of_negated_uint32(target, rng):
    """-x on uint32 wraps around, as NumPy's (WGSL has no unary minus on u32)."""
    x = rng.integers(0, 2**32, (5, 7), dtype=np.uint32)
    x[:, 0] = 0
    out = poison(7, "uint32")
    negated_max_kernel[(1,)](x, out, 5, 7, BM=8, BN=8, target=target)
    assert_close(out, np.max(-x, axis=0))


# ---------------------------------------------------------------- cumsum


@cube.kernel
def cumsum_2d_kernel(
    x, out, M, N, stride, AXIS: cube.Comptime[int], BM: cube.Comptime[int], BN: cube.Comptime[int]
):
    rows = cube.arange(0, BM)
    cols = cube.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride + cols[None, :]
    v = cube.load(x + offs, mask=mask, other=0)
    cube.store(out + offs, cube.cumsum(v, axis=AXIS), mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_2d(target, rng, dtype, axis):
    M, N = 13, 29
    x = (
        random_array(rng, (M, N), dtype, -100, 100)
        if dtype == "int32"
        else random_array(rng, (M, N), dtype)
    )
    out = poison((M, N), dtype)
    cumsum_2d_kernel[(1,)](x, out, M, N, N, AXIS=axis, BM=16, BN=32, target=target)
    # Running float32 sums of up to 29 terms of magnitude <= 2: absolute error up to ~1e-5.
    assert_close(out, np.cumsum(x.astype(np.float64), axis=axis), atol=1e-5)


@cube.kernel
def cumsum_1d_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.cumsum(cube.load(x + offs, mask=mask, other=0)), mask=mask)


def test_cumsum_1d_blocks(target, rng):
    n, block = 300, 64
    x = random_array(rng, n, "int32", -50, 50)
    out = poison(n, "int32")
    cumsum_1d_kernel[(cdiv(n, block),)](x, out, n, BLOCK=block, target=target)
    expected = np.concatenate([np.cumsum(x[i : i + block]) for i in range(0, n, block)])
    assert_close(out, expected)
