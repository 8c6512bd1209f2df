"""Scatters: ``scatter_add``, ``scatter_reduce`` and their slice-wise forms ``index_add``,
``index_reduce`` (torch's), on ``kernels/scatter.py``.

Their operands follow the rules of ``burn.tensor.index`` (int32/int64 indices in range,
checked first). They combine with atomics: the order of additions and products, and so the
rounding of float results, may vary between runs. float16/bfloat16 accumulate in float32 and
8/16-bit integers in int32 (wrapping around like the narrow sum or product); a dtype a target
has no atomics for (float64 on WebGPU) is refused. bool tensors are refused.

Example:
    >>> burn.zeros(3).scatter_add(0, burn.tensor([0, 2, 0]), burn.ones(3)).tolist()
    [2.0, 0.0, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt

from ..backend.base import Backend, BurnError
from .creation import full
from .index import check_fits, check_index_dtype, check_index_range
from .tensor import Tensor, normalize_axis, same_backend, tensor_method

__all__ = ["index_add", "index_reduce", "scatter_add", "scatter_reduce"]


def _checked_scatter(op: str, x: Tensor, axis: int, index: Tensor, src: Tensor
                     ) -> tuple[Backend, int]:
    """The backend and the normalized axis of a scatter into ``x``, once its operands are
    checked: dtypes, shapes and the index's range."""
    check_index_dtype(op, index)
    backend = same_backend(op, x, index, src)
    if src.dtype != x.dtype:
        raise BurnError(f"{op}: src ({src.dtype.name}, shape {src.shape}) must have the "
                        f"input's dtype ({x.dtype.name}, shape {x.shape})")
    if x.dtype.is_bool:
        verb = "added" if op == "scatter_add" else "reduced"
        raise BurnError(f"{op}: bool tensors cannot be {verb} (shape {x.shape}); cast with "
                        ".to(burn.int32)")
    a = normalize_axis(axis, x.ndim, op)
    check_fits(op, index, x, "the input", a)
    check_fits(op, index, src, "src", None)
    check_index_range(op, index, x.shape[a], a, x.shape)
    return backend, a


