"""cubepy in one minute: three kernels, checked and timed against NumPy.

    python examples/demo.py                 # the CPU target (Numba)
    python examples/demo.py --target wgsl   # WebGPU (Vulkan, Metal, DX12 or GL through wgpu)
    python examples/demo.py --target triton # NVIDIA/AMD GPUs; Triton's interpreter without one

Each kernel is written once, in the Triton-like language of docs/language.md, and runs
unchanged on every target. Exits non-zero if any result disagrees with NumPy.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import numpy as np

import cubepy as cube


@cube.kernel
def gelu(x, out, n, BLOCK: cube.Comptime[int]):
    # Each cube handles BLOCK elements; the mask covers the ragged end of the array.
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask, other=0.0)
    cube.store(out + offs, v * 0.5 * (1.0 + cube.erf(v * 0.7071067811865476)), mask=mask)


@cube.kernel
def softmax(x, out, n_cols, stride, BLOCK: cube.Comptime[int]):
    # One cube per row; columns past n_cols read -inf so they add exp(-inf) = 0 to the sum.
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    mask = cols < n_cols
    v = cube.load(x + row * stride + cols, mask=mask, other=-float("inf"))
    e = cube.exp(v - cube.max(v, axis=0))
    cube.store(out + row * stride + cols, e / cube.sum(e, axis=0), mask=mask)


@cube.kernel
def matmul(a, b, c, M, N, K, BLOCK_M: cube.Comptime[int], BLOCK_N: cube.Comptime[int],
           BLOCK_K: cube.Comptime[int]):
    # One cube per (BLOCK_M, BLOCK_N) tile of C; row-major A (M, K), B (K, N), C (M, N).
    rm = cube.cube_pos(0) * BLOCK_M + cube.arange(0, BLOCK_M)
    rn = cube.cube_pos(1) * BLOCK_N + cube.arange(0, BLOCK_N)
    rk = cube.arange(0, BLOCK_K)
    acc = cube.zeros((BLOCK_M, BLOCK_N), cube.float32)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + rk
        a_tile = cube.load(a + rm[:, None] * K + ka[None, :],
                           mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b_tile = cube.load(b + ka[:, None] * N + rn[None, :],
                           mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = cube.dot(a_tile, b_tile, acc)
    cube.store(c + rm[:, None] * N + rn[None, :], acc,
               mask=(rm[:, None] < M) & (rn[None, :] < N))


# The CPU target runs full-size problems in well under a second; the others (an interpreter,
# lavapipe) are for showing portability, so they get small ones.
SIZES = {
    "cpu": {"gelu": 1 << 22, "softmax": (4096, 1000), "matmul": (700, 600, 500)},
    "small": {"gelu": 1 << 16, "softmax": (256, 1000), "matmul": (200, 300, 150)},
}


def median_ms(fn, repeat: int = 5) -> float:
    fn()  # warm-up: compiles on the first launch, then loads from the cache
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def report(name: str, got: np.ndarray, want: np.ndarray, tol: float, ours_ms: float,
           numpy_ms: float) -> bool:
    err = float(np.max(np.abs(got.astype(np.float64) - want)))
    ok = bool(np.isfinite(err) and err <= tol)
    print(f"{name:<34} max err {err:8.1e} {'PASS' if ok else 'FAIL'}   "
          f"cubepy {ours_ms:8.2f} ms  NumPy {numpy_ms:8.2f} ms  "
          f"speed-up {numpy_ms / ours_ms:5.2f}x")
    return ok


def demo_gelu(target: str, n: int, rng) -> bool:
    try:  # NumPy has no erf; SciPy's is the fair peer (the [cpu] extra installs it)
        from scipy.special import erf
    except ImportError:
        erf = np.vectorize(math.erf)
    x = rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    block = 1024
    ours = median_ms(lambda: gelu[(cube.cdiv(n, block),)](x, out, n, BLOCK=block, target=target))
    peer = median_ms(lambda: x * 0.5 * (1.0 + erf(x * np.float32(0.7071067811865476))))
    x64 = x.astype(np.float64)
    want = x64 * 0.5 * (1.0 + erf(x64 / math.sqrt(2.0)))
    return report(f"gelu, {n} f32", out, want, 1e-5, ours, peer)


def demo_softmax(target: str, shape: tuple[int, int], rng) -> bool:
    rows, cols = shape
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.empty_like(x)
    block = 1 << (cols - 1).bit_length()  # a tile is a power of two wide; the mask trims it

    def numpy_softmax(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    ours = median_ms(lambda: softmax[(rows,)](x, out, cols, cols, BLOCK=block, target=target))
    peer = median_ms(lambda: numpy_softmax(x))
    return report(f"softmax {rows}x{cols} (tile {block})", out,
                  numpy_softmax(x.astype(np.float64)), 1e-6, ours, peer)


def demo_matmul(target: str, shape: tuple[int, int, int], rng) -> bool:
    m, n, k = shape
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.empty((m, n), np.float32)
    bm, bn, bk = (128, 128, 64) if target == "cpu" else (32, 32, 32)
    grid = (cube.cdiv(m, bm), cube.cdiv(n, bn))
    ours = median_ms(lambda: matmul[grid](a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                          target=target))
    peer = median_ms(lambda: a @ b)
    # float32 sums of k products: the error grows about like sqrt(k).
    return report(f"matmul {m}x{n}x{k}", c, a.astype(np.float64) @ b.astype(np.float64),
                  1e-4 * math.sqrt(k), ours, peer)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="cubepy showcase")
    parser.add_argument("--target", default="cpu", help="cpu, cpu:debug, triton or wgsl")
    args = parser.parse_args(argv)
    target = args.target
    sizes = SIZES["cpu" if target == "cpu" else "small"]
    rng = np.random.default_rng(0)

    print(f"cubepy demo on target {target!r} (times: median of 5 after a warm-up)\n")
    try:
        results = [
            demo_gelu(target, sizes["gelu"], rng),
            demo_softmax(target, sizes["softmax"], rng),
            demo_matmul(target, sizes["matmul"], rng),
        ]
    except cube.LaunchError as err:  # e.g. the target's package or device is missing
        print(f"error: {err}\ntargets available here: {', '.join(cube.available_targets())}")
        return 2

    x = np.zeros(1000, np.float32)
    print(f"\n--- generated {target} source of gelu (BLOCK=1024) ---")
    print(gelu.source(target, x, np.empty_like(x), x.size, BLOCK=1024))

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
