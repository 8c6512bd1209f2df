"""Kernels more than one test file uses (tests/ is on sys.path: ``import shared_kernels``)."""

from __future__ import annotations

import cubepy as cube


@cube.func
def k_slice(a, b, rm, rn, ka, M, N, K):
    """The tiles of row-major A (M x K) at rows ``rm``, columns ``ka`` and B (K x N) at rows
    ``ka``, columns ``rn``; 0 past the edges (``a``, ``b``: pointers to their first element)."""
    a_mask = (rm[:, None] < M) & (ka[None, :] < K)
    b_mask = (ka[:, None] < K) & (rn[None, :] < N)
    a_tile = cube.load(a + rm[:, None] * K + ka[None, :], mask=a_mask, other=0)
    b_tile = cube.load(b + ka[:, None] * N + rn[None, :], mask=b_mask, other=0)
    return a_tile, b_tile


# C (float32) = A @ B for row-major A (M x K) and B (K x N): one cube per BM x BN tile of C,
# a K loop of dots with masks for ragged edges.
@cube.kernel
def matmul_tiled(
    a, b, c, M, N, K, BM: cube.Comptime[int], BN: cube.Comptime[int], BK: cube.Comptime[int]
):
    rm = cube.cube_pos(0) * BM + cube.arange(0, BM)
    rn = cube.cube_pos(1) * BN + cube.arange(0, BN)
    acc = cube.zeros((BM, BN), cube.float32)
    for k0 in range(0, K, BK):
        a_tile, b_tile = k_slice(a, b, rm, rn, k0 + cube.arange(0, BK), M, N, K)
        acc = cube.dot(a_tile, b_tile, acc=acc)
    cube.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
