"""ONNX's layers: convolutions, pooling and normalizations, on burn's kernels.

ONNX pads each spatial axis at both ends separately (``pads = [x1_begin, x2_begin, ...,
x1_end, x2_end, ...]``); burn's kernels pad both ends alike, so uneven pads are applied with
``burn.pad`` first (with -inf for max pooling) and the kernel pads nothing.

Example:
    >>> attrs = burn.onnx.registry.Attributes({"kernel_shape": [2, 2], "strides": [2, 2]},
    ...                                       "MaxPool")
    >>> burn.onnx.OPERATORS["MaxPool"].run(attrs, burn.ones((1, 1, 4, 4))).shape
    (1, 1, 2, 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..backend.base import BurnError
from ..tensor.linalg import pool_windows
from ..tensor.reduce import float_dtypes
from ..tensor.tensor import Tensor
from .registry import Attributes, operator, ops

_CONV = {1: ops.conv1d, 2: ops.conv2d, 3: ops.conv3d}
_CONV_T = {1: ops.conv_transpose1d, 2: ops.conv_transpose2d, 3: ops.conv_transpose3d}
_MAX_POOL = {1: ops.max_pool1d, 2: ops.max_pool2d, 3: ops.max_pool3d}
_AVG_POOL = {1: ops.avg_pool1d, 2: ops.avg_pool2d, 3: ops.avg_pool3d}


def _spatial(attrs: Attributes, x: Tensor) -> int:
    dims = x.ndim - 2
    if not 1 <= dims <= 3:
        raise attrs.refuse(f"a {dims}-d {attrs.op_type} (input {x.shape})",
                           "burn runs 1-d to 3-d ones")
    return dims


def _pads(attrs: Attributes, sizes: tuple[int, ...], kernel: list[int], strides: list[int],
          dilations: list[int]) -> list[int]:
    """[begins..., ends...] of each spatial axis, from ``pads`` or ``auto_pad``."""
    auto = attrs.str("auto_pad", "NOTSET")
    if auto in ("NOTSET", "VALID"):
        listed = attrs.ints("pads") if auto == "NOTSET" else None
        return listed or [0] * (2 * len(sizes))
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise attrs.refuse(f"auto_pad={auto!r}", "ONNX defines NOTSET, VALID, SAME_UPPER "
                           "and SAME_LOWER")
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(small if auto == "SAME_UPPER" else large)
        ends.append(large if auto == "SAME_UPPER" else small)
    return begins + ends


def _padded(x: Tensor, pads: list[int], fill: float) -> tuple[Tensor, list[int]]:
    """``x`` padded by ``pads`` where begin and end differ (then no pad is left for the
    kernel), else ``x`` and the per-axis pad for the kernel."""
    dims = len(pads) // 2
    if pads[:dims] == pads[dims:]:
        return x, pads[:dims]
    return _pad_all(x, pads, fill), [0] * dims


def _pad_all(x: Tensor, pads: list[int], fill: float) -> Tensor:
    """``x`` with ONNX's ``pads`` applied (burn.pad lists axes from the last backwards)."""
    dims = len(pads) // 2
    if not any(pads):
        return x
    torch_order = []
    for begin, end in zip(reversed(pads[:dims]), reversed(pads[dims:])):
        torch_order += [begin, end]
    return ops.pad(x, torch_order, fill)


def _window(attrs: Attributes, x: Tensor, kernel: list[int]) -> tuple[list[int], list[int]]:
    dims = len(kernel)
    return attrs.ints("strides") or [1] * dims, attrs.ints("dilations") or [1] * dims


