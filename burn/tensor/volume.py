"""3-D convolution and pooling as torch's: ``conv3d``, ``conv_transpose3d``,
``max_pool3d``, ``avg_pool3d``, ``adaptive_avg_pool3d`` on (N, C, D, H, W) inputs (or
without the batch axis).

They are built from the 2-D ops, so they run on the backend's own convolution and pooling
kernels on every backend, and under ``Autodiff`` their gradients come from the rules of the
ops they are made of:

- ``conv3d`` unfolds the depth: for each output depth, the KD input slices its kernel covers
  become channels, (N * OD, KD * C, H, W) (the input copied KD times over), the weight's depth
  axis joins its channels the same way, and one 2-D convolution computes the rest;
- ``conv_transpose3d`` is its adjoint: the input spread by the stride (``stride - 1`` zeros
  after each element along each axis), padded by what the kernel reaches past the cropping,
  and one stride-1 ``conv3d`` with each kernel flipped and the weight's channel axes swapped
  per group (``stride ** 3`` times the useful work);
- the pools are separable: a 2-D pool over the height and width of each depth slice, then one
  over the depth (a 2-D pool with a kernel KD high and 1 wide). A window's maximum is the
  maximum of its slices' maxima, its sum the sum of their sums, and torch's divisor the
  product of each axis's count (an adaptive window's mean, the mean of its slices' means).

Example:
    >>> burn.conv3d(burn.ones((1, 2, 5, 6, 6)), burn.ones((4, 2, 3, 3, 3)), padding=1).shape
    (1, 4, 5, 6, 6)
    >>> burn.max_pool3d(burn.ones((1, 2, 5, 6, 6)), 2).shape
    (1, 2, 2, 3, 3)
"""

from __future__ import annotations

from typing import Any

from .conv_transpose import transposed_arguments
from .index import pad, stack
from .linalg import (
    _as_dtype,
    _batched,
    _compute_dtype,
    _floating,
    _pool_geometry,
    adaptive_avg_pool2d,
    adaptive_sizes,
    avg_pool2d,
    check_divisor,
    conv2d,
    conv_arguments,
    max_pool2d,
)
from .tensor import Tensor
from .views import flip, narrow, permute, reshape, unsqueeze

