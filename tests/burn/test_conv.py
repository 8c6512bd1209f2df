"""Convolution and pooling on every backend against the NumPy reference: strides, padding
(ints, tuples, 'same', 'valid'), dilation, groups (depthwise too), bias, 1-D and 2-D,
unbatched inputs, strided views, 0-size batches, the float dtypes, NaN in max pooling and bad
input; pooling's ceil_mode, count_include_pad and divisor_override against torch's
definition in float64.

Inputs are multiples of 1/8 (``dyadic_array``): convolution sums and pooling sums are exact,
so results match NumPy's whatever the summation order and the default tolerances hold.
"""

from __future__ import annotations

import numpy as np
import pytest
from optest import check, on, random_tensor, supports
from util import assert_close, dyadic_array

import burn


def _data(rng: np.random.Generator, shape, dtype: str = "float32") -> np.ndarray:
    return dyadic_array(rng, shape, dtype)


# (input shape, weight shape, keyword arguments)
CONV2D_CASES = [
    ((2, 3, 9, 8), (4, 3, 3, 3), {}),
    ((2, 3, 9, 8), (4, 3, 3, 3), {"stride": 2, "padding": 1}),
    ((1, 3, 11, 10), (5, 3, 3, 2), {"stride": (2, 1), "padding": (2, 0), "dilation": (1, 2)}),
    ((2, 4, 7, 7), (6, 2, 3, 3), {"groups": 2, "padding": 1}),
    ((1, 6, 8, 8), (6, 1, 5, 5), {"groups": 6, "padding": "same"}),   # depthwise
    ((1, 3, 8, 7), (2, 3, 4, 2), {"padding": "same", "dilation": 2}),  # asymmetric 'same'
    ((2, 3, 6, 6), (4, 3, 1, 1), {"padding": "valid"}),               # pointwise
    ((1, 40, 6, 6), (70, 40, 3, 3), {"padding": 1}),  # several channel slices and tiles
    ((2, 32, 6, 5), (32, 32, 3, 3), {"padding": 1}),   # whole channel and output tiles
    ((1, 16, 5, 5), (24, 16, 3, 3), {"stride": 2}),    # whole channel tiles, ragged outputs
]


@pytest.mark.parametrize("case", CONV2D_CASES, ids=lambda c: f"{c[0]}*{c[1]}{c[2]}")
def test_conv2d(backend, ref, rng, case):
    x_shape, w_shape, kwargs = case
    x, w = _data(rng, x_shape), _data(rng, w_shape)
    bias = _data(rng, w_shape[0])
    check(lambda b: burn.conv2d(on(b, x), on(b, w), on(b, bias), **kwargs), backend, ref)


def test_conv2d_without_bias_unbatched(backend, ref, rng):
    x, w = _data(rng, (3, 9, 8)), _data(rng, (4, 3, 3, 3))
    check(lambda b: burn.conv2d(on(b, x), on(b, w), padding=1), backend, ref)


def test_conv2d_strided_views(backend, ref, rng):
    """A channels-last input seen as NCHW, a transposed input, a column-strided input, and
    weights permuted: (KH, KW, C, O) storage, which the kernel reads in place with fewer than
    16 channels (``FLAT_K``), and (C, KH, KW, O), which it reads in place with more."""
    x = _data(rng, (2, 9, 8, 3))  # NHWC storage
    w = _data(rng, (3, 3, 3, 4))  # (KH, KW, C, O) storage
    bias = _data(rng, 8)
    spaced = _data(rng, (2, 3, 9, 16))  # every other column: pixels one axis, stride 2
    rows = _data(rng, (16, 3, 3, 4))    # (C, KH, KW, O) storage, 16 channels
    wide = _data(rng, (2, 16, 6, 5))

    def op(b):
        xt = on(b, x).permute(0, 3, 1, 2)
        wt = on(b, w).permute(3, 2, 0, 1)
        return (burn.conv2d(xt, wt, on(b, bias)[::2], padding=1),
                burn.conv2d(xt.transpose(2, 3), wt.flip(3), stride=2),
                burn.conv2d(on(b, spaced)[..., ::2], wt, padding=1),
                burn.conv2d(on(b, wide), on(b, rows).permute(3, 0, 1, 2), stride=(1, 2)))
    check(op, backend, ref)


def test_conv2d_pointwise(backend, ref, rng):
    """1x1 convolutions, which run as one batched product where the input's pixels form one
    axis: NCHW, channels-last, with and without bias; a transposed input (the kernel's path)."""
    x = _data(rng, (2, 9, 7, 24))  # NHWC storage
    w, bias = _data(rng, (16, 24, 1, 1)), _data(rng, 16)

    def op(b):
        nhwc = on(b, x).permute(0, 3, 1, 2)
        nchw = nhwc.contiguous()
        return (burn.conv2d(nchw, on(b, w)), burn.conv2d(nchw, on(b, w), on(b, bias)),
                burn.conv2d(nhwc, on(b, w), on(b, bias)),
                burn.conv2d(nchw.transpose(2, 3), on(b, w)))
    check(op, backend, ref)


