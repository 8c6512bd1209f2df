"""softmax, log_softmax, layer_norm and rms_norm on every backend against the NumPy
reference: float dtypes, the axis, non-contiguous views, rows longer than one tile, -inf
entries, 0-size and 1-element tensors, bad input. (Their GPU bandwidth is measured by
bench/burn_gpu_bench.py, not asserted in a test.)"""

from __future__ import annotations

import numpy as np
import pytest
from optest import check, expect_unsupported, on, random_tensor, strided, supports
from util import dyadic_array

import burn

SHAPE = (6, 37)
FLOATS = ["float16", "bfloat16", "float32", "float64"]
# Longer than one tile on every target: the two- and three-pass kernels.
WIDE = (2, 20000)


def _skip_unsupported(backend: burn.Backend, rng: np.random.Generator, dtype: str) -> bool:
    if supports(backend, [dtype]):
        return False
    expect_unsupported(backend, dtype, lambda: on(backend, random_tensor(rng, 4, dtype)))
    return True


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_dtypes(backend, ref, rng, dtype):
    if _skip_unsupported(backend, rng, dtype):
        return
    x = random_tensor(rng, SHAPE, dtype, -5, 5)
    check(lambda b: burn.softmax(on(b, x), -1), backend, ref)
    if dtype == "float32":
        check(lambda b: burn.log_softmax(on(b, x), -1), backend, ref)


def test_softmax_axis0_and_views(backend, ref, rng):
    x = random_tensor(rng, SHAPE, "float32", -5, 5)
    check(lambda b: on(b, x).softmax(0), backend, ref)
    check(lambda b: strided(b, x, "transposed").softmax(1), backend, ref)
    check(lambda b: strided(b, x, "sliced").log_softmax(-1), backend, ref)


def test_softmax_of_ints_is_float32(backend, ref, rng):
    x = random_tensor(rng, SHAPE, "int32", -5, 5)
    check(lambda b: on(b, x).softmax(1), backend, ref)


def test_softmax_minus_inf(backend, ref, rng):
    x = random_tensor(rng, SHAPE, "float32", -5, 5)
    x[0, 5:] = -np.inf  # masked positions, as in attention
    x[1] = -np.inf  # a fully masked row: NaN, as torch
    check(lambda b: burn.softmax(on(b, x), -1), backend, ref)
    check(lambda b: burn.log_softmax(on(b, x), -1), backend, ref)


def test_softmax_wide_rows(backend, ref, rng):
    x = random_tensor(rng, WIDE, "float32", -5, 5)
    x[1, 15000] = 30.0  # the max arrives late: the running sum is rescaled
    check(lambda b: burn.softmax(on(b, x), -1), backend, ref)
    check(lambda b: burn.log_softmax(on(b, x), -1), backend, ref)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_layer_norm(backend, ref, rng, dtype):
    if _skip_unsupported(backend, rng, dtype):
        return
    x = random_tensor(rng, SHAPE, dtype, -3, 3)
    w = random_tensor(rng, SHAPE[-1], dtype, 0.5, 1.5)
    b_ = random_tensor(rng, SHAPE[-1], dtype, -1, 1)
    check(lambda b: burn.layer_norm(on(b, x), (SHAPE[-1],), on(b, w), on(b, b_), eps=1e-3),
          backend, ref)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_rms_norm(backend, ref, rng, dtype):
    if _skip_unsupported(backend, rng, dtype):
        return
    x = random_tensor(rng, SHAPE, dtype, -3, 3)
    if dtype == "float16":
        w = random_tensor(rng, SHAPE[-1], dtype, 0.5, 1.5)
        check(lambda b: burn.rms_norm(on(b, x), SHAPE[-1], on(b, w)), backend, ref)
    else:
        check(lambda b: burn.rms_norm(on(b, x), SHAPE[-1], eps=1e-5), backend, ref)


def test_norm_over_two_axes_and_views(backend, ref, rng):
    x = random_tensor(rng, (3, 4, 8), "float32", -3, 3)
    w = random_tensor(rng, (4, 8), "float32", 0.5, 1.5)
    check(lambda b: burn.layer_norm(on(b, x), (4, 8), strided(b, w, "flipped")), backend, ref)
    check(lambda b: burn.rms_norm(strided(b, x, "sliced"), (4, 8)), backend, ref)


def test_norm_wide_rows(backend, ref, rng):
    # A mean far from 0 (a one-pass E[x^2] - E[x]^2 would lose the variance); multiples of
    # 1/8 keep the sums exact, so the mean is the same on every backend.
    x = dyadic_array(rng, WIDE, "float32") + 16.0
    w = random_tensor(rng, WIDE[-1], "float32", 0.5, 1.5)
    # atol 1e-5: outputs near 0 are `d * rstd * w + b` cancelling terms of magnitude 1 to 3,
    # and a GPU's rsqrt and division are within 2 ulp, not correctly rounded (a few 1e-6)
    check(lambda b: burn.layer_norm(on(b, x), WIDE[-1], on(b, w), on(b, w)), backend, ref,
          atol=1e-5)
    check(lambda b: burn.rms_norm(on(b, x), WIDE[-1], on(b, w)), backend, ref, atol=1e-5)


def test_empty_and_single(backend, ref, rng):
    empty = np.zeros((0, 37), np.float32)
    check(lambda b: burn.softmax(on(b, empty), -1), backend, ref)
    check(lambda b: burn.layer_norm(on(b, empty), 37), backend, ref)
    one = random_tensor(rng, (), "float32")
    check(lambda b: burn.softmax(on(b, one), 0), backend, ref)  # 1.0


def test_bad_input(backend, rng):
    x = on(backend, random_tensor(rng, (3, 4), "float32"))
    with pytest.raises(burn.BurnError, match=r"layer_norm: normalized_shape \(5,\) must be the "
                                             r"last axes of the input, whose shape is \(3, 4\)"):
        burn.layer_norm(x, 5)
    w = on(backend, random_tensor(rng, 3, "float32"))
    with pytest.raises(burn.BurnError, match=r"rms_norm: weight has shape \(3,\); expected "
                                             r"normalized_shape \(4,\) \(input shape \(3, 4\)\)"):
        burn.rms_norm(x, 4, w)
    with pytest.raises(burn.BurnError, match="softmax: axis 2 is out of range"):
        burn.softmax(x, 2)
    other = burn.from_numpy(np.ones(4, np.float32), backend="numpy")
    with pytest.raises(burn.BurnError, match="layer_norm: tensors are on different devices"):
        burn.layer_norm(x, 4, other)
