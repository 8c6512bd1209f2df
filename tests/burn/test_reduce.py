"""Reductions and scans on every backend against the NumPy reference: sum over every dtype,
each op, axes and keepdim, non-contiguous views, long rows split over cubes, 0-size and
1-element tensors, bad input.

Float data are multiples of 1/8 (``dyadic_array``) wherever the result is a sum or product,
so every summation order gives the same exact value; shapes are few (rows of 37 elements
mostly) to keep the number of kernel specializations, and so CI's compile time, small."""

from __future__ import annotations

import numpy as np
import pytest
from optest import check, expect_unsupported, on, random_tensor, strided, supports
from util import dyadic_array

import burn

SHAPE = (6, 37)
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "bfloat16",
          "float32", "float64"]
# Long enough that a full reduction is split over cubes on every target (16 tiles or more).
LONG = 70001


def _data(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    if dtype.startswith(("float", "bfloat")):
        return dyadic_array(rng, shape, dtype)
    return random_tensor(rng, shape, dtype)


def _powers_of_two(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Products of these are exact (and stay far from overflow for 37 factors)."""
    return rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0], shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_every_dtype(backend, ref, rng, dtype):
    x = _data(rng, SHAPE, dtype)
    if not supports(backend, [dtype]):
        expect_unsupported(backend, dtype, lambda: on(backend, x))
        return
    check(lambda b: on(b, x).sum(1), backend, ref)


@pytest.mark.parametrize("op", ["prod", "mean", "max", "min", "any", "all"])
def test_reduce_ops_float32(backend, ref, rng, op):
    x = _powers_of_two(rng, SHAPE, "float32") if op == "prod" else _data(rng, SHAPE, "float32")
    x[0] = 0.0  # a row where any() is False
    check(lambda b: getattr(on(b, x), op)(1), backend, ref)


@pytest.mark.parametrize("op", ["prod", "max"])
def test_reduce_ops_int32(backend, ref, rng, op):
    x = random_tensor(rng, SHAPE, "int32", -2, 3)  # small factors: products fit int64
    check(lambda b: getattr(on(b, x), op)(1), backend, ref)


def test_float32_sums_round_as_a_tree(backend, rng):
    """4096 values near 1e6: a running float32 sum drifts by ~30 in the mean (the Cpu backend
    did so unoptimized, CUBEPY_CPU_OPT=0, as CI builds it, and var and layer_norm with it);
    partial sums added as a tree, as NumPy's and a GPU's sums, stay within a few units in
    the last place."""
    x = (1e6 + rng.standard_normal((2, 4096))).astype(np.float32)
    t, ref = on(backend, x), on(burn.NumPy(), x)
    np.testing.assert_allclose(t.mean(1).numpy(), x.astype(np.float64).mean(1), rtol=1e-6)
    # var and layer_norm subtract a float32 mean of ulp 1/16 from values near 1e6: their own
    # error (up to 2e-3 and 0.05 against float64) is float32's, so they are checked against
    # the reference backend, which computes as these kernels do (the bug gave var 900)
    np.testing.assert_allclose(t.var(1).numpy(), ref.var(1).numpy(), rtol=1e-4)
    np.testing.assert_allclose(burn.layer_norm(t, 4096).numpy(),
                               burn.layer_norm(ref, 4096).numpy(), atol=1e-4)


def test_mean_of_ints_is_float32(backend, ref, rng):
    x = random_tensor(rng, SHAPE, "int32")
    check(lambda b: on(b, x).mean(-1), backend, ref)
    assert on(backend, x).mean().dtype == burn.float32


@pytest.mark.parametrize("axes", [None, 0, (0, 2), (-1, 1)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_axes(backend, ref, rng, axes, keepdim):
    x = _data(rng, (4, 6, 10), "float32")
    check(lambda b: burn.sum(on(b, x), axes, keepdim), backend, ref)


def test_dim_keyword_like_torch(backend, ref, rng):
    x = _data(rng, (4, 6, 10), "float32")
    check(lambda b: on(b, x).sum(dim=(1, 2), keepdim=True), backend, ref)


@pytest.mark.parametrize("kind", ["transposed", "sliced", "flipped"])
def test_sum_views(backend, ref, rng, kind):
    x = _data(rng, SHAPE, "float32")
    check(lambda b: strided(b, x, kind).sum(-1), backend, ref)


def test_sum_broadcast_view(backend, ref, rng):
    x = _data(rng, (1, 37), "float32")
    check(lambda b: on(b, x).expand(6, 37).sum(1), backend, ref)  # rows of stride 0


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_float32(backend, ref, rng, op):
    x = random_tensor(rng, SHAPE, "float32")
    check(lambda b: getattr(on(b, x), op)(1), backend, ref)
    check(lambda b: getattr(on(b, x), op)(1, keepdim=True), backend, ref)


def test_arg_ties_take_the_first(backend, ref, rng):
    x = random_tensor(rng, SHAPE, "int32", 0, 3)  # many ties, as NumPy resolves them
    check(lambda b: on(b, x).argmin(1), backend, ref)
    check(lambda b: on(b, x).argmax(), backend, ref)  # an index into the flattened tensor
    assert on(backend, x).argmax().dtype == burn.int64


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_std(backend, ref, rng, op, correction):
    x = random_tensor(rng, SHAPE, "float32")
    check(lambda b: getattr(on(b, x), op)(1, correction=correction), backend, ref)


def test_logsumexp(backend, ref, rng):
    x = random_tensor(rng, SHAPE, "float32", -30, 30)
    x[1] = -np.inf  # a row of -inf gives -inf
    x[2, 3] = np.inf  # +inf gives +inf
    x[3] = 80.0  # exp would overflow without the max taken out
    check(lambda b: on(b, x).logsumexp(1), backend, ref)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_cumsum(backend, ref, rng, dtype):
    x = _data(rng, SHAPE, dtype)
    check(lambda b: on(b, x).cumsum(1), backend, ref)
    check(lambda b: on(b, x).cumsum(0), backend, ref)  # along the strided axis


def test_cumprod(backend, ref, rng):
    x = _powers_of_two(rng, SHAPE, "float32")
    check(lambda b: on(b, x).cumprod(1), backend, ref)
    signs = rng.choice([-1.0, 1.0], (2, 300)).astype(np.float32)  # rows split over cubes
    check(lambda b: on(b, signs).cumprod(1), backend, ref)


def test_cumsum_view(backend, ref, rng):
    x = _data(rng, SHAPE, "float32")
    check(lambda b: strided(b, x, "transposed").cumsum(1), backend, ref)


def test_long_rows_split_over_cubes(backend, ref, rng):
    x = _data(rng, LONG, "float32")
    x[12345] = 5.0  # one largest and one smallest value, far from the first tile
    x[54321] = -5.0
    check(lambda b: on(b, x).sum(), backend, ref)
    check(lambda b: on(b, x).argmin(), backend, ref)
    check(lambda b: on(b, x).var(), backend, ref)
    ints = random_tensor(rng, LONG, "int32", -3, 4)
    check(lambda b: on(b, ints).cumsum(0), backend, ref)


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_nan_like_numpy(backend, ref, rng, op):
    """max/min give NaN and argmax/argmin the first NaN's index, in one tile or across the
    cubes a long row is split over."""
    x = random_tensor(rng, SHAPE, "float32")
    x[0, 5] = x[0, 30] = x[2, 36] = x[3] = np.nan  # rows 1, 4 and 5 have none
    check(lambda b: getattr(on(b, x), op)(1), backend, ref)
    long = random_tensor(rng, (2, LONG), "float32")
    long[0, 54321] = long[0, 60000] = np.nan  # far from the first tile, in row 0 only
    check(lambda b: getattr(on(b, long), op)(1), backend, ref)


def test_empty_and_single(backend, ref, rng):
    empty = np.zeros((6, 0), np.float32)
    check(lambda b: on(b, empty).sum(1), backend, ref)  # 0
    check(lambda b: on(b, empty).prod(1), backend, ref)  # 1
    check(lambda b: on(b, empty).mean(1), backend, ref)  # NaN
    check(lambda b: on(b, empty).all(1), backend, ref)  # True
    check(lambda b: on(b, empty).sum(0), backend, ref)  # no rows at all
    check(lambda b: on(b, empty).cumsum(1), backend, ref)
    one = _data(rng, (), "float32")
    check(lambda b: on(b, one).sum(), backend, ref)
    check(lambda b: on(b, one).sum(0, keepdim=True), backend, ref)


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_empty_axis_is_an_error(backend, op):
    x = on(backend, np.zeros((3, 0), np.float32))
    with pytest.raises(burn.BurnError, match=rf"{op}: cannot reduce an empty axis \(shape "
                                             r"\(3, 0\), axes \(1,\)\)"):
        getattr(x, op)(1)


def test_bad_axes(backend):
    x = on(backend, np.zeros((3, 4), np.float32))
    with pytest.raises(burn.BurnError, match="sum: axis 2 is out of range for a tensor of 2"):
        x.sum(2)
    with pytest.raises(burn.BurnError, match=r"mean: repeated axis in \(1, -1\)"):
        x.mean((1, -1))
    with pytest.raises(burn.BurnError, match="argmax: needs one axis"):
        x.argmax((0, 1))
    with pytest.raises(burn.BurnError, match="cumsum: needs one axis"):
        x.cumsum()