__all__ = ["adaptive_avg_pool3d", "avg_pool3d", "conv3d", "conv_transpose3d", "max_pool3d"]


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution of ``x`` (N, C, D, H, W) with ``weight`` (O, C / groups, KD, KH, KW);
    ``padding`` as ints, ``"same"`` (stride 1) or ``"valid"``.

    Example:
        >>> burn.conv3d(burn.ones((2, 4, 6, 6, 6)), burn.ones((8, 4, 3, 3, 3)), stride=2).shape
        (2, 8, 2, 2, 2)
    """
    x, weight, bias, unbatched, stride_t, pads, dilation_t, same, sizes = conv_arguments(
        "conv3d", x, weight, bias, stride, padding, dilation, groups, 3)
    kernel = tuple(weight.shape[2:])
    kd, sd, dd, od = kernel[0], stride_t[0], dilation_t[0], sizes[0]
    n, c, depth, h, w = x.shape
    if same:  # torch's: the odd one out of an even span goes after
        total = dd * (kd - 1)
        depth_pads, plane_padding = (total // 2, total - total // 2), "same"
    else:
        depth_pads, plane_padding = (pads[0], pads[0]), pads[1:]
    if any(depth_pads):
        x = pad(x, (0, 0, 0, 0, *depth_pads), 0)
    by_depth = permute(x, 0, 2, 1, 3, 4)  # (N, D, C, H, W)
    unfolded = stack([by_depth[:, k * dd:k * dd + (od - 1) * sd + 1:sd] for k in range(kd)],
                     2)  # (N, OD, KD, C, H, W)
    if groups > 1:  # a group's channels together, as the 2-D convolution splits them
        unfolded = permute(reshape(unfolded, n, od, kd, groups, c // groups, h, w),
                           0, 1, 3, 2, 4, 5, 6)
    planes = reshape(unfolded, n * od, kd * c, h, w)
    out_channels = weight.shape[0]
    flat_weight = reshape(permute(weight, 0, 2, 1, 3, 4), out_channels, kd * weight.shape[1],
                          *kernel[1:])
    y = conv2d(planes, flat_weight, bias, stride_t[1:], plane_padding, dilation_t[1:], groups)
    y = permute(reshape(y, n, od, out_channels, *y.shape[2:]), 0, 2, 1, 3, 4)
    return reshape(y, *y.shape[1:]) if unbatched else y


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """3-D transposed convolution of ``x`` (N, C, D, H, W) with ``weight`` (C, O / groups,
    KD, KH, KW), as torch's (the adjoint of ``conv3d`` with the same arguments);
    ``output_padding`` (smaller than the stride or the dilation) extends each axis's end.

    Example:
        >>> burn.conv_transpose3d(burn.ones((1, 4, 3, 4, 4)), burn.ones((4, 2, 3, 3, 3)),
        ...                       stride=2, padding=1, output_padding=1).shape
        (1, 2, 6, 8, 8)
    """
    x, weight, bias, unbatched, stride_t, pads, extra, dilation_t, _ = transposed_arguments(
        "conv_transpose3d", x, weight, bias, stride, padding, output_padding, dilation, groups,
        3)
    kernel = tuple(weight.shape[2:])
    c_in, per_group = weight.shape[:2]
    grouped = reshape(weight, groups, c_in // groups, per_group, *kernel)
    swapped = reshape(permute(grouped, 0, 2, 1, 3, 4, 5), groups * per_group,
                      c_in // groups, *kernel)
    spread = x
    for axis, (s, k, p, e, d) in enumerate(zip(stride_t, kernel, pads, extra, dilation_t)):
        reach = (k - 1) * d - p
        spread = _reach(_spread(spread, 2 + axis, s), 2 + axis, reach, reach + e)
    y = conv3d(spread, flip(swapped, (2, 3, 4)), bias, 1, 0, dilation_t, groups)
    return reshape(y, *y.shape[1:]) if unbatched else y


def _spread(x: Tensor, axis: int, stride: int) -> Tensor:
    """``x`` with ``stride - 1`` zeros after each element along ``axis`` (none after the
    last)."""
    size = x.shape[axis]
    if stride == 1 or size == 0:
        return x
    pads = [0] * (2 * (x.ndim - axis))  # burn.pad lists axes from the last backwards
    pads[-1] = stride - 1  # after the new axis, which sits right after `axis`
    spread = pad(unsqueeze(x, axis + 1), pads, 0)
    joined = reshape(spread, *x.shape[:axis], size * stride, *x.shape[axis + 1:])
    return narrow(joined, axis, 0, (size - 1) * stride + 1)


def _reach(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    """``x`` along ``axis`` zero-padded by ``before``/``after``, or cropped where they are
    negative (more padding than the kernel reaches)."""
    start = max(-before, 0)
    length = x.shape[axis] - start - max(-after, 0)
    if start or length != x.shape[axis]:
        x = narrow(x, axis, start, length)
    if before > 0 or after > 0:
        pads = [0] * (2 * (x.ndim - axis))
        pads[-2:] = [max(before, 0), max(after, 0)]
        x = pad(x, pads, 0)
    return x


def max_pool3d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """Maximum over sliding windows of ``x`` (N, C, D, H, W), padding with -inf;
    ``ceil_mode`` adds last partial windows (torch's).

    Example:
        >>> burn.max_pool3d(burn.ones((1, 2, 5, 5, 5)), 3, stride=2, padding=1).shape
        (1, 2, 3, 3, 3)
    """
    op = "max_pool3d"
    x, unbatched = _batched(x, 3, op)
    _floating(op, (x,))
    kernel, stride_t, pads, dilation_t = _pool_geometry(op, x, kernel_size, stride, padding,
                                                        dilation, 3)
    n, c, depth, h, w = x.shape
    planes = max_pool2d(reshape(x, n, c * depth, h, w), kernel[1:], stride_t[1:], pads[1:],
                        dilation_t[1:], ceil_mode)
    oh, ow = planes.shape[2:]
    y = max_pool2d(reshape(planes, n, c, depth, oh * ow), (kernel[0], 1), (stride_t[0], 1),
                   (pads[0], 0), (dilation_t[0], 1), ceil_mode)
    y = reshape(y, n, c, y.shape[2], oh, ow)
    return reshape(y, *y.shape[1:]) if unbatched else y


def avg_pool3d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of ``x`` (N, C, D, H, W) as torch's: padding counted unless
    ``count_include_pad=False``, ``ceil_mode``'s last partial windows, ``divisor_override``;
    16-bit inputs averaged in float32 and rounded once.

    Example:
        >>> burn.avg_pool3d(burn.ones((1, 1, 4, 4, 4)), 2, padding=1,
        ...                 count_include_pad=False).tolist()[0][0][0][0]
        [1.0, 1.0, 1.0]
    """
    op = "avg_pool3d"
    x, unbatched = _batched(x, 3, op)
    _floating(op, (x,))
    check_divisor(op, divisor_override)
    kernel, stride_t, pads, _ = _pool_geometry(op, x, kernel_size, stride, padding, 1, 3)
    n, c, depth, h, w = x.shape
    values = _as_dtype(x, _compute_dtype(x.dtype))
    # the planes' sums when a divisor overrides torch's, so that the depth pass divides once
    planes = avg_pool2d(reshape(values, n, c * depth, h, w), kernel[1:], stride_t[1:],
                        pads[1:], ceil_mode, count_include_pad,
                        None if divisor_override is None else 1)
    oh, ow = planes.shape[2:]
    y = avg_pool2d(reshape(planes, n, c, depth, oh * ow), (kernel[0], 1), (stride_t[0], 1),
                   (pads[0], 0), ceil_mode, count_include_pad, divisor_override)
    y = _as_dtype(reshape(y, n, c, y.shape[2], oh, ow), x.dtype)
    return reshape(y, *y.shape[1:]) if unbatched else y


def adaptive_avg_pool3d(x: Tensor, output_size: Any) -> Tensor:
    """Mean of ``x`` (N, C, D, H, W) over an ``output_size`` grid of windows that tile it
    (``None`` keeps an axis's size); ``(1, 1, 1)`` is global average pooling. 16-bit inputs
    are averaged in float32 and rounded once.

    Example:
        >>> burn.adaptive_avg_pool3d(burn.ones((2, 3, 4, 7, 7)), (1, 1, 1)).shape
        (2, 3, 1, 1, 1)
    """
    op = "adaptive_avg_pool3d"
    x, unbatched = _batched(x, 3, op)
    _floating(op, (x,))
    depth_out, rows, cols = adaptive_sizes(op, x, output_size, 3)
    n, c, depth, h, w = x.shape
    values = _as_dtype(x, _compute_dtype(x.dtype))
    planes = adaptive_avg_pool2d(reshape(values, n, c * depth, h, w), (rows, cols))
    y = adaptive_avg_pool2d(reshape(planes, n, c, depth, rows * cols), (depth_out, None))
    y = _as_dtype(reshape(y, n, c, depth_out, rows, cols), x.dtype)
    return reshape(y, *y.shape[1:]) if unbatched else y
