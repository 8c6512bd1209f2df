"""Reductions, scans, softmax and normalizations on tensors.

Axes are given as ``axis`` (or torch's ``dim``): an int, a sequence of ints or None (every
axis); ``keepdim=True`` keeps reduced axes as size 1. dtype rules (the same on every backend):

- ``sum``, ``prod``, ``cumsum``, ``cumprod``: bool and integers accumulate and return int64
  (int32 on a backend without int64, such as a WebGPU adapter lacking it); float16 and
  bfloat16 accumulate in float32 and return their dtype.
- ``mean``, ``var``, ``std``, ``logsumexp``, ``softmax``, ``log_softmax``, ``layer_norm``,
  ``rms_norm``: float results; bool and integers promote to float32.
- ``max``, ``min`` keep the dtype (they are torch's ``amax``/``amin``: values only);
  ``argmax``, ``argmin`` return int64 indices (int32 where the backend lacks int64), the
  first occurrence on ties, as NumPy; ``any``, ``all`` return bool.
- Empty reductions: ``sum`` 0, ``prod`` 1, ``any`` False, ``all`` True, ``mean``/``var``
  NaN, ``logsumexp`` -inf; ``max``/``min``/``argmax``/``argmin`` raise ``BurnError``.
- NaN inputs follow each target's ``max``/``min``: propagation is not guaranteed.

Example:
    >>> x = burn.tensor([[1.0, 2.0], [3.0, 5.0]])
    >>> x.sum(1).tolist(), x.argmax().item(), burn.softmax(x, -1).shape
    ([3.0, 8.0], 3, (2, 2))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from kernels.layout import register

from ..backend.base import Backend, BurnError
from .tensor import Tensor, normalize_axes, normalize_axis, same_backend, tensor_method
from .views import reshape

__all__ = ["all", "any", "argmax", "argmin", "cumprod", "cumsum", "group_norm", "layer_norm",
           "log_softmax", "logsumexp", "max", "mean", "min", "prod", "rms_norm", "softmax", "std",
           "sum", "var"]


# ---------------------------------------------------------------- dtype rules

# machine epsilon of each float dtype (rms_norm's default eps, as torch's)
_EPSILON = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def _int_accumulator(backend: Backend) -> DType:
    return dt.int64 if "int64" in backend.dtypes else dt.int32


def _register_float(dtype: DType) -> DType:
    return dt.float32 if dtype.name in ("float16", "bfloat16") else dtype


def integral_dtypes(x: Tensor) -> tuple[DType, DType]:
    """(accumulator, result) of ``sum``/``prod``/``cumsum``/``cumprod`` on ``x``."""
    if x.dtype.is_float:
        return _register_float(x.dtype), x.dtype
    acc = _int_accumulator(x.backend)
    return acc, acc


def float_dtypes(x: Tensor) -> tuple[DType, DType]:
    """(compute, result) of the ops with float results: bool and integers give float32."""
    out = x.dtype if x.dtype.is_float else dt.float32
    return _register_float(out), out


# ---------------------------------------------------------------- axes


def _axes(x: Tensor, axis: Any, dim: Any, op: str) -> tuple[int, ...]:
    if dim is not None:
        if axis is not None:
            raise BurnError(f"{op}: give axis or dim, not both")
        axis = dim
    if x.ndim == 0:  # torch accepts axis 0 / -1 of a 0-d tensor: nothing to reduce
        if axis is not None:
            normalize_axes(axis, 0, op)
        return ()
    return normalize_axes(axis, x.ndim, op)


def _one_axis(x: Tensor, axis: Any, dim: Any, op: str) -> int:
    if dim is not None:
        axis = dim
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise BurnError(f"{op}: needs one axis (an int), got {axis!r}")
    return normalize_axis(axis, x.ndim, op)


def _count(x: Tensor, axes: Sequence[int]) -> int:
    return math.prod(x.shape[a] for a in axes)


def _finish(x: Tensor, view: Any, axes: Sequence[int], keepdim: bool) -> Tensor:
    """The reduced result as a tensor; with ``keepdim``, reduced axes come back as size 1."""
    out = Tensor(view, x.backend)
    if keepdim and x.ndim:
        out = reshape(out, *(1 if a in axes else n for a, n in enumerate(x.shape)))
    return out


def _refuse_empty(x: Tensor, axes: Sequence[int], op: str) -> None:
    if _count(x, axes) == 0:
        raise BurnError(f"{op}: cannot reduce an empty axis (shape {x.shape}, axes "
                        f"{tuple(axes)}); the result would have no value")


# ---------------------------------------------------------------- reductions


def _reduce(op: str, x: Tensor, axis: Any, keepdim: bool, dim: Any,
            dtypes: tuple[DType, DType]) -> Tensor:
    axes = _axes(x, axis, dim, op)
    view = x.backend.reduce(op, x.prim, axes, *dtypes)
    return _finish(x, view, axes, keepdim)


@tensor_method
def sum(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """The sum over ``axis`` (every axis by default); integers give int64.

    Example:
        >>> burn.tensor([[1, 2], [3, 4]]).sum(0).tolist()
        [4, 6]
    """
    return _reduce("sum", x, axis, keepdim, dim, integral_dtypes(x))


@tensor_method
def prod(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """The product over ``axis``; integers give int64.

    Example:
        >>> burn.tensor([1.0, 2.0, 3.0]).prod().item()
        6.0
    """
    return _reduce("prod", x, axis, keepdim, dim, integral_dtypes(x))


@tensor_method
def mean(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """The mean over ``axis``; integers give float32.

    Example:
        >>> burn.tensor([1, 2]).mean().item()
        1.5
    """
    return _reduce("mean", x, axis, keepdim, dim, float_dtypes(x))


def _extreme(op: str, x: Tensor, axis: Any, keepdim: bool, dim: Any) -> Tensor:
    axes = _axes(x, axis, dim, op)
    _refuse_empty(x, axes, op)
    view = x.backend.reduce(op, x.prim, axes, register(x.dtype), x.dtype)
    return _finish(x, view, axes, keepdim)


@tensor_method
def max(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """The largest value over ``axis`` (torch's ``amax``: values only; see ``argmax``).

    Example:
        >>> burn.tensor([[1, 5], [7, 2]]).max(1).tolist()
        [5, 7]
    """
    return _extreme("max", x, axis, keepdim, dim)


@tensor_method
def min(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """The smallest value over ``axis`` (torch's ``amin``).

    Example:
        >>> burn.tensor([[1, 5], [7, 2]]).min().item()
        1
    """
    return _extreme("min", x, axis, keepdim, dim)


def _logical(op: str, x: Tensor, axis: Any, keepdim: bool, dim: Any) -> Tensor:
    return _reduce(op, x, axis, keepdim, dim, (dt.int32, dt.bool_))


@tensor_method
def any(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """Whether any element over ``axis`` is nonzero (bool).

    Example:
        >>> burn.tensor([0, 3]).any().item()
        True
    """
    return _logical("any", x, axis, keepdim, dim)


@tensor_method
def all(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """Whether every element over ``axis`` is nonzero (bool).

    Example:
        >>> burn.tensor([0, 3]).all().item()
        False
    """
    return _logical("all", x, axis, keepdim, dim)


def _arg(op: str, x: Tensor, axis: Any, keepdim: bool, dim: Any) -> Tensor:
    if axis is None and dim is None:
        axes = tuple(range(x.ndim))  # an index into the flattened tensor
    else:
        axes = (_one_axis(x, axis, dim, op),) if x.ndim else ()
    _refuse_empty(x, axes, op)
    view = x.backend.argreduce(op, x.prim, axes, _int_accumulator(x.backend))
    return _finish(x, view, axes, keepdim)


@tensor_method
def argmax(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """The index of the first largest value along ``axis``, or in the flattened tensor.

    Example:
        >>> burn.tensor([[1, 5], [7, 7]]).argmax(1).tolist()
        [1, 0]
    """
    return _arg("argmax", x, axis, keepdim, dim)


@tensor_method
def argmin(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
    """The index of the first smallest value along ``axis``, or in the flattened tensor.

    Example:
        >>> burn.tensor([[1, 5], [0, 7]]).argmin().item()
        2
    """
    return _arg("argmin", x, axis, keepdim, dim)


def _variance(op: str, x: Tensor, axis: Any, correction: float, keepdim: bool, dim: Any
              ) -> Tensor:
    axes = _axes(x, axis, dim, op)
    view = x.backend.variance(x.prim, axes, correction, op == "std", *float_dtypes(x))
    return _finish(x, view, axes, keepdim)


@tensor_method
def var(x: Tensor, axis: Any = None, correction: float = 1, keepdim: bool = False, *,
        dim: Any = None) -> Tensor:
    """The variance over ``axis``: squared deviations summed and divided by
    ``count - correction`` (1: the unbiased estimate, as torch's default).

    Example:
        >>> burn.tensor([1.0, 3.0]).var().item()
        2.0
    """
    return _variance("var", x, axis, correction, keepdim, dim)


@tensor_method
def std(x: Tensor, axis: Any = None, correction: float = 1, keepdim: bool = False, *,
        dim: Any = None) -> Tensor:
    """The standard deviation over ``axis`` (the square root of ``var``).

    Example:
        >>> burn.tensor([1.0, 3.0]).std(correction=0).item()
        1.0
    """
    return _variance("std", x, axis, correction, keepdim, dim)


@tensor_method
def logsumexp(x: Tensor, axis: Any = None, keepdim: bool = False, *, dim: Any = None
              ) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, without overflow.

    Example:
        >>> round(burn.tensor([0.0, 0.0]).logsumexp().item(), 4)
        0.6931
    """
    axes = _axes(x, axis, dim, "logsumexp")
    view = x.backend.logsumexp(x.prim, axes, *float_dtypes(x))
    return _finish(x, view, axes, keepdim)


# ---------------------------------------------------------------- along one axis


def _along_axis(op: str, x: Tensor, axis: Any, dim: Any, run: Any) -> Tensor:
    """``run(view, axis)`` on ``x`` (a 0-d tensor is seen as one element along axis 0)."""
    a = _one_axis(x, axis, dim, op)
    if x.ndim == 0:
        return reshape(_along_axis(op, reshape(x, 1), 0, None, run), ())
    return Tensor(run(x.prim, a), x.backend)


@tensor_method
def cumsum(x: Tensor, axis: Any = None, *, dim: Any = None) -> Tensor:
    """The running sum along ``axis``; integers give int64.

    Example:
        >>> burn.tensor([1, 2, 3]).cumsum(0).tolist()
        [1, 3, 6]
    """
    dtypes = integral_dtypes(x)
    return _along_axis("cumsum", x, axis, dim,
                       lambda v, a: x.backend.scan("cumsum", v, a, *dtypes))


@tensor_method
def cumprod(x: Tensor, axis: Any = None, *, dim: Any = None) -> Tensor:
    """The running product along ``axis``; integers give int64.

    Example:
        >>> burn.tensor([1, 2, 3]).cumprod(0).tolist()
        [1, 2, 6]
    """
    dtypes = integral_dtypes(x)
    return _along_axis("cumprod", x, axis, dim,
                       lambda v, a: x.backend.scan("cumprod", v, a, *dtypes))


@tensor_method
def softmax(x: Tensor, axis: Any = -1, *, dim: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis`` (computed around the max).

    Example:
        >>> burn.softmax(burn.tensor([0.0, 0.0]), 0).tolist()
        [0.5, 0.5]
    """
    dtypes = float_dtypes(x)
    return _along_axis("softmax", x, axis, dim,
                       lambda v, a: x.backend.softmax(v, a, False, *dtypes))


@tensor_method
def log_softmax(x: Tensor, axis: Any = -1, *, dim: Any = None) -> Tensor:
    """``log(softmax(x))`` along ``axis``, computed as ``x - max - log(sum(exp(x - max)))``.

    Example:
        >>> burn.log_softmax(burn.tensor([0.0, 0.0]), 0).shape
        (2,)
    """
    dtypes = float_dtypes(x)
    return _along_axis("log_softmax", x, axis, dim,
                       lambda v, a: x.backend.softmax(v, a, True, *dtypes))


# ---------------------------------------------------------------- normalizations


def _normalized_axes(op: str, x: Tensor, normalized_shape: Any,
                     params: dict[str, Tensor | None]) -> int:
    """The number of trailing axes normalized; ``BurnError`` when the shapes disagree."""
    shape = ((int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer))
             else tuple(int(n) for n in normalized_shape))
    k = len(shape)
    if k == 0 or k > x.ndim or x.shape[x.ndim - k:] != shape:
        raise BurnError(f"{op}: normalized_shape {shape} must be the last axes of the input, "
                        f"whose shape is {x.shape}")
    for name, p in params.items():
        if p is None:
            continue
        same_backend(op, x, p)
        if p.shape != shape:
            raise BurnError(f"{op}: {name} has shape {p.shape}; expected normalized_shape "
                            f"{shape} (input shape {x.shape})")
        if p.dtype.is_bool:
            raise BurnError(f"{op}: {name} must be numeric, got bool")
    return k


def layer_norm(x: Tensor, normalized_shape: Any, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing
    ``normalized_shape`` axes (the biased variance, as torch's ``layer_norm``).

    Example:
        >>> burn.layer_norm(burn.tensor([[1.0, 3.0]]), (2,)).tolist()  # doctest: +ELLIPSIS
        [[-0.99..., 0.99...]]
    """
    k = _normalized_axes("layer_norm", x, normalized_shape, {"weight": weight, "bias": bias})
    view = x.backend.layer_norm(x.prim, k, weight.prim if weight is not None else None,
                                bias.prim if bias is not None else None, float(eps),
                                *float_dtypes(x))
    return Tensor(view, x.backend)


def rms_norm(x: Tensor, normalized_shape: Any, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the trailing ``normalized_shape`` axes;
    ``eps`` defaults to the machine epsilon of the result dtype, as torch's ``rms_norm``.

    Example:
        >>> burn.rms_norm(burn.tensor([[3.0, 4.0]]), 2).shape
        (1, 2)
    """
    k = _normalized_axes("rms_norm", x, normalized_shape, {"weight": weight})
    compute, out = float_dtypes(x)
    if eps is None:
        eps = _EPSILON[out.name]
    view = x.backend.rms_norm(x.prim, k, weight.prim if weight is not None else None,
                              float(eps), compute, out)
    return Tensor(view, x.backend)


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize ``x`` of shape (N, C, ...) over each of ``num_groups`` groups of
    consecutive channels (and all their positions), then scale and shift each channel by
    ``weight`` and ``bias`` of shape (C,): torch's ``group_norm``. ``num_groups`` equal to C
    is instance normalization; 1 normalizes each item as a whole.

    Example:
        >>> x = burn.arange(16.0).reshape(2, 4, 2)
        >>> y = burn.group_norm(x, 2)
        >>> round(y[0, :2].mean().item(), 6), round((y[0, :2] ** 2).mean().item(), 3)
        (0.0, 1.0)
    """
    if x.ndim < 2:
        raise BurnError(f"group_norm: the input must be (N, C, ...), got shape {x.shape}")
    n, channels = x.shape[:2]
    if not isinstance(num_groups, (int, np.integer)) or num_groups < 1 or \
            channels % num_groups:
        raise BurnError(f"group_norm: num_groups must be an int >= 1 dividing the {channels} "
                        f"channels of the input {x.shape}, got {num_groups!r}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            same_backend("group_norm", x, p)
            if p.shape != (channels,):
                raise BurnError(f"group_norm: {name} has shape {p.shape}; expected "
                                f"({channels},), one per channel of the input {x.shape}")
    size = (channels // num_groups) * math.prod(x.shape[2:])
    grouped = reshape(x, (n, num_groups, size))
    out = reshape(layer_norm(grouped, (size,), eps=eps), x.shape)
    per_channel = (channels,) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * reshape(weight, per_channel)
    if bias is not None:
        out = out + reshape(bias, per_channel)
    return out
