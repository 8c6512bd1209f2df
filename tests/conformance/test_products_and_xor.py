"""``cumprod``, ``xor_sum`` and ``reduce_or``, as Triton's: along each axis
of 2-D tiles (the cpu target's tile form) and of 1-D ones (its lane loops), on ragged edges,
against NumPy on every target. Small integers multiply in int32, as ``cumsum`` adds."""

from __future__ import annotations

import numpy as np
import pytest
from util import assert_close, assert_points_at_the_line, np_dtype, run_or_expect_unsupported

import cubepy as cube

M, N = 13, 27  # ragged inside 16 x 32 tiles


@cube.kernel
def cumprod_2d(x, out, M, N, AXIS: cube.Comptime[int], BM: cube.Comptime[int],
               BN: cube.Comptime[int]):
    rows, cols = cube.arange(0, BM)[:, None], cube.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    v = cube.load(x + rows * N + cols, mask=mask, other=1)
    cube.store(out + rows * N + cols, cube.cumprod(v, axis=AXIS), mask=mask)


@cube.kernel
def cumprod_1d(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.cumprod(cube.load(x + offs, mask=mask, other=1)), mask=mask)


def factors(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Values whose running products stay in range: near 1 for floats, -2..2 for ints."""
    if np_dtype(dtype).kind == "f":
        return rng.uniform(0.8, 1.25, shape).astype(np_dtype(dtype))
    low = 0 if np_dtype(dtype).kind == "u" else -2
    return rng.integers(low, 3, shape).astype(np_dtype(dtype))


def cumprod_reference(x: np.ndarray, axis: int) -> np.ndarray:
    wide = np.float64 if x.dtype.kind == "f" or x.dtype == np_dtype("bfloat16") else np.int64
    return np.cumprod(x.astype(wide), axis=axis)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int8", "uint32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumprod_2d(target, rng, dtype, axis):
    x = factors(rng, (M, N), dtype)
    result = "int32" if dtype == "int8" else dtype
    out = np.zeros((M, N), np_dtype(result))
    if run_or_expect_unsupported(target, [dtype, result], lambda: cumprod_2d[(1,)](
            x, out, M, N, AXIS=axis, BM=16, BN=32, target=target)):
        want = cumprod_reference(x, axis)
        if dtype in ("int32", "int8", "uint32"):  # -2..2 over 16 rows or 32 columns: exact
            want = want.astype(np_dtype(result))
        assert_close(out, want)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_cumprod_1d(target, rng, dtype):
    n = 100
    x = factors(rng, n, dtype)
    if dtype == "int64":
        x = np.where(np.arange(n) % 7 == 0, x, 1).astype(np.int64)  # 15 factors: no overflow
    out = np.zeros(n, np_dtype(dtype))
    if run_or_expect_unsupported(target, [dtype], lambda: cumprod_1d[(1,)](
            x, out, n, BLOCK=128, target=target)):
        assert_close(out, cumprod_reference(x, 0).astype(np_dtype(dtype)))


@cube.func
def bitwise_sum(v, axis, KIND: cube.Comptime[str]):
    if KIND == "or":
        return cube.reduce_or(v, axis)
    return cube.xor_sum(v, axis)


@cube.kernel
def xor_sum_2d(x, out_rows, out_cols, out_all, M, N, BM: cube.Comptime[int],
               BN: cube.Comptime[int], KIND: cube.Comptime[str] = "xor"):
    rows, cols = cube.arange(0, BM)[:, None], cube.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    v = cube.load(x + rows * N + cols, mask=mask, other=0)
    cube.store(out_rows + cube.arange(0, BM), bitwise_sum(v, 1, KIND),
               mask=cube.arange(0, BM) < M)
    cube.store(out_cols + cube.arange(0, BN), bitwise_sum(v, 0, KIND),
               mask=cube.arange(0, BN) < N)
    cube.store(out_all, bitwise_sum(v, None, KIND))


@cube.kernel
def xor_sum_1d(x, out, n, BLOCK: cube.Comptime[int], KIND: cube.Comptime[str] = "xor"):
    offs = cube.arange(0, BLOCK)
    cube.store(out, bitwise_sum(cube.load(x + offs, mask=offs < n, other=0), 0, KIND))


def xor_case(rng: np.random.Generator, dtype: str, kind: str = "xor"
             ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Random bits of ``dtype`` in an (M, N) array, and zeroed outputs for ``xor_sum_2d``.
    For ``or``, sparse bits (each set with probability 1/16), so that not every or is -1."""
    info = np.iinfo(np_dtype(dtype))
    x = rng.integers(info.min, info.max, (M, N), dtype=np_dtype(dtype), endpoint=True)
    if kind == "or":
        for _ in range(3):
            x &= rng.integers(info.min, info.max, (M, N), dtype=np_dtype(dtype), endpoint=True)
    return x, [np.zeros(M, x.dtype), np.zeros(N, x.dtype), np.zeros(1, x.dtype)]


def assert_xor_sums(x: np.ndarray, outs: list[np.ndarray], kind: str = "xor") -> None:
    """Outputs along axis 1, axis 0 and all axes (``xor_sum_2d``'s, or more of the last)."""
    reduce = np.bitwise_or.reduce if kind == "or" else np.bitwise_xor.reduce
    for got, axis in zip(outs, [1, 0, None, None]):
        want = np.atleast_1d(reduce(x, axis=axis))
        np.testing.assert_array_equal(got.reshape(-1), want)


@pytest.mark.parametrize("kind", ["xor", "or"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "int8", "uint8", "int16"])
def test_xor_sum_and_reduce_or(target, rng, dtype, kind):
    x, outs = xor_case(rng, dtype, kind)
    flat = np.zeros(1, x.dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: xor_sum_2d[(1,)](
            x, *outs, M, N, BM=16, BN=32, KIND=kind, target=target)):
        xor_sum_1d[(1,)](x.ravel(), flat, x.size, BLOCK=512, KIND=kind, target=target)
        assert_xor_sums(x, [*outs, flat], kind)


@cube.kernel
def xor_sum_of_floats(x):
    cube.store(x, cube.xor_sum(cube.load(x + cube.arange(0, 16)), axis=0))


def test_xor_sum_of_floats_points_at_the_line():
    assert_points_at_the_line(lambda: xor_sum_of_floats[(1,)](np.zeros(16, np.float32),
                                                              target="cpu"),
                              "cube.xor_sum() needs an integer tile, got float32",
                              "test_products_and_xor.py")