@tensor_method
def scatter_add(x: Tensor, axis: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with each ``src[i][j]`` added at ``[i][index[i][j]]`` for ``axis=1``
    (torch's ``scatter_add``); ``index`` has ``x``'s rank, is no larger than ``src``, and no
    larger than ``x`` off ``axis``. Repeated indices add up.

    Example:
        >>> burn.zeros(3).scatter_add(0, burn.tensor([0, 2, 0]), burn.ones(3)).tolist()
        [2.0, 0.0, 1.0]
    """
    return _scatter_add("scatter_add", x, axis, index, src)


def _scatter_add(op: str, x: Tensor, axis: int, index: Tensor, src: Tensor) -> Tensor:
    backend, a = _checked_scatter(op, x, axis, index, src)
    if index.numel() == 0:
        return Tensor(backend.copy(x.prim), backend)
    return Tensor(backend.scatter_add(x.prim, a, index.prim, src.prim), backend)


SCATTER_REDUCTIONS = {"sum": "add", "prod": "mul", "mean": "add", "amax": "max", "amin": "min"}


@tensor_method
def scatter_reduce(x: Tensor, axis: int, index: Tensor, src: Tensor, reduce: str,
                   include_self: bool = True) -> Tensor:
    """A copy of ``x`` with the ``src`` elements that ``index`` sends to each slot reduced
    into it (torch's ``scatter_reduce``): ``reduce`` is ``"sum"``, ``"prod"``, ``"mean"``,
    ``"amax"`` or ``"amin"``; ``include_self=False`` leaves ``x``'s value out of the slots
    some index names (the others keep it). ``index`` fits as for ``scatter_add``. An integer
    mean rounds down; float max/min propagate NaN. Gradients flow to ``x`` and ``src``: a
    max/min's is shared evenly among the values that tie for it, a product's is the product
    of the slot's other factors (zeros included).

    Example:
        >>> x, src = burn.tensor([1.0, 5.0, 2.0]), burn.tensor([4.0, 3.0, 9.0])
        >>> x.scatter_reduce(0, burn.tensor([0, 0, 2]), src, "amax").tolist()
        [4.0, 5.0, 9.0]
    """
    return _scatter_reduce("scatter_reduce", x, axis, index, src, reduce, include_self)


def _scatter_reduce(op: str, x: Tensor, axis: int, index: Tensor, src: Tensor, reduce: str,
                    include_self: bool) -> Tensor:
    if reduce not in SCATTER_REDUCTIONS:
        raise BurnError(f"{op}: unknown reduce={reduce!r}; write one of "
                        f"{', '.join(map(repr, SCATTER_REDUCTIONS))}")
    backend, a = _checked_scatter(op, x, axis, index, src)
    if index.numel() == 0:
        return Tensor(backend.copy(x.prim), backend)
    out = Tensor(backend.scatter_reduce(x.prim, a, index.prim, src.prim,
                                        SCATTER_REDUCTIONS[reduce], include_self), backend)
    if reduce != "mean":
        return out
    # the slot's count of values (at least one: a slot no index names keeps x's value)
    ones = full(index.shape, 1, dt.int32, backend)
    start = full(x.shape, int(include_self), dt.int32, backend)
    count = Tensor(backend.scatter_add(start.prim, a, index.prim, ones.prim), backend)
    count = count.clamp(min=1)
    if x.dtype.is_float:
        compute = dt.float32 if x.dtype.bits < 32 else x.dtype
        return (out.to(compute) / count.to(compute)).to(x.dtype)
    return out // count.to(x.dtype)


def _slot_index(op: str, x: Tensor, axis: int, index: Tensor, source: Tensor
                ) -> tuple[int, Tensor]:
    """The normalized axis and ``index`` (1-D) spread over ``source``'s shape, as the
    scatters take it: source element ``[..., i, ...]`` goes to ``x[..., index[i], ...]``."""
    check_index_dtype(op, index)
    same_backend(op, x, index, source)
    if index.ndim != 1:
        raise BurnError(f"{op}: the index must be 1-D, got shape {index.shape}")
    a = normalize_axis(axis, x.ndim, op)
    want = x.shape[:a] + (index.shape[0],) + x.shape[a + 1:]
    if source.shape != want:
        raise BurnError(f"{op}: source has shape {source.shape}; expected {want} (the input's "
                        f"shape {x.shape} with axis {a} as long as the index)")
    column = index.reshape(tuple(index.shape[0] if d == a else 1 for d in range(x.ndim)))
    return a, column.expand(*source.shape)


@tensor_method
def index_add(x: Tensor, axis: int, index: Tensor, source: Tensor, alpha: Any = 1) -> Tensor:
    """A copy of ``x`` with ``alpha * source[..., i, ...]`` added at ``x[..., index[i], ...]``
    along ``axis`` (torch's ``index_add``); ``index`` is 1-D, repeated entries add up.

    Example:
        >>> burn.zeros(3).index_add(0, burn.tensor([0, 2, 0]), burn.ones(3), alpha=2).tolist()
        [4.0, 0.0, 2.0]
    """
    a, spread = _slot_index("index_add", x, axis, index, source)
    if alpha != 1:
        if not x.dtype.is_float and not isinstance(alpha, (int, np.integer)):
            raise BurnError(f"index_add: alpha must be an int for {x.dtype.name} tensors, got "
                            f"{alpha!r}")
        source = source * alpha
    return _scatter_add("index_add", x, a, spread, source)


@tensor_method
def index_reduce(x: Tensor, axis: int, index: Tensor, source: Tensor, reduce: str,
                 include_self: bool = True) -> Tensor:
    """``scatter_reduce`` of ``source``'s slices into ``x``'s along ``axis`` by the 1-D
    ``index`` (torch's ``index_reduce``): ``reduce`` is ``"prod"``, ``"mean"``, ``"amax"``
    or ``"amin"`` (``"sum"`` too: ``index_add``).

    Example:
        >>> x = burn.ones(3)
        >>> x.index_reduce(0, burn.tensor([0, 0]), burn.tensor([4.0, 3.0]), "amax").tolist()
        [4.0, 1.0, 1.0]
    """
    a, spread = _slot_index("index_reduce", x, axis, index, source)
    return _scatter_reduce("index_reduce", x, a, spread, source, reduce, include_self)
