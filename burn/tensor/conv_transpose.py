"""Transposed convolutions: ``conv_transpose1d`` and ``conv_transpose2d``, as torch's.

They are the convolutions' adjoints, with weights (C, O / groups, k...), built from ordinary
convolutions with each kernel flipped and the weight's channel axes swapped per group: with a
stride (and no dilation), one stride-1 convolution per output phase (the output rows
``q * stride + r`` take only the kernel rows ``r, r + stride, ...``), interleaved; with a
dilation too, one convolution of the input spread out by the stride (``stride - 1`` zeros after
each element), which does ``stride ** 2`` times the useful work. So they run on the backend's
own convolution kernel on every backend, and under ``Autodiff`` their gradients come from the
rules of the ops they are made of.

Example:
    >>> burn.conv_transpose2d(burn.ones((1, 2, 3, 3)), burn.ones((2, 5, 3, 3)), stride=2).shape
    (1, 5, 7, 7)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..backend.base import BurnError
from .creation import zeros
from .index import pad, stack
from .linalg import _as_dtype, _batched, _floating, _lifted, _tuple, _unlifted
from .tensor import Tensor, same_backend
from .views import flip, narrow, permute, reshape

__all__ = ["conv_transpose1d", "conv_transpose2d"]


def spread_by_stride(x: Tensor, stride: Sequence[int]) -> Tensor:
    """``x`` (N, C, H, W) with ``stride - 1`` zeros after each row and column."""
    sh, sw = stride
    if sh == 1 and sw == 1:
        return x
    n, c, h, w = x.shape
    spread = pad(reshape(x, n, c, h, 1, w, 1), (0, sw - 1, 0, 0, 0, sh - 1), 0)
    return reshape(spread, n, c, h * sh, w * sw)


def transposed_convolution(x: Tensor, weight: Tensor, bias: Tensor | None,
                           stride: Sequence[int], padding: Sequence[int],
                           dilation: Sequence[int], groups: int, sizes: Sequence[int]) -> Tensor:
    """The adjoint of ``conv2d`` for 4-D ``x`` (N, C, H, W) and ``weight`` (C, O / groups,
    KH, KW), into (N, O, *sizes): checked arguments, one dtype. Also the input gradient of a
    convolution (``burn.autodiff``).

    Strided and undilated, it runs as one stride-1 convolution per output phase (``_phases``);
    otherwise as one convolution of the input spread by the stride."""
    if tuple(stride) != (1, 1) and tuple(dilation) == (1, 1):
        out = _phases(x, weight, stride, padding, groups, sizes)
        return out if bias is None else out + reshape(bias, 1, -1, 1, 1)
    return _spread_convolution(x, weight, bias, stride, padding, dilation, groups, sizes)


def _spread_convolution(x: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int],
                        padding: Sequence[int], dilation: Sequence[int], groups: int,
                        sizes: Sequence[int]) -> Tensor:
    """The input spread by the stride, then one convolution with each kernel flipped and the
    weight's channel axes swapped per group: ``stride ** 2`` times the useful work."""
    c_in, per_group, kh, kw = weight.shape
    grouped = reshape(weight, groups, c_in // groups, per_group, kh, kw)
    swapped = reshape(permute(grouped, 0, 2, 1, 3, 4), groups * per_group, c_in // groups,
                      kh, kw)
    flipped = flip(swapped, (2, 3))
    spread = spread_by_stride(x, stride)
    before = []
    for axis, (k, p, d) in enumerate(zip((kh, kw), padding, dilation)):
        reach = (k - 1) * d - p
        if reach < 0:  # more padding than the kernel reaches: those input rows fall outside
            skip = min(-reach, spread.shape[2 + axis])
            spread = narrow(spread, 2 + axis, skip, spread.shape[2 + axis] - skip)
            reach = 0
        before.append(reach)
    if spread.numel() == 0 or flipped.numel() == 0:  # empty batch, rows all cropped, no taps
        out = zeros((x.shape[0], groups * per_group, *sizes), dtype=x.dtype, backend=x.backend)
        return out if bias is None else out + reshape(bias, 1, -1, 1, 1)
    backend = x.backend
    return Tensor(backend.conv2d(spread.prim, flipped.prim, None if bias is None else bias.prim,
                                 (1, 1), tuple(before), tuple(dilation), groups, tuple(sizes)),
                  backend)


def _phases(x: Tensor, weight: Tensor, stride: Sequence[int], padding: Sequence[int],
            groups: int, sizes: Sequence[int]) -> Tensor:
    """A strided transposed convolution without the spread input's zeros: output row
    ``q * stride + r`` only takes kernel rows ``r, r + stride, ...``, so each phase ``r`` (per
    axis) is a stride-1 transposed convolution with that sub-kernel. The phases are
    interleaved, then cropped by the padding (and extended by output_padding's zeros)."""
    n, _, h, w = x.shape
    (sh, sw), (kh, kw) = stride, weight.shape[2:]
    # the phases read one input: laid out channels-last once, as backends' convolution
    # kernels read it (the cube backends copy an NCHW input for each convolution otherwise)
    x = permute(permute(x, 0, 2, 3, 1).contiguous(), 0, 3, 1, 2)
    # every phase's full output, padded to one length: ceil of the uncropped length / stride
    rows, cols = -(-((h - 1) * sh + kh) // sh), -(-((w - 1) * sw + kw) // sw)
    phases = []
    for rh in range(sh):
        for rw in range(sw):
            taps = weight[:, :, rh::sh, rw::sw]
            th, tw = taps.shape[2:]
            full = (h + th - 1, w + tw - 1) if th and tw else (0, 0)
            part = _spread_convolution(x, taps, None, (1, 1), (0, 0), (1, 1), groups, full)
            phases.append(pad(part, (0, cols - full[1], 0, rows - full[0]), 0))
    out_channels = phases[0].shape[1]
    stacked = reshape(stack(phases), sh, sw, n, out_channels, rows, cols)
    woven = reshape(permute(stacked, 2, 3, 4, 0, 5, 1), n, out_channels, rows * sh, cols * sw)
    (ph, pw), (oh, ow) = padding, sizes
    woven = pad(woven, (0, max(0, pw + ow - cols * sw), 0, max(0, ph + oh - rows * sh)), 0)
    return narrow(narrow(woven, 2, ph, oh), 3, pw, ow)


def _check_transposed_operands(op: str, x: Tensor, weight: Tensor, bias: Tensor | None,
                               groups: int, spatial: int) -> None:
    if not isinstance(weight, Tensor) or weight.ndim != spatial + 2:
        raise BurnError(f"{op}: weight must be a {spatial + 2}-D tensor (in, out / groups, "
                        f"kernel...), got {getattr(weight, 'shape', weight)!r}")
    if not isinstance(groups, int) or groups < 1:
        raise BurnError(f"{op}: groups must be a positive int, got {groups!r}")
    if x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise BurnError(f"{op}: input of shape {x.shape} and weight of shape {weight.shape} do "
                        f"not fit with groups={groups}: need input channels = weight.shape[0], "
                        f"divisible by groups (a transposed convolution's weight is (in, "
                        f"out / groups, kernel...), conv's transposed)")
    out_channels = weight.shape[1] * groups
    if bias is not None and (not isinstance(bias, Tensor) or bias.shape != (out_channels,)):
        raise BurnError(f"{op}: bias must be a tensor of shape ({out_channels},), got "
                        f"{getattr(bias, 'shape', bias)!r}")


def _transposed_sizes(op: str, x: Tensor, kernel: Sequence[int], stride: Sequence[int],
                      padding: Sequence[int], extra: Sequence[int], dilation: Sequence[int]
                      ) -> tuple[int, ...]:
    for e, s, d in zip(extra, stride, dilation):
        if e >= max(s, d):
            raise BurnError(f"{op}: output_padding {tuple(extra)} must be smaller than the stride "
                            f"{tuple(stride)} or the dilation {tuple(dilation)} on each axis")
    sizes = tuple((n - 1) * s - 2 * p + d * (k - 1) + e + 1 for n, k, s, p, e, d in
                  zip(x.shape[2:], kernel, stride, padding, extra, dilation))
    if any(size < 1 for size in sizes):
        raise BurnError(f"{op}: padding {tuple(padding)} crops the whole output of an input of "
                        f"shape {x.shape} (it would have size {sizes}); use less padding")
    return sizes


def transposed_arguments(op: str, x: Tensor, weight: Tensor, bias: Tensor | None,
                         stride: Any, padding: Any, output_padding: Any, dilation: Any,
                         groups: int, spatial: int) -> tuple[Any, ...]:
    """A transposed convolution's checked operands in one dtype and its per-axis arguments:
    (batched x, weight, bias, whether the batch axis was added, stride, padding,
    output_padding, dilation, output sizes)."""
    x, unbatched = _batched(x, spatial, op)
    _check_transposed_operands(op, x, weight, bias, groups, spatial)
    operands = (x, weight) if bias is None else (x, weight, bias)
    same_backend(op, *operands)
    dtype = _floating(op, operands)
    if isinstance(padding, str):
        raise BurnError(f"{op}: padding must be an int or ints (how much each side of the "
                        f"output is cropped), got {padding!r}; 'same' and 'valid' are conv's")
    stride_t = _tuple(stride, spatial, "stride", op, 1)
    dilation_t = _tuple(dilation, spatial, "dilation", op, 1)
    pad_t = _tuple(padding, spatial, "padding", op, 0)
    extra = _tuple(output_padding, spatial, "output_padding", op, 0)
    sizes = _transposed_sizes(op, x, weight.shape[2:], stride_t, pad_t, extra, dilation_t)
    x, weight = _as_dtype(x, dtype), _as_dtype(weight, dtype)
    bias = None if bias is None else _as_dtype(bias, dtype)
    return x, weight, bias, unbatched, stride_t, pad_t, extra, dilation_t, sizes


def _conv_transpose(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                    padding: Any, output_padding: Any, dilation: Any, groups: int,
                    spatial: int) -> Tensor:
    x, weight, bias, unbatched, stride_t, pad_t, _, dilation_t, sizes = transposed_arguments(
        op, x, weight, bias, stride, padding, output_padding, dilation, groups, spatial)
    x, weight, stride_t, pad_t, dilation_t, sizes = _lifted(x, weight, spatial, stride_t,
                                                            pad_t, dilation_t, sizes)
    y = transposed_convolution(x, weight, bias, stride_t, pad_t, dilation_t, groups, sizes)
    return _unlifted(y, spatial, unbatched)


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """1-D transposed convolution of ``x`` (N, C, L) with ``weight`` (C, O / groups, K), as
    torch's: length ``(L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding +
    1``.

    Example:
        >>> burn.conv_transpose1d(burn.ones((2, 4, 5)), burn.ones((4, 3, 3)), stride=2).shape
        (2, 3, 11)
    """
    return _conv_transpose("conv_transpose1d", x, weight, bias, stride, padding,
                           output_padding, dilation, groups, 1)


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """2-D transposed convolution of ``x`` (N, C, H, W) with ``weight`` (C, O / groups, KH,
    KW), as torch's (the adjoint of ``conv2d`` with the same arguments); ``output_padding``
    (smaller than the stride or the dilation) adds rows and columns at the bottom and right,
    to undo a strided convolution's rounding.

    Example:
        >>> x = burn.ones((1, 8, 16, 16))
        >>> down = burn.conv2d(x, burn.ones((4, 8, 3, 3)), stride=2, padding=1)
        >>> burn.conv_transpose2d(down, burn.ones((4, 8, 3, 3)), stride=2, padding=1,
        ...                       output_padding=1).shape
        (1, 8, 16, 16)
    """
    return _conv_transpose("conv_transpose2d", x, weight, bias, stride, padding,
                           output_padding, dilation, groups, 2)
