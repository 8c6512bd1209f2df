"""3-D convolution and pooling (``burn.conv3d``, ``conv_transpose3d``, ``max_pool3d``,
``avg_pool3d``, ``adaptive_avg_pool3d``, their layers) on every backend, against float64
NumPy written from torch's definitions: strides, padding (``"same"`` with an even kernel
too), dilation, groups, bias, output_padding, unbatched inputs, adaptive windows, pooling's
ceil_mode, count_include_pad and divisor_override, a 16-bit average, gradients and bad
input. Inputs are multiples of 1/8, so sums are exact in float32."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gradcheck import check_gradients
from optest import on, supports
from test_conv import _data, torch_pool
from util import assert_close

import burn


def conv3d_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                     stride: tuple[int, ...], pads: list[tuple[int, int]],
                     dilation: tuple[int, ...], groups: int) -> np.ndarray:
    """Cross-correlation of (N, C, D, H, W) with (O, C / groups, KD, KH, KW) in float64,
    ``pads`` (before, after) per spatial axis."""
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), *pads])
    kernel = w.shape[2:]
    sizes = [(n - d * (k - 1) - 1) // s + 1
             for n, k, s, d in zip(padded.shape[2:], kernel, stride, dilation)]
    out_channels, per_group = w.shape[0], w.shape[1]
    out_group = out_channels // groups
    out = np.zeros((x.shape[0], out_channels, *sizes))
    for g, taps in itertools.product(range(groups), itertools.product(*map(range, kernel))):
        window = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                       for t, d, o, s in zip(taps, dilation, sizes, stride))
        part = padded[(slice(None), slice(g * per_group, (g + 1) * per_group), *window)]
        weight = w[(slice(g * out_group, (g + 1) * out_group), slice(None), *taps)]
        out[:, g * out_group:(g + 1) * out_group] += np.einsum(
            "ncdhw,oc->nodhw", part, weight.astype(np.float64))
    return out if bias is None else out + bias.astype(np.float64).reshape(1, -1, 1, 1, 1)


def _pads(padding, kernel, dilation) -> list[tuple[int, int]]:
    if padding == "same":  # torch's: the odd one out of an even span goes after
        return [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                for k, d in zip(kernel, dilation)]
    padding = (padding,) * 3 if isinstance(padding, int) else padding
    return [(p, p) for p in padding]


def _triple(value) -> tuple[int, ...]:
    return (value,) * 3 if isinstance(value, int) else tuple(value)


# (input shape, weight shape, keyword arguments)
CONV3D_CASES = [
    ((2, 3, 5, 6, 5), (4, 3, 3, 3, 3), {}),
    ((1, 4, 7, 6, 6), (6, 2, 3, 2, 3), {"stride": (2, 1, 2), "padding": (1, 0, 1),
                                        "dilation": (1, 2, 1), "groups": 2}),
    ((1, 3, 6, 5, 5), (3, 1, 2, 3, 3), {"groups": 3, "padding": "same",
                                        "dilation": (2, 1, 1)}),  # depthwise, even depth
    ((2, 4, 5, 4, 4), (2, 4, 1, 1, 1), {"padding": "valid", "stride": 2}),  # pointwise
]


@pytest.mark.parametrize("case", CONV3D_CASES, ids=lambda c: f"{c[0]}*{c[1]}{c[2]}")
def test_conv3d(backend, rng, case):
    x_shape, w_shape, kwargs = case
    x, w, bias = _data(rng, x_shape), _data(rng, w_shape), _data(rng, w_shape[0])
    stride, dilation = _triple(kwargs.get("stride", 1)), _triple(kwargs.get("dilation", 1))
    pads = _pads(kwargs.get("padding", 0) if kwargs.get("padding") != "valid" else 0,
                 w_shape[2:], dilation)
    want = conv3d_reference(x, w, bias, stride, pads, dilation, kwargs.get("groups", 1))
    got = burn.conv3d(on(backend, x), on(backend, w), on(backend, bias), **kwargs)
    assert got.dtype == burn.float32
    assert_close(got.numpy(), want)
    unbatched = burn.conv3d(on(backend, x[0]), on(backend, w), None, **kwargs)
    assert_close(unbatched.numpy(), want[0] - bias.reshape(-1, 1, 1, 1))


def conv_transpose3d_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                               stride: tuple[int, ...], padding: tuple[int, ...],
                               extra: tuple[int, ...], dilation: tuple[int, ...],
                               groups: int) -> np.ndarray:
    """The adjoint of ``conv3d`` in float64: each input element scatters itself times the
    kernel into the output, which is then cropped by ``padding`` on each side."""
    kernel, sizes = w.shape[2:], x.shape[2:]
    full = [(i - 1) * s + d * (k - 1) + 1 + e
            for i, k, s, d, e in zip(sizes, kernel, stride, dilation, extra)]
    in_group, out_group = x.shape[1] // groups, w.shape[1]
    out = np.zeros((x.shape[0], groups * out_group, *full))
    for g, taps in itertools.product(range(groups), itertools.product(*map(range, kernel))):
        region = tuple(slice(t * d, t * d + (i - 1) * s + 1, s)
                       for t, d, i, s in zip(taps, dilation, sizes, stride))
        weight = w[(slice(g * in_group, (g + 1) * in_group), slice(None), *taps)]
        out[(slice(None), slice(g * out_group, (g + 1) * out_group), *region)] += np.einsum(
            "ncdhw,co->nodhw", x[:, g * in_group:(g + 1) * in_group].astype(np.float64),
            weight.astype(np.float64))
    cropped = out[(slice(None), slice(None), *(slice(p, n - p) for p, n in zip(padding, full)))]
    return cropped if bias is None else cropped + bias.reshape(1, -1, 1, 1, 1)


# (input shape, weight shape, stride, padding, output_padding, dilation, groups)
CONV_TRANSPOSE3D_CASES = [
    ((2, 4, 3, 4, 3), (4, 3, 3, 3, 2), (2, 2, 2), (1, 1, 1), (1, 1, 0), (1, 1, 1), 1),
    ((1, 4, 3, 3, 4), (4, 2, 2, 3, 3), (1, 2, 1), (0, 1, 0), (0, 0, 0), (2, 1, 1), 2),
    ((1, 2, 4, 4, 4), (2, 3, 1, 1, 1), (2, 1, 1), (1, 0, 0), (0, 0, 0), (1, 1, 1), 1),
]


@pytest.mark.parametrize("case", CONV_TRANSPOSE3D_CASES, ids=str)
def test_conv_transpose3d(backend, rng, case):
    """Strided with output_padding, grouped and dilated, and padding past the kernel's reach
    (the 1 x 1 x 1 kernel: the spread input itself is cropped)."""
    x_shape, w_shape, stride, padding, extra, dilation, groups = case
    x, w, bias = _data(rng, x_shape), _data(rng, w_shape), _data(rng, w_shape[1] * groups)
    want = conv_transpose3d_reference(x, w, bias, stride, padding, extra, dilation, groups)
    got = burn.conv_transpose3d(on(backend, x), on(backend, w), on(backend, bias), stride,
                                padding, extra, groups, dilation)
    assert_close(got.numpy(), want)
    layer = burn.nn.ConvTranspose3d(x_shape[1], w_shape[1] * groups, w_shape[2:], stride,
                                    padding, extra, groups, dilation=dilation, backend=backend)
    layer.weight, layer.bias = on(backend, w), on(backend, bias)
    assert_close(layer(on(backend, x[0])).numpy(), want[0])  # unbatched


# (function, kernel, stride, padding, dilation, keywords)
POOL3D_CASES = [
    ("max", (2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), {}),
    ("max", (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), {"ceil_mode": True}),
    ("max", (2, 3, 2), (1, 2, 2), (0, 1, 0), (2, 1, 1), {}),
    ("avg", (2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), {}),
    ("avg", (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), {"ceil_mode": True,
                                                         "count_include_pad": False}),
    ("avg", (3, 2, 3), (2, 1, 2), (1, 1, 0), (1, 1, 1), {"ceil_mode": True}),
    ("avg", (2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), {"ceil_mode": True,
                                                         "divisor_override": 3}),
]


@pytest.mark.parametrize("case", POOL3D_CASES, ids=lambda c: f"{c[0]}{c[1]}s{c[2]}p{c[3]}"
                         f"d{c[4]}-{'-'.join(c[5])}")
def test_pool3d(backend, rng, case):
    kind, kernel, stride, padding, dilation, options = case
    x = _data(rng, (2, 3, 5, 6, 7))
    want = torch_pool(x, kind, kernel, stride, padding, dilation, **options)
    if kind == "max":
        got = burn.max_pool3d(on(backend, x), kernel, stride, padding, dilation, **options)
    else:
        got = burn.avg_pool3d(on(backend, x), kernel, stride, padding, **options)
    assert_close(got.numpy(), want)


def adaptive_reference(x: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """torch's adaptive average pooling over the last ``len(sizes)`` axes, in float64:
    window ``i`` of ``O`` along an axis of ``L`` spans ``floor(i * L / O)`` to
    ``ceil((i + 1) * L / O)``."""
    dims = len(sizes)
    out = np.zeros(x.shape[:-dims] + tuple(sizes))
    for index in np.ndindex(*sizes):
        window = tuple(slice(i * n // o, -(-(i + 1) * n // o))
                       for i, n, o in zip(index, x.shape[-dims:], sizes))
        out[(..., *index)] = x[(..., *window)].astype(np.float64).mean(
            axis=tuple(range(-dims, 0)))
    return out


@pytest.mark.parametrize("sizes", [(2, 3, 4), (1, 1, 1), (5, None, 2)], ids=str)
def test_adaptive_avg_pool3d(backend, rng, sizes):
    x = _data(rng, (2, 3, 5, 7, 6))
    want_sizes = tuple(x.shape[2 + i] if s is None else s for i, s in enumerate(sizes))
    got = burn.adaptive_avg_pool3d(on(backend, x), sizes)
    assert_close(got.numpy(), adaptive_reference(x, want_sizes))
    layer = burn.nn.AdaptiveAvgPool3d(sizes)
    assert_close(layer(on(backend, x[0])).numpy(), adaptive_reference(x[0], want_sizes))


def test_avg_pool3d_in_16_bit(backend, rng):
    """Both passes in float32, rounded once at the end."""
    if not supports(backend, ["float16"]):
        with pytest.raises(burn.BurnError, match=r"dtype float16 is not supported on the"):
            on(backend, _data(rng, 3, "float16"))
        return
    x = _data(rng, (3, 5, 6, 7), "float16")  # unbatched
    got = burn.avg_pool3d(on(backend, x), 3, 2, 1, ceil_mode=True)
    assert got.dtype == burn.float16
    assert_close(got.numpy(), torch_pool(x, "avg", (3,) * 3, (2,) * 3, (1,) * 3, (1,) * 3,
                                         ceil_mode=True))


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


def test_gradients(backend, rng):
    check_gradients(lambda x, w, b: burn.conv3d(x, w, b, stride=(1, 2, 1), padding=1),
                    [normal(1, 2, 4, 4, 3)(rng), normal(3, 2, 2, 3, 2)(rng), normal(3)(rng)],
                    backend, "float32", rng)
    check_gradients(lambda x, w: burn.conv_transpose3d(x, w, stride=2, padding=1,
                                                       output_padding=1),
                    [normal(1, 2, 2, 3, 2)(rng), normal(2, 3, 3, 2, 3)(rng)], backend,
                    "float32", rng)
    distinct = rng.permutation(2 * 5 * 4 * 5).reshape(1, 2, 5, 4, 5) / 8.0  # no ties
    check_gradients(lambda x: burn.max_pool3d(x, 3, 2, 1, ceil_mode=True), [distinct],
                    backend, "float32", rng)
    check_gradients(lambda x: burn.avg_pool3d(x, 2, 2, 1, count_include_pad=False),
                    [normal(1, 2, 3, 4, 5)(rng)], backend, "float32", rng)
    check_gradients(lambda x: burn.adaptive_avg_pool3d(x, (2, 1, 3)),
                    [normal(1, 2, 3, 4, 5)(rng)], backend, "float32", rng)


def test_layers(backend, rng):
    x = _data(rng, (2, 2, 4, 5, 5))
    conv = burn.nn.Conv3d(2, 3, 3, padding=1, padding_mode="circular", backend=backend,
                          generator=burn.Generator(1))
    wrapped = np.pad(x, [(0, 0), (0, 0)] + [(1, 1)] * 3, mode="wrap")
    want = conv3d_reference(wrapped, conv.weight.numpy(), conv.bias.numpy(), (1, 1, 1),
                            [(0, 0)] * 3, (1, 1, 1), 1)
    assert_close(conv(on(backend, x)).numpy(), want, rtol=1e-5, atol=1e-5)
    assert_close(burn.nn.MaxPool3d(2, ceil_mode=True)(on(backend, x)).numpy(),
                 torch_pool(x, "max", (2,) * 3, (2,) * 3, (0,) * 3, (1,) * 3, ceil_mode=True))
    assert_close(burn.nn.AvgPool3d(3, 1, 1, count_include_pad=False)(on(backend, x)).numpy(),
                 torch_pool(x, "avg", (3,) * 3, (1,) * 3, (1,) * 3, (1,) * 3,
                            count_include_pad=False))
    norm = burn.nn.BatchNorm3d(2, backend=backend)
    out = norm(on(backend, x)).numpy()
    assert_close(out.mean(axis=(0, 2, 3, 4)), np.zeros(2), atol=1e-5)
    assert norm.num_batches_tracked.item() == 1


def test_bad_input(backend, rng):
    x = on(backend, _data(rng, (1, 2, 4, 4, 4)))
    with pytest.raises(burn.BurnError, match=r"conv3d: weight must be a 5-D tensor"):
        burn.conv3d(x, on(backend, _data(rng, (3, 2, 3, 3))))
    with pytest.raises(burn.BurnError, match=r"conv3d: the \(dilated\) kernel of size 5 is "
                                             r"larger than the padded input \(4 \+ 2 \* 0\)"):
        burn.conv3d(x, on(backend, _data(rng, (3, 2, 3, 5, 3))))
    with pytest.raises(burn.BurnError, match=r"conv3d: input of shape \(1, 2, 4, 4, 4\) and "
                                             r"weight of shape"):
        burn.conv3d(x, on(backend, _data(rng, (3, 1, 3, 3, 3))))
    with pytest.raises(burn.BurnError, match=r"conv3d: padding='same' needs stride 1"):
        burn.conv3d(x, on(backend, _data(rng, (3, 2, 3, 3, 3))), stride=2, padding="same")
    with pytest.raises(burn.BurnError, match=r"conv_transpose3d: output_padding \(2, 0, 0\) must "
                                             r"be smaller than the stride"):
        burn.conv_transpose3d(x, on(backend, _data(rng, (2, 3, 3, 3, 3))), stride=2,
                              output_padding=(2, 0, 0))
    with pytest.raises(burn.BurnError, match=r"conv_transpose3d: padding must be an int or "
                                             r"ints"):
        burn.conv_transpose3d(x, on(backend, _data(rng, (2, 3, 3, 3, 3))), padding="same")
    with pytest.raises(burn.BurnError, match=r"max_pool3d: padding \(2, 2, 2\) must be at most "
                                             r"half the kernel size"):
        burn.max_pool3d(x, 3, padding=2)
    with pytest.raises(burn.BurnError, match=r"avg_pool3d: expected a 5-D \(batched\) or 4-D "
                                             r"input"):
        burn.avg_pool3d(on(backend, _data(rng, (2, 4, 4))), 2)
    with pytest.raises(burn.BurnError, match=r"adaptive_avg_pool3d: output_size must be an int "
                                             r"or 3 ints, got \(2, 2\)"):
        burn.adaptive_avg_pool3d(x, (2, 2))
    with pytest.raises(burn.BurnError, match=r"avg_pool3d: divisor_override must be a positive "
                                             r"int, got 0"):
        burn.avg_pool3d(x, 2, divisor_override=0)
