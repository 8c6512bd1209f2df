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


def group_norm_reference(x: np.ndarray, groups: int, weight=None, bias=None,
                         eps: float = 1e-5) -> np.ndarray:
    """torch's group_norm in float64: biased variance over each group's channels and
    positions."""
    n, c = x.shape[:2]
    grouped = x.astype(np.float64).reshape(n, groups, -1)
    mean = grouped.mean(axis=2, keepdims=True)
    var = ((grouped - mean) ** 2).mean(axis=2, keepdims=True)
    out = ((grouped - mean) / np.sqrt(var + eps)).reshape(x.shape)
    per_channel = (c,) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * weight.astype(np.float64).reshape(per_channel)
    if bias is not None:
        out = out + bias.astype(np.float64).reshape(per_channel)
    return out


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("shape, groups", [((2, 6, 5, 3), 3), ((3, 4, 7), 4), ((2, 8), 1)])
def test_group_norm(backend, rng, dtype, shape, groups):
    """Groups of several channels, one channel a group (instance norm) and the whole item
    (1 group), against float64, with a per-channel scale and shift."""
    if _skip_unsupported(backend, rng, dtype):
        return
    x = random_tensor(rng, shape, dtype, -1, 5)  # a mean away from 0
    w = random_tensor(rng, shape[1], dtype, 0.5, 1.5)
    b_ = random_tensor(rng, shape[1], dtype, -1, 1)
    got = burn.group_norm(on(backend, x), groups, on(backend, w), on(backend, b_))
    want = group_norm_reference(x, groups, w, b_)
    # bfloat16: the result is rounded once to 8 bits (computed in float32)
    tolerance = 2.0 ** -8 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=tolerance,
                               atol=tolerance * np.abs(want).max())
    assert got.dtype.name == dtype


def test_group_and_instance_norm_layers(backend, rng):
    x = random_tensor(rng, (2, 4, 3, 3), "float32", -2, 2)
    layer = burn.nn.GroupNorm(2, 4, backend=backend)
    layer.weight = on(backend, np.array([1.0, 2.0, 0.5, -1.0], np.float32))
    np.testing.assert_allclose(layer(on(backend, x)).numpy(),
                               group_norm_reference(x, 2, layer.weight.numpy(),
                                                    np.zeros(4)), rtol=1e-5, atol=1e-5)
    instance = burn.nn.InstanceNorm(4, backend=backend)
    assert instance.parameters() == []  # affine=False by default, as torch's
    np.testing.assert_allclose(instance(on(backend, x)).numpy(), group_norm_reference(x, 4),
                               rtol=1e-5, atol=1e-5)
    assert [n for n, _ in burn.nn.InstanceNorm(4, affine=True).named_parameters()] == [
        "weight", "bias"]


def test_group_norm_errors(backend, rng):
    x = on(backend, random_tensor(rng, (2, 6, 4), "float32"))
    with pytest.raises(burn.BurnError, match=r"num_groups must be an int >= 1 dividing the 6 "
                                             r"channels"):
        burn.group_norm(x, 4)
    with pytest.raises(burn.BurnError, match=r"weight has shape \(4,\); expected \(6,\)"):
        burn.group_norm(x, 3, on(backend, np.ones(4, np.float32)))
    with pytest.raises(burn.BurnError, match=r"must be \(N, C, \.\.\.\), got shape \(6,\)"):
        burn.group_norm(on(backend, np.ones(6, np.float32)), 3)
    with pytest.raises(burn.BurnError, match="GroupNorm: num_groups 4 must divide"):
        burn.nn.GroupNorm(4, 6)


