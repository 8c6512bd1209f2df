"""The kernels the CPU benchmarks measure, and their NumPy peers.

Shared by the asv suite (``asv_bench/bench_cpu.py``) and the one-shot table
(``bench/cpu_bench.py``), so both always measure the same code.

Example:
    >>> import numpy as np
    >>> from asv_bench import cpu_kernels as k
    >>> x = np.linspace(-3, 3, 4096, dtype=np.float32)
    >>> bool(np.allclose(k.gelu(x), k.gelu_numpy(x), atol=1e-6))
    True
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

import cubepy as cube

GELU_BLOCK = 4096
MATMUL_BLOCKS = (128, 128, 64)  # (BLOCK_M, BLOCK_N, BLOCK_K): big tiles amortize the per-tile
# overhead of the CPU target, whose cube.dot becomes one BLAS call per tile pair.


# Fused GELU (erf form): one pass over memory where NumPy makes five temporaries.
def gelu_body(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask, other=0.0)
    cube.store(out + offs, v * 0.5 * (1.0 + cube.erf(v * 0.7071067811865476)), mask=mask)


# Softmax of each row; one cube per row, the row padded to BLOCK columns by the mask.
def softmax_body(x, out, n_cols, stride, BLOCK: cube.Comptime[int]):
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    mask = cols < n_cols
    v = cube.load(x + row * stride + cols, mask=mask, other=-float("inf"))
    e = cube.exp(v - cube.max(v, axis=0))
    cube.store(out + row * stride + cols, e / cube.sum(e, axis=0), mask=mask)


# C = A @ B for row-major A (M, K), B (K, N), C (M, N); one cube per (BLOCK_M, BLOCK_N) tile of
# C, accumulating over K in BLOCK_K steps. EVEN (every tile whole) drops the masks, as
# kernels/matmul.py does: on the cpu target they are tiles of their own, made every step.
def matmul_body(
    a,
    b,
    c,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    BLOCK_M: cube.Comptime[int],
    BLOCK_N: cube.Comptime[int],
    BLOCK_K: cube.Comptime[int],
    EVEN: cube.Comptime[bool] = False,
):
    rm = cube.cube_pos(0) * BLOCK_M + cube.arange(0, BLOCK_M)
    rn = cube.cube_pos(1) * BLOCK_N + cube.arange(0, BLOCK_N)
    rk = cube.arange(0, BLOCK_K)
    acc = cube.zeros((BLOCK_M, BLOCK_N), cube.float32)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + rk
        a_ptrs = a + rm[:, None] * stride_am + ka[None, :]
        b_ptrs = b + ka[:, None] * stride_bk + rn[None, :]
        if EVEN:
            a_tile = cube.load(a_ptrs)
            b_tile = cube.load(b_ptrs)
        else:
            a_tile = cube.load(a_ptrs, mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
            b_tile = cube.load(b_ptrs, mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = cube.dot(a_tile, b_tile, acc)
    cube.store(
        c + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N)
    )


# The bodies stay plain functions so the compile-time benchmark can make a fresh kernel object.
gelu_kernel = cube.kernel(gelu_body)
softmax_kernel = cube.kernel(softmax_body)
matmul_kernel = cube.kernel(matmul_body)


def _options(target: str | None) -> dict:
    return {} if target is None else {"target": target}


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def gelu(x: np.ndarray, out: np.ndarray | None = None, *, block: int = GELU_BLOCK,
         target: str | None = None) -> np.ndarray:
    """GELU of a contiguous array through the cubepy kernel: ``gelu(np.ones(8, np.float32))``."""
    out = np.empty_like(x) if out is None else out
    n = x.size
    gelu_kernel[(cube.cdiv(n, block),)](x, out, n, BLOCK=block, **_options(target))
    return out


def gelu_numpy(x: np.ndarray) -> np.ndarray:
    """The same formula in NumPy + SciPy, the peer of :func:`gelu`."""
    from scipy.special import erf

    return x * 0.5 * (1.0 + erf(x * np.float32(0.7071067811865476)))


def softmax(x: np.ndarray, out: np.ndarray | None = None, *, kernel=None,
            target: str | None = None) -> np.ndarray:
    """Row softmax of a row-major 2-D array: ``softmax(np.zeros((4, 10), np.float32))``."""
    rows, cols = x.shape
    out = np.empty_like(x) if out is None else out
    stride = x.strides[0] // x.itemsize
    assert out.strides == x.strides, "out must have x's layout (one stride is passed)"
    kernel = softmax_kernel if kernel is None else kernel
    kernel[(rows,)](x, out, cols, stride, BLOCK=_next_pow2(cols), **_options(target))
    return out


def softmax_numpy(x: np.ndarray) -> np.ndarray:
    """Row softmax in NumPy, the peer of :func:`softmax`."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None, *,
           blocks: tuple[int, int, int] = MATMUL_BLOCKS,
           target: str | None = None) -> np.ndarray:
    """``a @ b`` for row-major float32 matrices: ``matmul(np.ones((64, 32), np.float32), ...)``."""
    (m, k), (k2, n) = a.shape, b.shape
    assert k == k2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    out = np.empty((m, n), np.float32) if out is None else out
    bm, bn, bk = blocks
    grid = (cube.cdiv(m, bm), cube.cdiv(n, bn))
    matmul_kernel[grid](
        a, b, out, m, n, k,
        a.strides[0] // a.itemsize, b.strides[0] // b.itemsize, out.strides[0] // out.itemsize,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, EVEN=m % bm == 0 and n % bn == 0 and k % bk == 0,
        **_options(target),
    )
    return out


def median_seconds(fn: Callable[[], object], repeat: int = 7, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs, after ``warmup`` untimed runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
