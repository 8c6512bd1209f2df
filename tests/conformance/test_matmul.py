"""Matrix products with cube.dot: ragged sizes, K loops with masks, dtypes, batches, trans."""

from __future__ import annotations

import numpy as np
import pytest
from shared_kernels import k_slice
from util import (
    assert_close,
    cdiv,
    poison,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube


@cube.kernel
def matmul_kernel(
    a,
    b,
    c,
    M,
    N,
    K,
    sam,
    sak,
    sbk,
    sbn,
    scm,
    scn,
    ACC64: cube.Comptime[bool],
    BM: cube.Comptime[int],
    BN: cube.Comptime[int],
    BK: cube.Comptime[int],
):
    rm = cube.cube_pos(0) * BM + cube.arange(0, BM)
    rn = cube.cube_pos(1) * BN + cube.arange(0, BN)
    rk = cube.arange(0, BK)
    if ACC64:
        acc = cube.zeros((BM, BN), cube.float64)
    else:
        acc = cube.zeros((BM, BN), cube.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        a_tile = cube.load(
            a + rm[:, None] * sam + ka[None, :] * sak,
            mask=(rm[:, None] < M) & (ka[None, :] < K),
            other=0.0,
        )
        b_tile = cube.load(
            b + ka[:, None] * sbk + rn[None, :] * sbn,
            mask=(ka[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = cube.dot(a_tile, b_tile, acc=acc)
    cube.store(
        c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N)
    )


def _matmul(target, a, b, out_dtype, blocks, acc64=False):
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK = blocks
    c = poison((M, N), out_dtype)
    grid = (cdiv(M, BM), cdiv(N, BN))

    def launch():
        matmul_kernel[grid](
            a,
            b,
            c,
            M,
            N,
            K,
            a.strides[0] // a.itemsize,
            a.strides[1] // a.itemsize,
            b.strides[0] // b.itemsize,
            b.strides[1] // b.itemsize,
            N,
            1,
            ACC64=acc64,
            BM=BM,
            BN=BN,
            BK=BK,
            target=target,
        )

    return c, launch


MATMUL_CASES = [
    # (in dtype, out/acc dtype, blocks (BM, BN, BK))
    ("float32", "float32", (32, 32, 16)),
    ("float32", "float32", (16, 32, 32)),
    ("float16", "float32", (32, 16, 16)),
    ("bfloat16", "float32", (16, 16, 32)),
    ("float64", "float64", (16, 32, 16)),
]


@pytest.mark.parametrize(
    "in_dtype,out_dtype,blocks",
    MATMUL_CASES,
    ids=[f"{i}-{o}-{'x'.join(map(str, b))}" for i, o, b in MATMUL_CASES],
)
def test_matmul_ragged(target, rng, in_dtype, out_dtype, blocks):
    M, N, K = 67, 45, 83
    a = random_array(rng, (M, K), in_dtype, -1, 1)
    b = random_array(rng, (K, N), in_dtype, -1, 1)
    c, launch = _matmul(target, a, b, out_dtype, blocks, acc64=out_dtype == "float64")
    expected = a.astype(np.float64) @ b.astype(np.float64)
    if run_or_expect_unsupported(target, [in_dtype, out_dtype], launch):
        if out_dtype == "float32":
            # Products of the inputs are exact in float32; the sum over K = 83 terms of size <= 1
            # can be off by ~K * eps absolute.
            assert_close(c, expected, rtol=1e-4, atol=1e-4)
        else:
            assert_close(c, expected)


def test_matmul_transposed_input_view(target, rng):
    """A is a transposed NumPy view (non-contiguous): its strides are passed as they are."""
    M, N, K = 40, 24, 50
    at = random_array(rng, (K, M), "float32", -1, 1)
    a = at.T
    b = random_array(rng, (K, N), "float32", -1, 1)
    c, launch = _matmul(target, a, b, "float32", (16, 16, 16))
    launch()
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@cube.kernel
def matmul_int8_kernel(
    a, b, c, M, N, K, BM: cube.Comptime[int], BN: cube.Comptime[int], BK: cube.Comptime[int]
):
    rm = cube.cube_pos(0) * BM + cube.arange(0, BM)
    rn = cube.cube_pos(1) * BN + cube.arange(0, BN)
    acc = cube.zeros((BM, BN), cube.int32)
    for k0 in range(0, K, BK):
        a_tile, b_tile = k_slice(a, b, rm, rn, k0 + cube.arange(0, BK), M, N, K)
        acc += cube.dot(a_tile, b_tile)
    cube.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_matmul_int8_accumulates_in_int32(target, rng):
    M, N, K = 33, 20, 70
    # |sum| can reach 70 * 100 * 100: past int16, so an int8/int16 accumulator would be caught.
    a = random_array(rng, (M, K), "int8", -100, 100)
    b = random_array(rng, (K, N), "int8", -100, 100)
    c = poison((M, N), "int32")
    expected = a.astype(np.int64) @ b.astype(np.int64)
    if run_or_expect_unsupported(
        target,
        ["int8", "int32"],
        lambda: matmul_int8_kernel[(cdiv(M, 16), cdiv(N, 16))](
            a, b, c, M, N, K, BM=16, BN=16, BK=32, target=target
        ),
    ):
        assert_close(c, expected)


@cube.kernel
def bmm_kernel(
    a, b, c, M, N, K, BM: cube.Comptime[int], BN: cube.Comptime[int], BK: cube.Comptime[int]
):
    batch = cube.cube_pos(2)
    rm = cube.cube_pos(0) * BM + cube.arange(0, BM)
    rn = cube.cube_pos(1) * BN + cube.arange(0, BN)
    acc = cube.zeros((BM, BN), cube.float32)
    for k0 in range(0, K, BK):
        a_tile, b_tile = k_slice(a + batch * M * K, b + batch * K * N, rm, rn,
                                 k0 + cube.arange(0, BK), M, N, K)
        acc = acc + cube.dot(a_tile, b_tile)
    cube.store(
        c + batch * M * N + rm[:, None] * N + rn[None, :],
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def test_batched_matmul_3d_grid(target, rng):
    B, M, N, K = 3, 19, 23, 37
    a = random_array(rng, (B, M, K), "float32", -1, 1)
    b = random_array(rng, (B, K, N), "float32", -1, 1)
    c = poison((B, M, N), "float32")
    bmm_kernel[(cdiv(M, 16), cdiv(N, 16), B)](a, b, c, M, N, K, BM=16, BN=16, BK=16, target=target)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@cube.kernel
def matmul_bt_kernel(
    a, bt, c, M, N, K, BM: cube.Comptime[int], BN: cube.Comptime[int], BK: cube.Comptime[int]
):
    """C = A @ BT.T, reading BT row-major and transposing the tile with cube.trans."""
    rm = cube.cube_pos(0) * BM + cube.arange(0, BM)
    rn = cube.cube_pos(1) * BN + cube.arange(0, BN)
    rk = cube.arange(0, BK)
    acc = cube.zeros((BM, BN), cube.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        a_tile = cube.load(
            a + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0
        )
        bt_tile = cube.load(
            bt + rn[:, None] * K + ka[None, :],
            mask=(rn[:, None] < N) & (ka[None, :] < K),
            other=0.0,
        )
        acc = cube.dot(a_tile, cube.trans(bt_tile), acc=acc)
    cube.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_matmul_with_trans(target, rng):
    M, N, K = 35, 50, 40
    a = random_array(rng, (M, K), "float32", -1, 1)
    bt = random_array(rng, (N, K), "float32", -1, 1)
    c = poison((M, N), "float32")
    matmul_bt_kernel[(cdiv(M, 32), cdiv(N, 16))](
        a, bt, c, M, N, K, BM=32, BN=16, BK=16, target=target
    )
    assert_close(c, a.astype(np.float64) @ bt.T.astype(np.float64), rtol=1e-4, atol=1e-4)


@cube.kernel
def dot_single_tile_kernel(
    a, b, c, BM: cube.Comptime[int], BN: cube.Comptime[int], BK: cube.Comptime[int]
):
    rm = cube.arange(0, BM)
    rn = cube.arange(0, BN)
    rk = cube.arange(0, BK)
    a_tile = cube.load(a + rm[:, None] * BK + rk[None, :])
    b_tile = cube.load(b + rk[:, None] * BN + rn[None, :])
    cube.store(c + rm[:, None] * BN + rn[None, :], cube.dot(a_tile, b_tile))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_dot_single_tile_result_dtype(target, rng, dtype):
    """Without acc=, float inputs accumulate in float32 (the output array is float32)."""
    a = random_array(rng, (32, 16), dtype, -1, 1)
    b = random_array(rng, (16, 64), dtype, -1, 1)
    c = poison((32, 64), "float32")
    if run_or_expect_unsupported(
        target,
        [dtype, "float32"],
        lambda: dot_single_tile_kernel[(1,)](a, b, c, BM=32, BN=64, BK=16, target=target),
    ):
        assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-5)