@operator("Conv")
def conv(attrs: Attributes, x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    dims = _spatial(attrs, x)
    kernel = attrs.ints("kernel_shape") or list(weight.shape[2:])
    strides, dilations = _window(attrs, x, kernel)
    pads = _pads(attrs, x.shape[2:], kernel, strides, dilations)
    x, padding = _padded(x, pads, 0.0)
    return _CONV[dims](x, weight, bias, stride=tuple(strides), padding=tuple(padding),
                       dilation=tuple(dilations), groups=attrs.int("group", 1))


@operator("ConvTranspose")
def conv_transpose(attrs: Attributes, x: Tensor, weight: Tensor,
                   bias: Tensor | None = None) -> Tensor:
    dims = _spatial(attrs, x)
    if attrs.has("output_shape") or attrs.str("auto_pad", "NOTSET") != "NOTSET":
        raise attrs.refuse("output_shape or auto_pad", "give pads (and output_padding)")
    kernel = attrs.ints("kernel_shape") or list(weight.shape[2:])
    strides, dilations = _window(attrs, x, kernel)
    pads = attrs.ints("pads") or [0] * (2 * dims)
    out_padding = attrs.ints("output_padding") or [0] * dims
    begins, ends = pads[:dims], pads[dims:]
    even = begins == ends
    y = _CONV_T[dims](x, weight, bias, stride=tuple(strides),
                      padding=tuple(begins) if even else 0,
                      output_padding=tuple(out_padding), groups=attrs.int("group", 1),
                      dilation=tuple(dilations))
    if even:
        return y
    key = (slice(None), slice(None), *(slice(b, y.shape[2 + i] - e)
                                       for i, (b, e) in enumerate(zip(begins, ends))))
    return y[key]


def _ceil_pads(attrs: Attributes, x: Tensor, kernel: list[int], strides: list[int],
               dilations: list[int], pads: list[int]) -> list[int]:
    """Pads with room for ``ceil_mode``'s last, partial window at each axis's end (a window
    must still start inside the input or its begin pad)."""
    if not attrs.int("ceil_mode", 0):
        return pads
    dims = len(kernel)
    ends = list(pads[dims:])
    for i, (size, k, s, d) in enumerate(zip(x.shape[2:], kernel, strides, dilations)):
        ends[i] += pool_windows(size, k, s, pads[i], pads[dims + i], d, ceil_mode=True)[1]
    return list(pads[:dims]) + ends


@operator("MaxPool")
def max_pool(attrs: Attributes, x: Tensor) -> Tensor:
    dims = _spatial(attrs, x)
    if attrs.outputs > 1:
        raise attrs.refuse("MaxPool's Indices output", "use the pooled values only")
    if attrs.int("storage_order", 0):
        raise attrs.refuse("storage_order=1", "")
    kernel = attrs.ints("kernel_shape")
    strides, dilations = _window(attrs, x, kernel)
    pads = _ceil_pads(attrs, x, kernel, strides, dilations,
                      _pads(attrs, x.shape[2:], kernel, strides, dilations))
    x, padding = _padded(x, pads, -math.inf)
    return _MAX_POOL[dims](x, tuple(kernel), tuple(strides), tuple(padding), tuple(dilations))


@operator("AveragePool")
def average_pool(attrs: Attributes, x: Tensor) -> Tensor:
    dims = _spatial(attrs, x)
    kernel = attrs.ints("kernel_shape")
    strides, dilations = _window(attrs, x, kernel)
    if dilations != [1] * dims:
        raise attrs.refuse(f"dilations {dilations}", "pool with dilations of 1")
    declared = _pads(attrs, x.shape[2:], kernel, strides, dilations)
    pads = _ceil_pads(attrs, x, kernel, strides, dilations, declared)
    window = math.prod(kernel)
    summed = _AVG_POOL[dims](_pad_all(x, pads, 0.0), tuple(kernel), tuple(strides)) * window
    if not any(pads):
        return summed / window
    # the divisor counts the input's cells, and the declared pads when count_include_pad is
    # set; never the room ceil_mode adds
    counted = ops.ones((1, 1, *x.shape[2:]), x.dtype, x.backend)
    if attrs.int("count_include_pad", 0):
        extra = [0] * dims + [p - d for p, d in zip(pads[dims:], declared[dims:])]
        counts = _pad_all(_pad_all(counted, declared, 1.0), extra, 0.0)
    else:
        counts = _pad_all(counted, pads, 0.0)
    divisor = _AVG_POOL[dims](counts, tuple(kernel), tuple(strides)) * window
    return summed / divisor


def _global(reduce_fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The operator reducing every spatial axis (2 on) with ``reduce_fn``, keeping them."""
    def run(attrs: Attributes, x: Tensor) -> Tensor:
        return reduce_fn(x, tuple(range(2, x.ndim)), True)
    return run


operator("GlobalAveragePool")(_global(ops.mean))
operator("GlobalMaxPool")(_global(ops.max))


@operator("BatchNormalization")
def batch_norm(attrs: Attributes, x: Tensor, scale: Tensor, bias: Tensor, mean: Tensor,
               var: Tensor) -> Tensor | list[Tensor]:
    eps = attrs.float("epsilon", 1e-5)
    if not attrs.int("training_mode", 0):
        if attrs.outputs > 1:
            raise attrs.refuse("BatchNormalization's running statistics outputs in "
                               "inference mode", "use Y only (they are outputs of "
                               "training_mode=1)")
        return ops.batch_norm(x, mean, var, scale, bias, eps=eps)
    # training mode (opset 14 on): the batch's statistics normalize, and the running ones
    # come out moved toward them (ONNX's momentum weighs the old value; the biased variance)
    compute, out_dtype = float_dtypes(x)
    backend = x.backend
    y, batch_mean, batch_var = backend.batch_norm(x.prim, None, None, scale.prim, bias.prim,
                                                  eps, compute, out_dtype)
    momentum = attrs.float("momentum", 0.9)
    moved = [(Tensor(batch, backend).to(old.dtype) * (1 - momentum) + old * momentum)
             for batch, old in ((batch_mean, mean), (batch_var, var))]
    return [Tensor(y, backend), *moved][:attrs.outputs]


@operator("LayerNormalization")
def layer_norm(attrs: Attributes, x: Tensor, scale: Tensor,
               bias: Tensor | None = None) -> Tensor:
    if attrs.outputs > 1:
        raise attrs.refuse("LayerNormalization's Mean and InvStdDev outputs", "use Y only")
    axis = attrs.int("axis", -1)
    axis = axis if axis >= 0 else axis + x.ndim
    normalized = x.shape[axis:]
    eps = attrs.float("epsilon", 1e-5)
    if scale.shape == normalized and (bias is None or bias.shape == normalized):
        return ops.layer_norm(x, normalized, scale, bias, eps)
    y = ops.layer_norm(x, normalized, None, None, eps) * scale  # scales that broadcast
    return y if bias is None else y + bias


@operator("InstanceNormalization")
def instance_norm(attrs: Attributes, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    axes = tuple(range(2, x.ndim))
    if not axes:
        raise BurnError(f"InstanceNormalization: the input {x.shape} has no spatial axis")
    return ops.group_norm(x, x.shape[1], scale, bias, attrs.float("epsilon", 1e-5))


@operator("GroupNormalization")
def group_norm(attrs: Attributes, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    groups = attrs.int("num_groups")
    if x.ndim < 2 or groups < 1 or x.shape[1] % groups:
        raise BurnError(f"GroupNormalization: num_groups {groups} must divide the channels "
                        f"of the input {x.shape}")
    if attrs.version < 21 and scale.shape == (groups,):  # opset 18: one scale per group
        per_group = x.shape[1] // groups
        scale, bias = (ops.reshape(ops.expand(ops.reshape(v, groups, 1), groups, per_group),
                                   x.shape[1]) for v in (scale, bias))
    return ops.group_norm(x, groups, scale, bias, attrs.float("epsilon", 1e-5))
