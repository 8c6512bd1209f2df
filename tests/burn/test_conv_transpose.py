"""Transposed convolutions on every backend against a NumPy reference written independently
(each input element scattered through the kernel, in float64): strides, padding,
output_padding, dilation, groups, bias, 1-D and 2-D, unbatched and empty inputs, the float
dtypes; the adjoint identity with conv2d; gradients against central differences; the layers;
and the errors.

Inputs are multiples of 1/8 (``dyadic_array``): the sums are exact in float32, so results
match whatever the summation order.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients
from optest import on, supports
from util import assert_close, dyadic_array

import burn


def reference(x, w, bias=None, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """torch's conv_transpose2d by definition: out[o * s - p + k * d] += x[o] * w[k]."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    pair = (lambda v: (v, v) if isinstance(v, int) else tuple(v))
    (sh, sw), (ph, pw), (eh, ew), (dh, dw) = map(pair, (stride, padding, output_padding,
                                                        dilation))
    n, c, h, wd = x.shape
    per_group, kh, kw = w.shape[1:]
    full = np.zeros((n, per_group * groups, (h - 1) * sh + dh * (kh - 1) + 1 + eh,
                     (wd - 1) * sw + dw * (kw - 1) + 1 + ew))
    cg = c // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for a in range(kh):
            for b in range(kw):
                taps = np.einsum("nchw,co->nohw", xs, w[g * cg:(g + 1) * cg, :, a, b])
                full[:, g * per_group:(g + 1) * per_group,
                     a * dh:a * dh + (h - 1) * sh + 1:sh,
                     b * dw:b * dw + (wd - 1) * sw + 1:sw] += taps
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + eh + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + ew + 1
    out = full[:, :, ph:ph + oh, pw:pw + ow]
    return out if bias is None else out + np.asarray(bias, np.float64)[None, :, None, None]


# (input shape, weight shape, keyword arguments)
CASES = [
    ((2, 3, 5, 4), (3, 4, 3, 3), {}),
    ((2, 3, 5, 4), (3, 4, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ((1, 2, 4, 6), (2, 3, 2, 3), {"stride": (3, 2), "padding": (0, 2)}),
    ((1, 4, 4, 4), (4, 2, 3, 3), {"groups": 2, "stride": 2, "dilation": (1, 2)}),
    ((2, 3, 3, 3), (3, 2, 3, 3), {"dilation": 2, "padding": 3, "output_padding": (1, 0)}),
    ((1, 6, 5, 5), (6, 1, 4, 4), {"groups": 6, "stride": 2, "padding": 1}),  # depthwise
    ((1, 2, 3, 3), (2, 2, 2, 2), {"padding": 1}),  # padding past the kernel's reach
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}*{c[1]}{c[2]}")
def test_conv_transpose2d(backend, rng, case):
    x_shape, w_shape, kwargs = case
    x, w = dyadic_array(rng, x_shape, "float32"), dyadic_array(rng, w_shape, "float32")
    bias = dyadic_array(rng, w_shape[1] * kwargs.get("groups", 1), "float32")
    got = burn.conv_transpose2d(on(backend, x), on(backend, w), on(backend, bias), **kwargs)
    assert_close(got.numpy(), reference(x, w, bias, **kwargs))


def test_conv_transpose1d_and_unbatched(backend, rng):
    x, w = dyadic_array(rng, (2, 3, 7), "float32"), dyadic_array(rng, (3, 5, 3), "float32")
    got = burn.conv_transpose1d(on(backend, x), on(backend, w), stride=2, padding=1,
                                output_padding=1)
    expected = reference(x[:, :, None], w[:, :, None], stride=(1, 2), padding=(0, 1),
                         output_padding=(0, 1))[:, :, 0]
    assert_close(got.numpy(), expected)
    single = burn.conv_transpose2d(on(backend, x[0, :, None]), on(backend, w[:, :, None]))
    assert_close(single.numpy(), reference(x[:1, :, None], w[:, :, None])[0])


def test_empty_batch_and_fully_cropped_rows(backend, rng):
    w = dyadic_array(rng, (2, 3, 1, 1), "float32")
    empty = burn.conv_transpose2d(on(backend, np.zeros((0, 2, 4, 4), np.float32)),
                                  on(backend, w), stride=2)
    assert empty.shape == (0, 3, 7, 7)
    # a 1x1 kernel with padding 1: the output drops the outer input rows and columns
    x = dyadic_array(rng, (1, 2, 4, 4), "float32")
    got = burn.conv_transpose2d(on(backend, x), on(backend, w), padding=1)
    assert_close(got.numpy(), reference(x, w, padding=1))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_dtypes(backend, rng, dtype):
    if not supports(backend, [dtype]):
        pytest.skip(f"{backend.name} has no {dtype} (its refusal is tested in test_tensor)")
    x, w = dyadic_array(rng, (1, 2, 4, 4), dtype), dyadic_array(rng, (2, 3, 3, 3), dtype)
    got = burn.conv_transpose2d(on(backend, x), on(backend, w), stride=2, padding=1)
    assert got.dtype.name == dtype
    assert_close(got.numpy(), reference(x.astype(np.float64), w.astype(np.float64), stride=2,
                                        padding=1))


def test_adjoint_of_conv2d(backend, rng):
    """<conv2d(x, w), y> = <x, conv_transpose2d(y, w)> with the same arguments."""
    x, w = dyadic_array(rng, (2, 4, 9, 8), "float32"), dyadic_array(rng, (6, 2, 3, 3), "float32")
    options = {"stride": 2, "padding": 1, "dilation": (2, 1), "groups": 2}
    y = burn.conv2d(on(backend, x), on(backend, w), **options)
    cotangent = dyadic_array(rng, y.shape, "float32")
    back = burn.conv_transpose2d(on(backend, cotangent), on(backend, w), **options,
                                 output_padding=(0, 1))
    assert back.shape == x.shape
    np.testing.assert_allclose((y.numpy().astype(np.float64) * cotangent).sum(),
                               (x.astype(np.float64) * back.numpy()).sum(), rtol=1e-12)


@pytest.mark.parametrize("options", [{"stride": 2, "padding": 1, "output_padding": 1},
                                     {"groups": 2, "dilation": 2}], ids=["strided", "grouped"])
def test_gradients(backend, rng, options):
    x, w = rng.normal(size=(2, 4, 3, 3)), rng.normal(size=(4, 3, 3, 2))
    b = rng.normal(size=3 * options.get("groups", 1))
    if options.get("groups"):
        w = w[:, :1]
        b = b[:2]
    check_gradients(lambda a, c, d: burn.conv_transpose2d(a, c, d, **options), [x, w, b],
                    backend, "float64", rng)


def test_gradients_1d(backend, rng):
    check_gradients(lambda a, c: burn.conv_transpose1d(a, c, stride=3, padding=1),
                    [rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 2, 3))], backend,
                    "float64", rng)


