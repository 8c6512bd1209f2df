"""Kernels more than one test file uses (tests/ is on sys.path: ``import shared_kernels``)."""

from __future__ import annotations

import cubepy as cube


# C (float32) = A @ B for row-major A (M x K) and B (K x N): one cube per BM x BN tile of C,
# a K loop of dots with masks for ragged edges.
@cube.kernel
def matmul_tiled(
    a, b, c, M, N, K, BM: cube.Comptime[int], BN: cube.Comptime[int], BK: cube.Comptime[int]
):
    rm = cube.cube_pos(0) * BM + cube.arange(0, BM)
    rn = cube.cube_pos(1) * BN + cube.arange(0, BN)
    rk = cube.arange(0, BK)
    acc = cube.zeros((BM, BN), cube.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        a_tile = cube.load(
            a + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0
        )
        b_tile = cube.load(
            b + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc = cube.dot(a_tile, b_tile, acc=acc)
    cube.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
