"""NaN on every target, as in NumPy: maximum/minimum and max/min reductions propagate it,
argmax/argmin find the first one, a cast to bool makes it True.

(A WGSL compiler may fold a float `!=` on NaN to false: lavapipe does.)
"""

from __future__ import annotations

import numpy as np
import pytest
from util import FLOAT_DTYPES, assert_close, np_dtype, poison, run_or_expect_unsupported

import cubepy as cube

N = 64


def nan_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """NaN in a only, in b only, in both, next to infinities and zeros, then ordinary values."""
    nan, inf = np.nan, np.inf
    a = [nan, 1.0, nan, nan, -inf, inf, nan, 0.0, -0.0, 2.0, -3.0, inf]
    b = [1.0, nan, nan, -inf, nan, nan, inf, nan, 0.0, -3.0, 2.0, -inf]
    rest = N - len(a)
    rng = np.random.default_rng(0)
    a += list(rng.uniform(-4, 4, rest))
    b += list(np.where(rng.random(rest) < 0.2, nan, rng.uniform(-4, 4, rest)))
    return np.array(a).astype(np_dtype(dtype)), np.array(b).astype(np_dtype(dtype))


@cube.kernel
def min_max_kernel(x, y, o_max, o_min, o_pymax, o_pymin, BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    a = cube.load(x + i)
    b = cube.load(y + i)
    cube.store(o_max + i, cube.maximum(a, b))
    cube.store(o_min + i, cube.minimum(a, b))
    cube.store(o_pymax + i, max(a, b))
    cube.store(o_pymin + i, min(a, b))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_maximum_minimum_propagate_nan(target, dtype):
    a, b = nan_pairs(dtype)
    outs = [poison(N, dtype) for _ in range(4)]
    if run_or_expect_unsupported(
        target, [dtype], lambda: min_max_kernel[(1,)](a, b, *outs, BLOCK=N, target=target)
    ):
        with np.errstate(invalid="ignore"):  # bfloat16's ufuncs warn on NaN
            expected = [np.maximum(a, b), np.minimum(a, b)] * 2
        for got, want in zip(outs, expected):
            assert_close(got, want)


@cube.kernel
def to_bool_kernel(x, out, BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    cube.store(out + i, cube.load(x + i).to(cube.bool))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cast_of_nan_to_bool_is_true(target, dtype):
    x, _ = nan_pairs(dtype)
    expected = x.astype(bool)
    out = ~expected
    if run_or_expect_unsupported(
        target, [dtype], lambda: to_bool_kernel[(1,)](x, out, BLOCK=N, target=target)
    ):
        np.testing.assert_array_equal(out, expected)


@cube.kernel
def nan_reduce_kernel(x, o_max, o_min, o_argmax, o_argmin, o_all,
                      R: cube.Comptime[int], C: cube.Comptime[int], AXIS: cube.Comptime[int]):
    v = cube.load(x + cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :])
    o = cube.arange(0, C if AXIS == 0 else R)
    cube.store(o_max + o, cube.max(v, axis=AXIS))
    cube.store(o_min + o, cube.min(v, axis=AXIS))
    cube.store(o_argmax + o, cube.argmax(v, axis=AXIS))
    cube.store(o_argmin + o, cube.argmin(v, axis=AXIS))
    cube.store(o_all + 0, cube.max(v, axis=None))
    cube.store(o_all + 1, cube.min(v, axis=None))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(8, 16), (4, 256), (64, 8)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_reductions_with_nan(target, rng, dtype, shape, axis):
    """max/min propagate NaN; argmax/argmin give the index of the first NaN."""
    x = rng.uniform(-4, 4, shape)
    x[rng.random(shape) < 1.5 / shape[axis]] = np.nan
    lines = np.moveaxis(x, axis, -1)  # a view: one line per output
    lines[0, :] = np.nan
    lines[-1, lines.shape[-1] // 2:] = np.nan  # NaNs from the middle on
    lines[1, :] = np.where(np.isnan(lines[1, :]), 0.0, lines[1, :])  # and one line without
    x = x.astype(np_dtype(dtype))
    n = shape[1 - axis]
    outs = [poison(n, dtype), poison(n, dtype), poison(n, "int32"), poison(n, "int32"),
            poison(2, dtype)]
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: nan_reduce_kernel[(1,)](x, *outs, R=shape[0], C=shape[1], AXIS=axis,
                                        target=target),
    ):
        with np.errstate(invalid="ignore"):
            assert_close(outs[0], np.max(x, axis=axis))
            assert_close(outs[1], np.min(x, axis=axis))
        assert_close(outs[2], np.argmax(x, axis=axis).astype(np.int32))
        assert_close(outs[3], np.argmin(x, axis=axis).astype(np.int32))
        assert np.isnan(outs[4]).all()