def test_layers_undo_a_strided_convolution(backend):
    generator = burn.Generator(0)
    down = burn.nn.Conv2d(3, 8, 3, stride=2, padding=1, generator=generator).to(backend)
    up = burn.nn.ConvTranspose2d(8, 3, 3, stride=2, padding=1, output_padding=1,
                                 generator=generator).to(backend)
    x = burn.ones((2, 3, 10, 10), backend=backend)
    assert up(down(x)).shape == x.shape
    assert up.weight.shape == (8, 3, 3, 3) and up.bias.shape == (3,)
    bound = 1 / np.sqrt(3 * 9)  # torch's fan-in: out / groups * kernel
    assert np.abs(up.weight.numpy()).max() <= bound and np.abs(up.bias.numpy()).max() <= bound
    line = burn.nn.ConvTranspose1d(4, 6, 5, stride=2, groups=2, bias=False).to(backend)
    assert line.weight.shape == (4, 3, 5) and line.bias is None
    assert line(burn.ones((1, 4, 6), backend=backend)).shape == (1, 6, 15)


@pytest.mark.parametrize("call, message", [
    (lambda: burn.conv_transpose2d(burn.ones((1, 3, 4, 4)), burn.ones((4, 2, 3, 3))),
     r"input of shape \(1, 3, 4, 4\) and weight of shape \(4, 2, 3, 3\) do not fit with "
     r"groups=1: need input channels = weight.shape\[0\]"),
    (lambda: burn.conv_transpose2d(burn.ones((1, 3, 4, 4)), burn.ones((3, 2, 3))),
     r"weight must be a 4-D tensor \(in, out / groups, kernel...\)"),
    (lambda: burn.conv_transpose2d(burn.ones((1, 3, 4, 4)), burn.ones((3, 2, 3, 3)),
                                   burn.ones(3)),
     r"bias must be a tensor of shape \(2,\), got \(3,\)"),
    (lambda: burn.conv_transpose2d(burn.ones((1, 3, 4, 4)), burn.ones((3, 2, 3, 3)), stride=2,
                                   output_padding=2),
     r"output_padding \(2, 2\) must be smaller than the stride \(2, 2\) or the dilation"),
    (lambda: burn.conv_transpose2d(burn.ones((1, 3, 2, 2)), burn.ones((3, 2, 1, 1)), padding=1),
     r"padding \(1, 1\) crops the whole output .* size \(0, 0\)\); use less padding"),
    (lambda: burn.conv_transpose2d(burn.ones((1, 3, 4, 4)), burn.ones((3, 2, 3, 3)),
                                   padding="same"),
     r"padding must be an int or ints .* 'same' and 'valid' are conv's"),
    (lambda: burn.conv_transpose1d(burn.ones((1, 3, 4, 4)), burn.ones((3, 2, 3))),
     r"conv_transpose1d: expected a 3-D \(batched\) or 2-D input, got shape \(1, 3, 4, 4\)"),
    (lambda: burn.conv_transpose2d(burn.ones((1, 2, 4, 4), dtype="int32"),
                                   burn.ones((2, 2, 3, 3), dtype="int32")),
     r"conv_transpose2d: needs floating tensors, got int32 and int32"),
    (lambda: burn.nn.ConvTranspose2d(3, 4, 3, groups=2),
     r"ConvTranspose2d: 3 input and 4 output channels must both divide into 2 groups"),
])
def test_errors(call, message):
    with pytest.raises(burn.BurnError, match=message):
        call()