def test_conv1d(backend, ref, rng):
    x, w, bias = _data(rng, (2, 4, 13)), _data(rng, (6, 2, 3)), _data(rng, 6)
    check(lambda b: burn.conv1d(on(b, x), on(b, w), on(b, bias), stride=2, padding=1,
                                dilation=2, groups=2), backend, ref)
    check(lambda b: burn.conv1d(on(b, x[0]), on(b, w[:, :, :2]), groups=2, padding="same"),
          backend, ref)


def test_conv_empty_batch(backend, ref, rng):
    x, w = _data(rng, (0, 3, 5, 5)), _data(rng, (4, 3, 3, 3))
    check(lambda b: burn.conv2d(on(b, x), on(b, w)), backend, ref)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_dtypes(backend, ref, rng, dtype):
    """Convolution in each dtype but bfloat16 (whose loads and stores matmul's tests cover:
    each dtype is a compile on the cpu target) and one pooling kernel per dtype."""
    if not supports(backend, [dtype]):
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, _data(rng, 3, dtype))
        return
    x, w, bias = _data(rng, (2, 3, 7, 6), dtype), _data(rng, (4, 3, 3, 3), dtype), \
        _data(rng, 4, dtype)
    if dtype != "bfloat16":
        check(lambda b: burn.conv2d(on(b, x), on(b, w), on(b, bias), padding=1), backend, ref)
    pool = {"float16": lambda t: burn.max_pool2d(t, 2), "bfloat16": lambda t: burn.avg_pool2d(
        t, 3, 2, 1), "float64": lambda t: burn.adaptive_avg_pool2d(t, (3, 2))}[dtype]
    check(lambda b: pool(on(b, x)), backend, ref)


def test_conv_promotes(backend, ref, rng):
    x, w = _data(rng, (1, 3, 6, 6), "float16"), _data(rng, (2, 3, 3, 3), "float32")
    check(lambda b: burn.conv2d(on(b, x), on(b, w)), backend, ref)
    assert burn.conv2d(on(backend, x), on(backend, w)).dtype == burn.float32


# (function, kernel_size, keyword arguments)
POOL2D_CASES = [
    (burn.max_pool2d, 2, {}),
    (burn.max_pool2d, 3, {"stride": 2, "padding": 1}),
    (burn.max_pool2d, (3, 2), {"stride": (1, 2), "padding": (1, 0), "dilation": (2, 1)}),
    (burn.avg_pool2d, 2, {}),
    (burn.avg_pool2d, 3, {"stride": 2, "padding": 1}),
    (burn.avg_pool2d, (2, 3), {"stride": (2, 1), "padding": (1, 1)}),
]


@pytest.mark.parametrize("case", POOL2D_CASES, ids=lambda c: f"{c[0].__name__}{c[1]}{c[2]}")
def test_pool2d(backend, ref, rng, case):
    fn, kernel, kwargs = case
    x = _data(rng, (2, 3, 9, 8))
    check(lambda b: fn(on(b, x), kernel, **kwargs), backend, ref)
    check(lambda b: fn(on(b, x[0]), kernel, **kwargs), backend, ref)  # unbatched


def test_pool1d(backend, ref, rng):
    x = _data(rng, (2, 3, 11))
    check(lambda b: burn.max_pool1d(on(b, x), 3, 2, 1, dilation=2), backend, ref)
    check(lambda b: burn.avg_pool1d(on(b, x), 4, padding=2), backend, ref)
    check(lambda b: burn.max_pool1d(on(b, x[0]), 2), backend, ref)


def torch_pool(x: np.ndarray, kind: str, kernel: tuple[int, ...], stride: tuple[int, ...],
               padding: tuple[int, ...], dilation: tuple[int, ...], ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None
               ) -> np.ndarray:
    """torch's pooling over the last ``len(kernel)`` axes, in float64, from its definition:
    the output size (ceil_mode's last window must start inside the input or its begin
    padding), then each window's max, or its sum over a divisor that counts the padding
    (unless ``count_include_pad`` is False) but never ceil_mode's room past it."""
    dims = len(kernel)
    sizes = x.shape[-dims:]
    outs = []
    for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation):
        out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= n + p:
            out -= 1
        outs.append(out)
    result = np.zeros(x.shape[:-dims] + tuple(outs))
    for index in np.ndindex(*outs):
        starts = [i * s - p for i, s, p in zip(index, stride, padding)]
        taps = [[a + j * d for j in range(k) if 0 <= a + j * d < n]
                for a, k, d, n in zip(starts, kernel, dilation, sizes)]
        window = x[(..., *np.ix_(*taps))].astype(np.float64).reshape(*x.shape[:-dims], -1)
        if kind == "max":
            result[(..., *index)] = window.max(axis=-1)
            continue
        if divisor_override is not None:
            divisor = divisor_override
        elif count_include_pad:
            divisor = np.prod([min(a + k, n + p) - a
                               for a, k, n, p in zip(starts, kernel, sizes, padding)])
        else:
            divisor = np.prod([len(t) for t in taps])
        result[(..., *index)] = window.sum(axis=-1) / divisor
    return result


