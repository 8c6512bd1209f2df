"""Matrix products, convolutions and pooling on tensors.

- ``matmul(a, b)`` (also ``a @ b``, ``a.matmul(b)``) follows NumPy and torch: 1-D operands
  are vectors (a row on the left, a column on the right, the added axis removed from the
  result), more than two dimensions are batches of matrices whose batch axes broadcast.
  Operands promote like elementwise ops; bool is refused. Floats accumulate in float32
  (float64 for float64) and the result has the promoted dtype (16-bit floats rounded once).
  Integers accumulate in int32 (int64 for int64) and wrap around on overflow like NumPy's; the
  result keeps the integer dtype unless ``out_dtype`` asks for the accumulator's
  (``burn.matmul(a8, b8, out_dtype=burn.int32)`` keeps int8 products exact).
- ``conv1d``/``conv2d`` and the pools follow ``torch.nn.functional``: inputs (N, C, L) /
  (N, C, H, W), or without the batch axis; weights (O, C / groups, k...); ``stride``,
  ``padding``, ``dilation`` as ints or tuples; ``padding="same"`` (stride 1, pads
  asymmetrically like torch) or ``"valid"``. Floating dtypes only. Average pooling counts the
  padding unless ``count_include_pad=False``; max pooling pads with -inf; ``ceil_mode``
  adds last partial windows, as torch's.
- ``conv_transpose1d``/``conv_transpose2d`` are in ``conv_transpose``.

Example:
    >>> a = burn.ones((2, 3)); b = burn.ones((3, 4))
    >>> (a @ b).shape, burn.matmul(burn.ones(3), b).shape
    ((2, 4), (4,))
    >>> burn.conv2d(burn.ones((1, 3, 8, 8)), burn.ones((4, 3, 3, 3)), padding=1).shape
    (1, 4, 8, 8)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from kernels.matmul import accumulator

from ..backend.base import BurnError
from .creation import from_numpy
from .index import pad as pad_tensor
from .tensor import Tensor, same_backend, tensor_method
from .views import broadcast_shapes, expand, reshape, unsqueeze

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "conv1d",
           "conv2d", "matmul", "max_pool1d", "max_pool2d"]


# ---- matmul ----

def _common_dtype(tensors: Sequence[Tensor]) -> DType:
    common = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype != common:
            common = dt.promote(common, t.dtype)
    return common


def _as_dtype(x: Tensor, dtype: DType) -> Tensor:
    return x if x.dtype == dtype else Tensor(x.backend.cast(x.prim, dtype), x.backend)


def _matmul_out_dtype(common: DType, out_dtype: DType | None, shapes: str) -> DType:
    if common.is_bool:
        raise BurnError(f"matmul: not defined for bool tensors ({shapes}); cast with "
                        ".to(burn.int32)")
    if out_dtype is None or out_dtype == common:
        return common
    if out_dtype != accumulator(common):
        raise BurnError(f"matmul: out_dtype {out_dtype.name} is not available for {common.name} "
                        f"operands; use {common.name} or {accumulator(common).name}")
    return out_dtype


@tensor_method
def matmul(a: Tensor, b: Tensor, *, out_dtype: DType | None = None) -> Tensor:
    """The matrix product of ``a`` and ``b`` with NumPy's rules (see the module docstring).

    Example:
        >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> (x @ x).tolist()
        [[7.0, 10.0], [15.0, 22.0]]
    """
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise BurnError(f"matmul: operands must be tensors, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    backend = same_backend("matmul", a, b)
    a_view, b_view = a.prim, b.prim
    if (out_dtype is None and len(a_view.shape) == 2 and len(b_view.shape) == 2
            and a_view.dtype == b_view.dtype and not a_view.dtype.is_bool
            and a_view.shape[1] == b_view.shape[0]):
        # two matrices of one dtype, the common case: nothing to promote, broadcast or reshape
        # (a small product's time on a GPU is mostly its host path: BENCHMARKS.md, runs 40-41)
        return Tensor(backend.matmul(a_view, b_view, a_view.dtype), backend)
    shapes = f"shapes {a.shape} and {b.shape}"
    if a.ndim == 0 or b.ndim == 0:
        raise BurnError(f"matmul: both operands need at least one dimension, got {shapes}")
    common = _common_dtype((a, b))
    out = _matmul_out_dtype(common, out_dtype, shapes)
    a2 = unsqueeze(a, 0) if a.ndim == 1 else a
    b2 = unsqueeze(b, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise BurnError(f"matmul: {shapes} do not fit: the inner sizes {a2.shape[-1]} and "
                        f"{b2.shape[-2]} differ")
    a2, b2 = _as_dtype(a2, common), _as_dtype(b2, common)
    if a2.ndim > 2 or b2.ndim > 2:
        try:
            batch = broadcast_shapes("matmul", a2.shape[:-2], b2.shape[:-2])
        except BurnError:
            raise BurnError(f"matmul: {shapes} do not broadcast (batch axes {a2.shape[:-2]} and "
                            f"{b2.shape[:-2]})") from None
        a2 = expand(a2, *batch, *a2.shape[-2:])
        b2 = expand(b2, *batch, *b2.shape[-2:])
    result = Tensor(backend.matmul(a2.prim, b2.prim, out), backend)
    if a.ndim == 1 or b.ndim == 1:  # drop the axes the vectors were given
        *batch, m, n = result.shape
        result = reshape(result, *batch, *([m] if a.ndim > 1 else []),
                         *([n] if b.ndim > 1 else []))
    return result


Tensor.__matmul__ = matmul  # type: ignore[attr-defined]
Tensor.__rmatmul__ = lambda b, a: matmul(a, b)  # type: ignore[attr-defined]


# ---- argument normalization shared by convolution and pooling ----

def _tuple(value: Any, n: int, name: str, op: str, least: int) -> tuple[int, ...]:
    """An int or a sequence of ``n`` ints, each at least ``least``, as a tuple."""
    values = (value,) * n if isinstance(value, int) else \
        tuple(value) if isinstance(value, (tuple, list)) else ()
    if len(values) != n or not all(isinstance(v, int) for v in values):
        raise BurnError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if any(v < least for v in values):
        raise BurnError(f"{op}: {name} must be at least {least}, got {value!r}")
    return values


def _batched(x: Tensor, spatial: int, op: str) -> tuple[Tensor, bool]:
    """``x`` with its batch axis (added if ``x`` has none) and whether it was added."""
    if not isinstance(x, Tensor):
        raise BurnError(f"{op}: the input must be a tensor, got {type(x).__name__}")
    if x.ndim == spatial + 1:
        return unsqueeze(x, 0), True
    if x.ndim != spatial + 2:
        raise BurnError(f"{op}: expected a {spatial + 2}-D (batched) or {spatial + 1}-D input, "
                        f"got shape {x.shape}")
    return x, False


def _floating(op: str, tensors: Sequence[Tensor]) -> DType:
    common = _common_dtype(tensors)
    if not common.is_float:
        names = " and ".join(t.dtype.name for t in tensors)
        raise BurnError(f"{op}: needs floating tensors, got {names}; cast with "
                        ".to(burn.float32)")
    return common


def _out_size(op: str, size: int, kernel: int, stride: int, pad: int, dilation: int,
              shape: Sequence[int]) -> int:
    span = dilation * (kernel - 1) + 1
    if size + 2 * pad < span:
        raise BurnError(f"{op}: the (dilated) kernel of size {span} is larger than the padded "
                        f"input ({size} + 2 * {pad}) of shape {tuple(shape)}")
    return (size + 2 * pad - span) // stride + 1


def _as_2d(x: Tensor) -> Tensor:
    """(N, C, L) as an (N, C, 1, L) view."""
    return unsqueeze(x, 2)


def _from_2d(y: Tensor, unbatched: bool) -> Tensor:
    y = reshape(y, y.shape[0], y.shape[1], y.shape[3])
    return reshape(y, *y.shape[1:]) if unbatched else y


def _lifted(x: Tensor, weight: Tensor, spatial: int, stride: tuple[int, ...],
            pad: tuple[int, ...], dilation: tuple[int, ...], sizes: tuple[int, ...]) -> tuple:
    """A convolution's batched operands and arguments in 2-D: 1-D ones get a height of 1."""
    if spatial == 2:
        return x, weight, stride, pad, dilation, sizes
    return _as_2d(x), _as_2d(weight), (1, *stride), (0, *pad), (1, *dilation), (1, *sizes)