def batch_norm_reference(x: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                         eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training-mode batch norm in float64: the output, the batch mean and the unbiased
    variance per channel."""
    axes = (0, *range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    x = x.astype(np.float64)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    count = x.size // x.shape[1]
    return (out * weight.reshape(shape) + bias.reshape(shape), mean,
            var * count / (count - 1))


@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (8, 3)])
def test_batch_norm(backend, rng, shape):
    """Two training steps move the running statistics by momentum toward each batch's mean
    and unbiased variance, in place; eval() then normalizes by them."""
    norm = burn.nn.BatchNorm(3, momentum=0.2, backend=backend)
    norm.weight = on(backend, np.array([1.0, 2.0, 0.5], np.float32))
    norm.bias = on(backend, np.array([0.0, -1.0, 1.0], np.float32))
    running_mean, running_var = norm.running_mean, norm.running_var
    expected_mean, expected_var = np.zeros(3), np.ones(3)
    for step in range(2):
        x = random_tensor(rng, shape, "float32", -2, 2) * (step + 1) + 3.0
        out, mean, var = batch_norm_reference(x, norm.weight.numpy(), norm.bias.numpy())
        np.testing.assert_allclose(norm(on(backend, x)).numpy(), out, rtol=1e-5, atol=1e-5)
        expected_mean = 0.8 * expected_mean + 0.2 * mean
        expected_var = 0.8 * expected_var + 0.2 * var
    assert norm.running_mean is running_mean  # the same tensor, written in place
    np.testing.assert_allclose(running_mean.numpy(), expected_mean, rtol=1e-5)
    np.testing.assert_allclose(running_var.numpy(), expected_var, rtol=1e-5)
    assert norm.num_batches_tracked.item() == 2
    x = random_tensor(rng, shape, "float32", -2, 2)
    scale = norm.weight.numpy() / np.sqrt(expected_var + 1e-5)
    per_channel = (1, 3) + (1,) * (len(shape) - 2)
    want = (x - expected_mean.reshape(per_channel)) * scale.reshape(per_channel) + \
        norm.bias.numpy().reshape(per_channel)
    inference = norm.eval()
    np.testing.assert_allclose(inference(on(backend, x)).numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(running_mean.numpy(), expected_mean, rtol=1e-5)  # unchanged
    assert norm.num_batches_tracked.item() == 2


def test_batch_norm_cumulative_average_and_torch_state(backend, rng):
    """momentum=None: the running statistics are the plain mean of every batch's, the rate
    1/count read on the device; the state dict holds torch's names, and torch's int64 count
    loads."""
    norm = burn.nn.BatchNorm(3, momentum=None, backend=backend)
    means, variances = [], []
    for step in range(3):
        x = random_tensor(rng, (6, 3, 4), "float32", -2, 2) * (step + 1) + step
        _, mean, var = batch_norm_reference(x, np.ones(3), np.zeros(3))
        means.append(mean)
        variances.append(var)
        norm(on(backend, x))
    np.testing.assert_allclose(norm.running_mean.numpy(), np.mean(means, axis=0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(norm.running_var.numpy(), np.mean(variances, axis=0),
                               rtol=1e-5)
    state = norm.state_dict()
    assert list(state) == ["weight", "bias", "running_mean", "running_var",
                           "num_batches_tracked"]
    assert state["num_batches_tracked"].shape == () and state["num_batches_tracked"] == 3
    state["num_batches_tracked"] = np.array(41, np.int64)  # as torch saves it
    loaded = norm.load_state_dict(state)
    assert loaded.num_batches_tracked.dtype.name == "int32"
    assert loaded.num_batches_tracked.item() == 41
    loaded(on(backend, np.ones((2, 3, 4), np.float32)))
    assert loaded.num_batches_tracked.item() == 42


def test_batch_norm_without_running_statistics_and_16_bit(backend, rng):
    norm = burn.nn.BatchNorm(2, affine=False, track_running_stats=False, backend=backend)
    assert norm.parameters() == [] and norm.buffer_paths() == set()
    x = random_tensor(rng, (5, 2, 3), "float32")
    want, _, _ = batch_norm_reference(x, np.ones(2), np.zeros(2))
    np.testing.assert_allclose(norm.eval()(on(backend, x)).numpy(), want, rtol=1e-5,
                               atol=1e-5)  # batch statistics in inference mode too
    if not supports(backend, ["float16"]):
        return
    half = burn.nn.BatchNorm(2, backend=backend)
    got = half(on(backend, x.astype(np.float16)))
    assert got.dtype.name == "float16" and half.running_mean.dtype.name == "float32"
    want, _, _ = batch_norm_reference(x.astype(np.float16), np.ones(2), np.zeros(2))
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=2.0 ** -10,
                               atol=2.0 ** -10 * np.abs(want).max())


def test_batch_norm_errors(backend):
    norm = burn.nn.BatchNorm(3, backend=backend)
    with pytest.raises(burn.BurnError, match=r"BatchNorm\(3\): expects inputs \(N, 3, \.\.\.\), "
                                             r"got shape \(2, 4\)"):
        norm(on(backend, np.zeros((2, 4), np.float32)))
    with pytest.raises(burn.BurnError, match="training needs more than one value per channel"):
        norm(on(backend, np.zeros((1, 3), np.float32)))
    norm.eval()(on(backend, np.zeros((1, 3), np.float32)))  # inference takes one
    with pytest.raises(burn.BurnError, match=r"momentum must be in \[0, 1\] or None \(a "
                                             r"cumulative average\), got 1.5"):
        burn.nn.BatchNorm(3, momentum=1.5)
