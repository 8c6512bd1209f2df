"""Small kernels the autotune tests tune (imported by the tests and by their subprocesses).

Example:
    tuned = make_add()
    out = run_add(tuned, 1000)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import cubepy as cube

# The subprocess tests import this file alone: make tests/ importable for the shared kernels.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from shared_kernels import k_slice, matmul_tiled  # noqa: E402

ADD_CONFIGS = [cube.Config(BLOCK=64), cube.Config(BLOCK=128), cube.Config(BLOCK=256)]


@cube.func
def combine(a, b):
    return a + b


@cube.kernel
def add_kernel(x, y, out, n, BLOCK: cube.Comptime[int], PLUS_ONE: cube.Comptime[bool] = False):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = combine(cube.load(x + offs, mask=mask), cube.load(y + offs, mask=mask))
    if PLUS_ONE:
        v = v + 1.0
    cube.store(out + offs, v, mask=mask)


def make_add(configs: Sequence[cube.Config] | None = None, **options: Any) -> Any:
    """A fresh autotuner over ``add_kernel`` (its own in-process memo), keyed on ``n``."""
    return cube.autotune(configs=list(configs or ADD_CONFIGS), key=["n"], **options)(add_kernel)


def add_inputs(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.arange(n, dtype=np.float32)
    return x, np.full(n, 2.0, np.float32), np.zeros(n, np.float32)


def run_add(tuned: Any, n: int) -> np.ndarray:
    """Launch ``tuned`` on n elements and check the sum; returns ``out``."""
    x, y, out = add_inputs(n)
    tuned[lambda meta: (cube.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    np.testing.assert_array_equal(out, x + y)
    return out




@cube.kernel
def matmul_splitk(
    a,
    b,
    c,
    M,
    N,
    K,
    BM: cube.Comptime[int],
    BN: cube.Comptime[int],
    BK: cube.Comptime[int],
    SPLIT_K: cube.Comptime[int],
):
    rm = cube.cube_pos(0) * BM + cube.arange(0, BM)
    rn = cube.cube_pos(1) * BN + cube.arange(0, BN)
    acc = cube.zeros((BM, BN), cube.float32)
    for k0 in range(cube.cube_pos(2) * BK, K, BK * SPLIT_K):
        a_tile, b_tile = k_slice(a, b, rm, rn, k0 + cube.arange(0, BK), M, N, K)
        acc = cube.dot(a_tile, b_tile, acc=acc)
    cube.atomic_add(
        c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N)
    )


MATMUL_CONFIGS = [
    cube.Config(SPLIT_K=1, BM=16, BN=16, BK=16),
    cube.Config(SPLIT_K=2, BM=16, BN=16, BK=16),
]


def matmul(
    a: np.ndarray,
    b: np.ndarray,
    target: str = "cpu",
    *,
    SPLIT_K: int = 1,
    BM: int = 16,
    BN: int = 16,
    BK: int = 16,
) -> np.ndarray:
    """A host function choosing between the tiled and the split-K kernel; returns ``a @ b``."""
    M, K = a.shape
    N = b.shape[1]
    c = np.zeros((M, N), np.float32)
    if SPLIT_K == 1:
        matmul_tiled[(cube.cdiv(M, BM), cube.cdiv(N, BN))](
            a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, target=target
        )
    else:
        matmul_splitk[(cube.cdiv(M, BM), cube.cdiv(N, BN), SPLIT_K)](
            a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, SPLIT_K=SPLIT_K, target=target
        )
    return c