def _unlifted(y: Tensor, spatial: int, unbatched: bool) -> Tensor:
    """The 2-D result of a ``_lifted`` convolution in the input's own rank."""
    if spatial == 1:
        return _from_2d(y, unbatched)
    return reshape(y, *y.shape[1:]) if unbatched else y


# ---- convolution ----

def _conv_padding(padding: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
                  dilation: tuple[int, ...], op: str) -> tuple[tuple[int, ...], bool]:
    """(padding before each spatial axis, whether it is ``"same"``)."""
    if padding == "valid":
        return (0,) * len(kernel), False
    if padding == "same":
        if any(s != 1 for s in stride):
            raise BurnError(f"{op}: padding='same' needs stride 1, got stride {stride}")
        return tuple(d * (k - 1) // 2 for k, d in zip(kernel, dilation)), True
    if isinstance(padding, str):
        raise BurnError(f"{op}: padding must be an int, ints, 'same' or 'valid', got {padding!r}")
    return _tuple(padding, len(kernel), "padding", op, 0), False


def _check_conv_operands(op: str, x: Tensor, weight: Tensor, bias: Tensor | None,
                         groups: int, spatial: int) -> None:
    if not isinstance(weight, Tensor) or weight.ndim != spatial + 2:
        raise BurnError(f"{op}: weight must be a {spatial + 2}-D tensor (out, in / groups, "
                        f"kernel...), got {getattr(weight, 'shape', weight)!r}")
    if not isinstance(groups, int) or groups < 1:
        raise BurnError(f"{op}: groups must be a positive int, got {groups!r}")
    out_channels, in_group = weight.shape[:2]
    if x.shape[1] != in_group * groups or out_channels % groups:
        raise BurnError(f"{op}: input of shape {x.shape} and weight of shape {weight.shape} do "
                        f"not fit with groups={groups}: need input channels = weight.shape[1] "
                        f"* groups and out channels divisible by groups")
    if bias is not None and (not isinstance(bias, Tensor) or bias.shape != (out_channels,)):
        raise BurnError(f"{op}: bias must be a tensor of shape ({out_channels},), got "
                        f"{getattr(bias, 'shape', bias)!r}")


def conv_arguments(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                   padding: Any, dilation: Any, groups: int, spatial: int) -> tuple[Any, ...]:
    """A convolution's checked operands in one dtype and its per-axis arguments: (batched x,
    weight, bias, whether the batch axis was added, stride, padding before each axis,
    dilation, whether the padding is ``"same"``, output sizes)."""
    x, unbatched = _batched(x, spatial, op)
    _check_conv_operands(op, x, weight, bias, groups, spatial)
    operands = (x, weight) if bias is None else (x, weight, bias)
    same_backend(op, *operands)
    dtype = _floating(op, operands)
    kernel = tuple(weight.shape[2:])
    stride_t = _tuple(stride, spatial, "stride", op, 1)
    dilation_t = _tuple(dilation, spatial, "dilation", op, 1)
    pad, same = _conv_padding(padding, kernel, stride_t, dilation_t, op)
    sizes = tuple(x.shape[2:]) if same else tuple(
        _out_size(op, n, k, s, p, d, x.shape)
        for n, k, s, p, d in zip(x.shape[2:], kernel, stride_t, pad, dilation_t))
    x, weight = _as_dtype(x, dtype), _as_dtype(weight, dtype)
    bias = None if bias is None else _as_dtype(bias, dtype)
    return x, weight, bias, unbatched, stride_t, pad, dilation_t, same, sizes


def _conv(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
          dilation: Any, groups: int, spatial: int) -> Tensor:
    x, weight, bias, unbatched, stride_t, pad, dilation_t, _, sizes = conv_arguments(
        op, x, weight, bias, stride, padding, dilation, groups, spatial)
    backend = x.backend
    x, weight, stride_t, pad, dilation_t, sizes = _lifted(x, weight, spatial, stride_t, pad,
                                                          dilation_t, sizes)
    y = Tensor(backend.conv2d(x.prim, weight.prim, None if bias is None else bias.prim,
                              stride_t, pad, dilation_t, groups, sizes), backend)
    return _unlifted(y, spatial, unbatched)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of ``x`` (N, C, L) with ``weight`` (O, C / groups, K).

    Example:
        >>> burn.conv1d(burn.ones((2, 4, 10)), burn.ones((8, 4, 3)), stride=2).shape
        (2, 8, 4)
    """
    return _conv("conv1d", x, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution of ``x`` (N, C, H, W) with ``weight`` (O, C / groups, KH, KW).

    Example:
        >>> burn.conv2d(burn.ones((1, 4, 9, 9)), burn.ones((4, 1, 3, 3)), groups=4).shape
        (1, 4, 7, 7)
    """
    return _conv("conv2d", x, weight, bias, stride, padding, dilation, groups, 2)


# ---- pooling ----

def pool_windows(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
                 dilation: int, ceil_mode: bool) -> tuple[int, int]:
    """(windows along an axis of ``size``, padded by ``pad_begin``/``pad_end``; how far the
    last one reaches past the end padding). ``ceil_mode`` counts a last partial window, as
    torch and ONNX do, if it starts inside the input or its begin padding.

    Example:
        >>> pool_windows(6, 3, 2, 0, 0, 1, ceil_mode=True)  # [0:3] [2:5] [4:6]
        (3, 1)
    """
    reach = size + pad_begin + pad_end - ((kernel - 1) * dilation + 1)
    windows = (-(-reach // stride) if ceil_mode else reach // stride) + 1
    if ceil_mode and (windows - 1) * stride >= size + pad_begin:
        windows -= 1
    overhang = (windows - 1) * stride + (kernel - 1) * dilation + 1 - (size + pad_begin
                                                                        + pad_end)
    return windows, max(overhang, 0)


def _pool_geometry(op: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any,
                   dilation: Any, spatial: int) -> tuple[tuple[int, ...], ...]:
    """(kernel, stride, padding, dilation) of a pool, each one int per spatial axis."""
    kernel = _tuple(kernel_size, spatial, "kernel_size", op, 1)
    stride_t = kernel if stride is None else _tuple(stride, spatial, "stride", op, 1)
    pad = _tuple(padding, spatial, "padding", op, 0)
    dilation_t = _tuple(dilation, spatial, "dilation", op, 1)
    if any(2 * p > d * (k - 1) + 1 for p, k, d in zip(pad, kernel, dilation_t)):
        raise BurnError(f"{op}: padding {pad} must be at most half the kernel size {kernel}")
    for n, k, p, d in zip(x.shape[2:], kernel, pad, dilation_t):
        _out_size(op, n, k, 1, p, d, x.shape)  # the kernel fits the padded input
    return kernel, stride_t, pad, dilation_t


def _pool(op: str, kind: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any,
          dilation: Any, spatial: int, ceil_mode: bool = False,
          count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    x, unbatched = _batched(x, spatial, op)
    _floating(op, (x,))
    kernel, stride_t, pad, dilation_t = _pool_geometry(op, x, kernel_size, stride, padding,
                                                       dilation, spatial)
    windows = [pool_windows(n, k, s, p, p, d, ceil_mode)
               for n, k, s, p, d in zip(x.shape[2:], kernel, stride_t, pad, dilation_t)]
    sizes = tuple(w for w, _ in windows)
    overhang = [extra for _, extra in windows]
    scale = _avg_scale(x, kernel, stride_t, pad, sizes, count_include_pad,
                       divisor_override) if kind == "avg" else None
    source = x if scale is None else _as_dtype(x, _compute_dtype(x.dtype))
    if any(overhang):  # ceil_mode's last windows: room past the end, which no window counts
        fill = -float("inf") if kind == "max" else 0.0
        source = pad_tensor(source, [v for extra in reversed(overhang) for v in (0, extra)],
                            fill)
    if spatial == 1:
        source = _as_2d(source)
        kernel, stride_t, pad, dilation_t, sizes = ((1, *kernel), (1, *stride_t), (0, *pad),
                                                    (1, *dilation_t), (1, *sizes))
    y = Tensor(source.backend.pool2d(kind, source.prim, kernel, stride_t, pad, dilation_t,
                                     sizes), source.backend)
    if scale is not None:  # the kernel divided by the whole window: torch's divisor instead
        y = _as_dtype(y * scale, x.dtype)
    if spatial == 1:
        return _from_2d(y, unbatched)
    return reshape(y, *y.shape[1:]) if unbatched else y


def check_divisor(op: str, divisor_override: Any) -> None:
    """``divisor_override`` is None or a positive int."""
    if divisor_override is not None and (not isinstance(divisor_override, int)
                                         or isinstance(divisor_override, bool)
                                         or divisor_override < 1):
        raise BurnError(f"{op}: divisor_override must be a positive int, got "
                        f"{divisor_override!r}")


def _compute_dtype(dtype: DType) -> DType:
    return dt.float32 if dtype.bits < 32 else dtype


_AVG_SCALES: dict[tuple, Tensor] = {}  # device divisor maps of torch's averages, by geometry
_AVG_SCALES_KEPT = 64


def _avg_scale(x: Tensor, kernel: tuple[int, ...], stride: tuple[int, ...],
               pad: tuple[int, ...], sizes: tuple[int, ...], count_include_pad: bool,
               divisor_override: int | None) -> Any:
    """What turns the kernel's mean over the whole window into torch's average: None where
    they agree, else a number or a tensor of the output's spatial shape (computed on the
    host: it depends on the shape only)."""
    window = math.prod(kernel)
    if divisor_override is not None:
        return window / divisor_override
    counts = []
    for n, k, s, p, out in zip(x.shape[2:], kernel, stride, pad, sizes):
        starts = np.arange(out) * s - p
        ends = np.minimum(starts + k, n + p)  # ceil_mode's room past the padding never counts
        if not count_include_pad:
            starts, ends = np.maximum(starts, 0), np.minimum(ends, n)
        counts.append(ends - starts)
    divisor = functools.reduce(np.multiply.outer, counts)
    if (divisor == window).all():
        return None
    key = (x.backend, _compute_dtype(x.dtype).name, divisor.shape, divisor.tobytes(), window)
    if key not in _AVG_SCALES:  # uploaded once per geometry, as pad's index tables are
        if len(_AVG_SCALES) >= _AVG_SCALES_KEPT:
            _AVG_SCALES.pop(next(iter(_AVG_SCALES)))
        _AVG_SCALES[key] = from_numpy((window / divisor).astype(
            _compute_dtype(x.dtype).numpy), backend=x.backend)
    return _AVG_SCALES[key]


def max_pool1d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """Maximum over sliding windows of ``x`` (N, C, L); ``stride`` defaults to the kernel size;
    ``ceil_mode`` adds a last partial window (torch's).

    Example:
        >>> burn.max_pool1d(burn.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2).tolist()
        [[[3.0, 5.0]]]
        >>> burn.max_pool1d(burn.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2, ceil_mode=True).tolist()
        [[[3.0, 5.0, 4.0]]]
    """
    return _pool("max_pool1d", "max", x, kernel_size, stride, padding, dilation, 1, ceil_mode)


def max_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """Maximum over sliding windows of ``x`` (N, C, H, W), padding with -inf; ``ceil_mode``
    adds last partial windows (torch's).

    Example:
        >>> burn.max_pool2d(burn.ones((1, 2, 8, 8)), 2).shape
        (1, 2, 4, 4)
        >>> burn.max_pool2d(burn.ones((1, 2, 7, 7)), 2, ceil_mode=True).shape
        (1, 2, 4, 4)
    """
    return _pool("max_pool2d", "max", x, kernel_size, stride, padding, dilation, 2, ceil_mode)


def avg_pool1d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of ``x`` (N, C, L) as torch's: padding counted in the divisor
    unless ``count_include_pad=False``; ``ceil_mode``'s last partial window divides by what
    it covers of the input and padding.

    Example:
        >>> burn.avg_pool1d(burn.tensor([[[1.0, 3.0, 2.0, 6.0]]]), 2).tolist()
        [[[2.0, 4.0]]]
        >>> burn.avg_pool1d(burn.arange(6.0).reshape(1, 1, 6), 3, 2, ceil_mode=True).tolist()
        [[[1.0, 3.0, 4.5]]]
    """
    return _pool("avg_pool1d", "avg", x, kernel_size, stride, padding, 1, 1, ceil_mode,
                 count_include_pad)


def avg_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of ``x`` (N, C, H, W) as torch's: padding counted in the
    divisor unless ``count_include_pad=False``; ``ceil_mode`` adds last partial windows
    (divided by what they cover of the input and padding); ``divisor_override`` divides
    every window's sum by that number instead.

    Example:
        >>> burn.avg_pool2d(burn.ones((1, 2, 8, 8)), 2, padding=1).shape
        (1, 2, 5, 5)
        >>> burn.avg_pool2d(burn.ones((1, 1, 2, 2)), 2, padding=1,
        ...                 count_include_pad=False).tolist()
        [[[[1.0, 1.0], [1.0, 1.0]]]]
    """
    check_divisor("avg_pool2d", divisor_override)
    return _pool("avg_pool2d", "avg", x, kernel_size, stride, padding, 1, 2, ceil_mode,
                 count_include_pad, divisor_override)


def adaptive_sizes(op: str, x: Tensor, output_size: Any, spatial: int) -> tuple[int, ...]:
    """An adaptive pool's output size per spatial axis of the batched ``x`` (``None`` keeps
    the axis's size)."""
    sizes = (output_size,) * spatial if output_size is None or isinstance(output_size, int) \
        else tuple(output_size)
    if len(sizes) != spatial:
        raise BurnError(f"{op}: output_size must be an int or {spatial} ints, got "
                        f"{output_size!r}")
    sizes = tuple(x.shape[2 + i] if s is None else s for i, s in enumerate(sizes))
    if not all(isinstance(s, int) and s >= 1 for s in sizes):
        raise BurnError(f"{op}: output_size must be positive ints, got {output_size!r}")
    return sizes


def _adaptive(op: str, x: Tensor, output_size: Any, spatial: int) -> Tensor:
    x, unbatched = _batched(x, spatial, op)
    _floating(op, (x,))
    sizes = adaptive_sizes(op, x, output_size, spatial)
    if spatial == 1:
        x, sizes = _as_2d(x), (1, *sizes)
    y = Tensor(x.backend.adaptive_avg_pool2d(x.prim, sizes), x.backend)
    if spatial == 1:
        return _from_2d(y, unbatched)
    return reshape(y, *y.shape[1:]) if unbatched else y


def adaptive_avg_pool1d(x: Tensor, output_size: Any) -> Tensor:
    """Mean of ``x`` (N, C, L) over ``output_size`` windows that tile the length.

    Example:
        >>> burn.adaptive_avg_pool1d(burn.tensor([[[1.0, 3.0, 2.0, 6.0]]]), 1).tolist()
        [[[3.0]]]
    """
    return _adaptive("adaptive_avg_pool1d", x, output_size, 1)


def adaptive_avg_pool2d(x: Tensor, output_size: Any) -> Tensor:
    """Mean of ``x`` (N, C, H, W) over an ``output_size`` grid of windows (``None`` keeps an
    axis's size); ``(1, 1)`` is global average pooling.

    Example:
        >>> burn.adaptive_avg_pool2d(burn.ones((2, 3, 7, 7)), (1, 1)).shape
        (2, 3, 1, 1)
    """
    return _adaptive("adaptive_avg_pool2d", x, output_size, 2)
