"""Shapes and layout: broadcasting, reshape, permute, trans, expand_dims, broadcast_to, .shape."""

from __future__ import annotations

import numpy as np
import pytest
from util import assert_close, cdiv, poison, random_array

import cubepy as cube


@cube.kernel
def outer_kernel(x, y, out, M, N, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.cube_pos(0) * BM + cube.arange(0, BM)
    cols = cube.cube_pos(1) * BN + cube.arange(0, BN)
    a = cube.load(x + rows, mask=rows < M)
    b = cube.load(y + cols, mask=cols < N)
    r = a[:, None] * b[None, :] + a[:, None] - 2.0
    cube.store(
        out + rows[:, None] * N + cols[None, :], r, mask=(rows[:, None] < M) & (cols[None, :] < N)
    )


def test_broadcasting_none_indexing(target, rng):
    M, N = 45, 70
    x, y = random_array(rng, M, "float32"), random_array(rng, N, "float32")
    out = poison((M, N), "float32")
    outer_kernel[(cdiv(M, 16), cdiv(N, 32))](x, y, out, M, N, BM=16, BN=32, target=target)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    assert_close(out, x64[:, None] * y64[None, :] + x64[:, None] - 2.0)


@cube.kernel
def reshape_kernel(x, row_sums, flat, R: cube.Comptime[int], C: cube.Comptime[int]):
    offs = cube.arange(0, R * C)
    v = cube.load(x + offs)
    m = cube.reshape(v, (R, C))
    cube.store(row_sums + cube.arange(0, R), cube.sum(m, axis=1))
    back = cube.reshape(m * 2, (R * C,))
    cube.store(flat + offs, back)


def test_reshape_row_major(target, rng):
    R, C = 8, 16
    x = random_array(rng, R * C, "int32", -100, 100)
    row_sums, flat = poison(R, "int32"), poison(R * C, "int32")
    reshape_kernel[(1,)](x, row_sums, flat, R=R, C=C, target=target)
    assert_close(row_sums, x.reshape(R, C).sum(axis=1))
    assert_close(flat, x * 2)


@cube.kernel
def permute_kernel(
    x, out, sums, A: cube.Comptime[int], B: cube.Comptime[int], C: cube.Comptime[int]
):
    i = cube.arange(0, A)
    j = cube.arange(0, B)
    k = cube.arange(0, C)
    v = cube.load(x + i[:, None, None] * (B * C) + j[None, :, None] * C + k[None, None, :])
    p = cube.permute(v, (2, 0, 1))
    cube.store(out + k[:, None, None] * (A * B) + i[None, :, None] * B + j[None, None, :], p)
    cube.store(sums + i[:, None] * C + k[None, :], cube.sum(v, axis=1))


def test_permute_3d(target, rng):
    A, B, C = 2, 4, 8
    x = random_array(rng, (A, B, C), "float32")
    out, sums = poison((C, A, B), "float32"), poison((A, C), "float32")
    permute_kernel[(1,)](x, out, sums, A=A, B=B, C=C, target=target)
    assert_close(out, np.transpose(x, (2, 0, 1)))
    assert_close(sums, x.astype(np.float64).sum(axis=1))


@cube.kernel
def trans_kernel(x, out, M, N, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.cube_pos(0) * BM + cube.arange(0, BM)
    cols = cube.cube_pos(1) * BN + cube.arange(0, BN)
    v = cube.load(
        x + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N)
    )
    t = cube.trans(v)
    cube.store(
        out + cols[:, None] * M + rows[None, :], t, mask=(cols[:, None] < N) & (rows[None, :] < M)
    )


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_transpose_via_trans(target, rng, dtype):
    M, N = 50, 35
    x = random_array(rng, (M, N), dtype)
    out = poison((N, M), dtype)
    trans_kernel[(cdiv(M, 32), cdiv(N, 16))](x, out, M, N, BM=32, BN=16, target=target)
    assert_close(out, x.T)


@cube.kernel
def expand_dims_kernel(x, y, out, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.arange(0, BM)
    cols = cube.arange(0, BN)
    a = cube.expand_dims(cube.load(x + rows), 1)
    b = cube.expand_dims(cube.load(y + cols), 0)
    cube.store(out + rows[:, None] * BN + cols[None, :], a - b)


def test_expand_dims(target, rng):
    x, y = random_array(rng, 16, "float32"), random_array(rng, 32, "float32")
    out = poison((16, 32), "float32")
    expand_dims_kernel[(1,)](x, y, out, BM=16, BN=32, target=target)
    assert_close(out, x[:, None] - y[None, :])


@cube.kernel
def broadcast_to_kernel(x, out, col_sums, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.arange(0, BM)
    cols = cube.arange(0, BN)
    v = cube.load(x + cols)
    b = cube.broadcast_to(v, (BM, BN)) * (rows[:, None] + 1)
    cube.store(out + rows[:, None] * BN + cols[None, :], b)
    col = cube.broadcast_to(v[None, :], (BM, BN))
    cube.store(col_sums + cols, cube.sum(col, axis=0))


def test_broadcast_to(target, rng):
    BM, BN = 8, 32
    x = random_array(rng, BN, "int32", -100, 100)
    out, col_sums = poison((BM, BN), "int32"), poison(BN, "int32")
    broadcast_to_kernel[(1,)](x, out, col_sums, BM=BM, BN=BN, target=target)
    assert_close(out, x[None, :] * np.arange(1, BM + 1, dtype=np.int32)[:, None])
    assert_close(col_sums, x * BM)


@cube.kernel
def shape_attr_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask, other=0.0)
    cube.static_assert(v.shape[0] == BLOCK, "a loaded tile has the shape of its pointer tile")
    acc = cube.zeros(v.shape, v.dtype) + cube.full(v.shape, 2.5, v.dtype) * v
    cube.store(out + offs, acc, mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_shape_and_dtype_attributes(target, rng, dtype):
    n = 300
    x = random_array(rng, n, dtype)
    out = poison(n, dtype)
    shape_attr_kernel[(cdiv(n, 128),)](x, out, n, BLOCK=128, target=target)
    assert_close(out, 2.5 * x.astype(np.float64))


@cube.kernel
def full_int_kernel(out, value, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.full((BLOCK,), 7, cube.int32) + offs * value)


def test_full_and_arange(target):
    out = poison(32, "int32")
    full_int_kernel[(1,)](out, 3, BLOCK=32, target=target)
    assert_close(out, 7 + 3 * np.arange(32, dtype=np.int32))


@cube.kernel
def arange_offset_kernel(out, BLOCK: cube.Comptime[int]):
    cube.store(out + cube.arange(0, BLOCK), cube.arange(16, 16 + BLOCK))


def test_arange_with_nonzero_start(target):
    out = poison(32, "int32")
    arange_offset_kernel[(1,)](out, BLOCK=32, target=target)
    assert_close(out, np.arange(16, 48, dtype=np.int32))


@cube.kernel
def row_bias_kernel(x, bias, out, M, N, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.cube_pos(0) * BM + cube.arange(0, BM)
    cols = cube.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    bvec = cube.load(bias + rows, mask=rows < M, other=0.0)
    cube.store(
        out + rows[:, None] * N + cols[None, :], v * bvec[:, None] + bvec[:, None], mask=mask
    )


def test_broadcast_column_vector_over_rows(target, rng):
    M, N = 33, 20
    x = random_array(rng, (M, N), "float32")
    bias = random_array(rng, M, "float32")
    out = poison((M, N), "float32")
    row_bias_kernel[(cdiv(M, 16),)](x, bias, out, M, N, BM=16, BN=32, target=target)
    assert_close(out, x.astype(np.float64) * bias[:, None] + bias[:, None])


@cube.kernel
def full_runtime_value_kernel(out, value, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.full((BLOCK,), value, cube.float32) * (offs + 1))


def test_full_with_runtime_value(target):
    out = poison(64, "float32")
    full_runtime_value_kernel[(1,)](out, 0.75, BLOCK=64, target=target)
    assert_close(out, 0.75 * np.arange(1, 65))