# torch's pooling options: (kind, kernel, stride, padding, dilation, keywords)
POOL_MODE_CASES = [
    ("max", (2, 2), (2, 2), (0, 0), (1, 1), {"ceil_mode": True}),
    ("max", (3, 3), (2, 2), (1, 1), (1, 1), {"ceil_mode": True}),
    ("max", (3, 2), (2, 3), (0, 1), (2, 1), {"ceil_mode": True}),
    ("avg", (2, 2), (2, 2), (0, 0), (1, 1), {"ceil_mode": True}),
    ("avg", (3, 3), (2, 2), (1, 1), (1, 1), {"ceil_mode": True}),
    ("avg", (3, 3), (2, 2), (1, 1), (1, 1), {"count_include_pad": False}),
    ("avg", (2, 3), (2, 2), (1, 1), (1, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("avg", (3, 3), (2, 2), (1, 0), (1, 1), {"divisor_override": 5}),
]


@pytest.mark.parametrize("case", POOL_MODE_CASES, ids=lambda c: f"{c[0]}{c[1]}s{c[2]}p{c[3]}"
                         f"d{c[4]}-{'-'.join(c[5])}")
def test_pool_modes_follow_torch(backend, rng, case):
    """ceil_mode, count_include_pad and divisor_override against torch's definition, 2-D
    (on a 9 x 8 input, odd and even sizes) and 1-D."""
    kind, kernel, stride, padding, dilation, options = case
    x = _data(rng, (2, 3, 9, 8))
    pool = burn.max_pool2d if kind == "max" else burn.avg_pool2d
    extra = {"dilation": dilation} if kind == "max" else {}
    got = pool(on(backend, x), kernel, stride, padding, **extra, **options).numpy()
    assert_close(got, torch_pool(x, kind, kernel, stride, padding, dilation, **options))
    if "divisor_override" in options:
        return  # torch's 1-D average pooling has none
    pool1d = burn.max_pool1d if kind == "max" else burn.avg_pool1d
    extra = {"dilation": dilation[1]} if kind == "max" else {}
    got = pool1d(on(backend, x[0]), kernel[1], stride[1], padding[1], **extra,
                 **options).numpy()  # unbatched too
    assert_close(got, torch_pool(x[0], kind, kernel[1:], stride[1:], padding[1:],
                                 dilation[1:], **options))


def test_pool_modes_in_16_bit(backend, rng):
    """A 16-bit average with torch's divisor is computed in float32 and rounded once."""
    dtype = "float16"
    if not supports(backend, [dtype]):
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, _data(rng, 3, dtype))
        return
    x = _data(rng, (2, 3, 9, 8), dtype)
    got = burn.avg_pool2d(on(backend, x), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    assert got.dtype == burn.float16
    want = torch_pool(x, "avg", (3, 3), (2, 2), (1, 1), (1, 1), ceil_mode=True,
                      count_include_pad=False)
    assert_close(got.numpy(), want)
    got = burn.max_pool2d(on(backend, x), 2, ceil_mode=True)
    assert_close(got.numpy(), torch_pool(x, "max", (2, 2), (2, 2), (0, 0), (1, 1),
                                         ceil_mode=True))


def test_pool_modules(backend, rng):
    x = _data(rng, (2, 3, 9, 8))
    modules = [
        (burn.nn.MaxPool2d(3, 2, 1, ceil_mode=True), ("max", (3, 3), (2, 2), (1, 1), (1, 1)),
         {"ceil_mode": True}),
        (burn.nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False, divisor_override=3),
         ("avg", (2, 2), (2, 2), (0, 0), (1, 1)), {"divisor_override": 3, "ceil_mode": True}),
    ]
    for module, geometry, options in modules:
        assert_close(module(on(backend, x)).numpy(), torch_pool(x, *geometry, **options))
    assert_close(burn.nn.MaxPool1d(2, ceil_mode=True)(on(backend, x[0])).numpy(),
                 torch_pool(x[0], "max", (2,), (2,), (0,), (1,), ceil_mode=True))
    assert_close(burn.nn.AvgPool1d(3, 2, 1, count_include_pad=False)(on(backend, x[0])).numpy(),
                 torch_pool(x[0], "avg", (3,), (2,), (1,), (1,), count_include_pad=False))


def test_pool_strided_views_and_empty(backend, ref, rng):
    x = _data(rng, (2, 9, 8, 3))  # NHWC storage seen as NCHW
    check(lambda b: burn.max_pool2d(on(b, x).permute(0, 3, 1, 2), 2, 1), backend, ref)
    check(lambda b: burn.avg_pool2d(on(b, x).permute(0, 3, 2, 1).flip(2), 3, 1, 1), backend,
          ref)
    check(lambda b: burn.max_pool2d(on(b, _data(rng, (0, 3, 4, 4))), 2), backend, ref)


def test_max_pool_propagates_nan(backend, ref, rng):
    x = _data(rng, (1, 2, 6, 6))
    x[0, 0, 1, 1] = np.nan
    check(lambda b: burn.max_pool2d(on(b, x), 2), backend, ref)
    assert np.isnan(burn.max_pool2d(on(backend, x), 2).numpy()[0, 0, 0, 0])


@pytest.mark.parametrize("sizes", [((7, 9), (3, 4)), ((6, 6), (1, 1)), ((5, 4), (5, 8)),
                                   ((7, 9), (None, 2))], ids=str)
def test_adaptive_avg_pool2d(backend, ref, rng, sizes):
    x = _data(rng, (2, 3, *sizes[0]))
    check(lambda b: burn.adaptive_avg_pool2d(on(b, x), sizes[1]), backend, ref)


def test_adaptive_avg_pool1d(backend, ref, rng):
    x = _data(rng, (2, 3, 10))
    check(lambda b: burn.adaptive_avg_pool1d(on(b, x), 4), backend, ref)
    check(lambda b: burn.adaptive_avg_pool1d(on(b, x[1]), 3), backend, ref)


def test_bad_input(backend, rng):
    x, w = on(backend, _data(rng, (1, 3, 8, 8))), on(backend, _data(rng, (4, 2, 3, 3)))
    with pytest.raises(burn.BurnError, match=r"conv2d: input of shape \(1, 3, 8, 8\) and weight "
                                             r"of shape \(4, 2, 3, 3\) do not fit with groups=1"):
        burn.conv2d(x, w)
    with pytest.raises(burn.BurnError, match=r"conv2d: expected a 4-D \(batched\) or 3-D input, "
                                             r"got shape \(8, 8\)"):
        burn.conv2d(on(backend, _data(rng, (8, 8))), w)
    w3 = on(backend, _data(rng, (4, 3, 3, 3)))
    with pytest.raises(burn.BurnError, match=r"conv2d: bias must be a tensor of shape \(4,\), "
                                             r"got \(3,\)"):
        burn.conv2d(x, w3, on(backend, _data(rng, 3)))
    with pytest.raises(burn.BurnError, match=r"conv2d: the \(dilated\) kernel of size 5 is larger"
                                             r" than the padded input \(4 \+ 2 \* 0\)"):
        burn.conv2d(on(backend, _data(rng, (1, 3, 4, 4))), w3, dilation=2)
    with pytest.raises(burn.BurnError, match=r"conv2d: padding='same' needs stride 1"):
        burn.conv2d(x, w3, padding="same", stride=2)
    with pytest.raises(burn.BurnError, match=r"conv2d: needs floating tensors, got int32"):
        burn.conv2d(on(backend, random_tensor(rng, (1, 3, 8, 8), "int32")), w3.to(burn.int32))
    with pytest.raises(burn.BurnError, match=r"conv2d: stride must be at least 1, got 0"):
        burn.conv2d(x, w3, stride=0)
    with pytest.raises(burn.BurnError, match=r"conv2d: tensors are on different devices"):
        burn.conv2d(x, on(burn.NumPy(), _data(rng, (4, 3, 3, 3))))
    with pytest.raises(burn.BurnError, match=r"max_pool2d: padding \(2, 2\) must be at most half "
                                             r"the kernel size \(3, 3\)"):
        burn.max_pool2d(x, 3, padding=2)
    with pytest.raises(burn.BurnError, match=r"avg_pool2d: the \(dilated\) kernel of size 9 is "
                                             r"larger than the padded input"):
        burn.avg_pool2d(x, 9)
    with pytest.raises(burn.BurnError, match=r"max_pool1d: kernel_size must be an int or 1 ints"):
        burn.max_pool1d(on(backend, _data(rng, (1, 3, 8))), (2, 2))
    for bad in (0, 2.5, True):
        with pytest.raises(burn.BurnError, match=r"avg_pool2d: divisor_override must be a "
                                                 r"positive int, got"):
            burn.avg_pool2d(x, 2, divisor_override=bad)
    with pytest.raises(burn.BurnError, match=r"adaptive_avg_pool2d: output_size must be positive"):
        burn.adaptive_avg_pool2d(x, 0)
