"""Indexing, joining and sorting: gathers, ``cat``/``stack``/``pad``/``repeat``,
triangles, ``one_hot``, ``embedding``, ``sort``/``argsort``/``topk``.

Rules (the same on every backend):

- Index tensors are int32 or int64. Every index value must lie in ``[0, size)`` of the axis
  it indexes: negative indices are refused (as torch's ``gather`` and ``scatter_add`` do;
  ``x[index]`` alone takes them from the end, as torch's and NumPy's indexing do),
  and an out-of-range index raises ``BurnError`` naming the op, the range of the index
  values and the shape. The check reads the index's min and max back to the host: one small
  reduction and a synchronization per indexing op.
- Results keep the input's dtype; ``cat``/``stack`` promote their inputs' dtypes.
  ``one_hot`` and the indices of ``sort``/``argsort``/``topk`` are int64 (int32 on a backend
  without int64).
- The scatters (``scatter_add``, ``scatter_reduce``) live in ``burn.tensor.scatter``.
- ``sort`` is stable: ties keep their original order, ascending and descending; NaN sorts as
  larger than every number (last ascending, first descending); ``topk`` returns its ``k``
  elements sorted, ties by original position.

Example:
    >>> x = burn.tensor([[3.0, 1.0, 2.0]])
    >>> x.sort().indices.tolist(), burn.gather(x, 1, burn.tensor([[2, 0]])).tolist()
    ([[1, 2, 0]], [[2.0, 3.0]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType

from ..backend import bounds
from ..backend.base import Backend, BurnError
from .creation import from_numpy
from .elementwise import as_tensor_like, check_scalar, where
from .tensor import Tensor, normalize_axis, same_backend, tensor_method
from .views import broadcast_shapes, contiguous, expand, reshape, unsqueeze

__all__ = ["argsort", "cat", "embedding", "gather", "index_select", "masked_fill", "one_hot",
           "pad", "repeat", "sort", "stack", "topk", "tril", "triu"]

INDEX_DTYPES = ("int32", "int64")


class SortResult(NamedTuple):
    """What ``sort`` and ``topk`` return: ``values, indices = x.sort()``."""

    values: Tensor
    indices: Tensor


def index_dtype(backend: Backend) -> DType:
    """The dtype of indices an op returns: int64, or int32 where the backend lacks int64."""
    return dt.int64 if "int64" in backend.dtypes else dt.int32


def check_index_dtype(op: str, index: Any) -> None:
    """``BurnError`` unless ``index`` is an int32 or int64 tensor."""
    if not isinstance(index, Tensor):
        raise BurnError(f"{op}: the index must be a tensor, got {type(index).__name__}")
    if index.dtype.name not in INDEX_DTYPES:
        raise BurnError(f"{op}: the index must be int32 or int64, got {index.dtype.name} "
                        f"(shape {index.shape})")


def check_index_range(op: str, index: Tensor, size: int, axis: int,
                       shape: tuple[int, ...], wrap: bool = False) -> bool:
    """``BurnError`` unless every value of ``index`` is in ``[0, size)`` (with ``wrap``, in
    ``[-size, size)``: negative ones count from the end). Returns whether some are negative."""
    if index.numel() == 0:
        return False
    storage = getattr(index.prim, "storage", None)
    bounds.index_limit(storage, size)
    known = bounds.known_bounds(storage)
    if known is not None and known[0] >= 0 and known[1] < size:  # no device read needed
        return False
    lo, hi = index.backend.index_range(index.prim)
    if lo < (-size if wrap else 0) or hi >= size:
        if not size:
            valid = "none (the axis is empty)"
        elif wrap:
            valid = f"[{-size}, {size - 1}] (negative ones count from the end)"
        else:
            valid = f"[0, {size - 1}] (negative indices are not accepted)"
        raise BurnError(f"{op}: index values span [{lo}, {hi}] but axis {axis} of shape {shape} "
                        f"has size {size}; valid indices: {valid}")
    return lo < 0


def check_fits(op: str, index: Tensor, other: Tensor, what: str, skip: int | None) -> None:
    """``index``'s shape fits inside ``other``'s on every axis but ``skip``."""
    if index.ndim != other.ndim:
        raise BurnError(f"{op}: the index (shape {index.shape}) must have as many dimensions as "
                        f"{what} (shape {other.shape})")
    for d, (i, n) in enumerate(zip(index.shape, other.shape)):
        if d != skip and i > n:
            raise BurnError(f"{op}: the index (shape {index.shape}) is larger than {what} "
                            f"(shape {other.shape}) on axis {d}")


@tensor_method
def gather(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """``out[i][j] = x[i][index[i][j]]`` for ``axis=1`` (torch's ``gather``): ``index`` has
    ``x``'s rank and is no larger than ``x`` off ``axis``; the result has its shape.

    Example:
        >>> burn.tensor([[1, 2], [3, 4]]).gather(1, burn.tensor([[1, 1], [0, 1]])).tolist()
        [[2, 2], [3, 4]]
    """
    check_index_dtype("gather", index)
    backend = same_backend("gather", x, index)
    a = normalize_axis(axis, x.ndim, "gather")
    check_fits("gather", index, x, "the input", a)
    check_index_range("gather", index, x.shape[a], a, x.shape)
    return Tensor(backend.gather(x.prim, a, index.prim), backend)


@tensor_method
def index_select(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """The slices of ``x`` along ``axis`` that ``index`` names (torch's ``index_select``).
    An index of any shape is accepted, as NumPy's ``take``: the result's shape is
    ``x.shape[:axis] + index.shape + x.shape[axis + 1:]``. ``x[index]`` is
    ``x.index_select(0, index)``, except that there, as in torch and NumPy, negative indices
    count from the end.

    Example:
        >>> burn.tensor([[1, 2], [3, 4], [5, 6]])[burn.tensor([2, 0])].tolist()
        [[5, 6], [1, 2]]
        >>> burn.tensor([1, 2, 3])[burn.tensor([-1, 0])].tolist()
        [3, 1]
    """
    return selected(x, axis, index, wrap=False)


def selected(x: Tensor, axis: int, index: Tensor, wrap: bool) -> Tensor:
    """``index_select``; with ``wrap``, negative indices count from the end (``x[index]``)."""
    op = "indexing" if wrap else "index_select"
    check_index_dtype(op, index)
    backend = same_backend(op, x, index)
    a = normalize_axis(axis, x.ndim, op)
    if x.ndim == 0:
        raise BurnError(f"{op}: needs a tensor of at least one dimension, got shape ()")
    if check_index_range(op, index, x.shape[a], a, x.shape, wrap):
        index = where(index < 0, index + x.shape[a], index)
    return Tensor(backend.take(x.prim, a, index.prim), backend)


def embedding(weight: Tensor, index: Tensor) -> Tensor:
    """Rows of the 2-D ``weight`` picked by ``index`` of any shape: shape
    ``index.shape + (weight.shape[1],)``. (Note the order: weight first, unlike torch's
    ``F.embedding(input, weight)``.)

    Example:
        >>> burn.embedding(burn.eye(3), burn.tensor([[2], [0]])).shape
        (2, 1, 3)
    """
    if weight.ndim != 2:
        raise BurnError(f"embedding: the weight must be 2-D (rows, features), got shape "
                        f"{weight.shape}")
    check_index_dtype("embedding", index)
    backend = same_backend("embedding", weight, index)
    check_index_range("embedding", index, weight.shape[0], 0, weight.shape)
    return Tensor(backend.take(weight.prim, 0, index.prim), backend)


@tensor_method
def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``x`` with ``value`` (a number or a one-element tensor, converted to ``x``'s dtype)
    where the bool ``mask`` (broadcast to ``x``'s shape) is true.

    Example:
        >>> burn.ones(3).masked_fill(burn.tensor([True, False, True]), 0).tolist()
        [0.0, 1.0, 0.0]
    """
    if not isinstance(mask, Tensor) or not mask.dtype.is_bool:
        got = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        raise BurnError(f"masked_fill: the mask must be a bool tensor, got {got}")
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise BurnError(f"masked_fill: a tensor value must have one element, got shape "
                            f"{value.shape}")
        fill = reshape(value, ())
    else:
        fill = as_tensor_like(value, x, x.dtype, "masked_fill")
    backend = same_backend("masked_fill", x, mask, fill)
    shape = broadcast_shapes("masked_fill", x.shape, mask.shape)
    if shape != x.shape:
        raise BurnError(f"masked_fill: the mask (shape {mask.shape}) must broadcast to the "
                        f"input's shape {x.shape}")
    return Tensor(backend.where(expand(mask, *shape).prim, expand(fill, *shape).prim, x.prim,
                                x.dtype), backend)


def cat(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """``tensors`` joined along ``axis`` (equal shapes elsewhere; dtypes promoted).

    Example:
        >>> burn.cat([burn.zeros((1, 2)), burn.ones((2, 2))]).shape
        (3, 2)
    """
    tensors = list(tensors)
    if not tensors:
        raise BurnError("cat: needs at least one tensor")
    backend = same_backend("cat", *tensors)
    first = tensors[0]
    shapes = ", ".join(str(t.shape) for t in tensors)
    if first.ndim == 0 or any(t.ndim != first.ndim for t in tensors):
        raise BurnError(f"cat: tensors must have one number of dimensions (at least 1), got "
                        f"shapes {shapes}")
    a = normalize_axis(axis, first.ndim, "cat")
    for t in tensors:
        if t.shape[:a] + t.shape[a + 1:] != first.shape[:a] + first.shape[a + 1:]:
            raise BurnError(f"cat: shapes {shapes} differ off axis {a}")
    dtype = first.dtype
    for t in tensors[1:]:
        dtype = dt.promote(dtype, t.dtype)
    return Tensor(backend.cat([t.prim for t in tensors], a, dtype), backend)


def stack(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """``tensors`` of one shape stacked along a new axis ``axis``.

    Example:
        >>> burn.stack([burn.zeros(2), burn.ones(2)], axis=1).tolist()
        [[0.0, 1.0], [0.0, 1.0]]
    """
    tensors = list(tensors)
    if not tensors:
        raise BurnError("stack: needs at least one tensor")
    if any(t.shape != tensors[0].shape for t in tensors):
        raise BurnError(f"stack: tensors must have one shape, got "
                        f"{', '.join(str(t.shape) for t in tensors)}")
    a = normalize_axis(axis, tensors[0].ndim + 1, "stack")
    return cat([unsqueeze(t, a) for t in tensors], a)


PAD_MODES = ("constant", "reflect", "replicate", "circular")
_PAD_TABLES: dict[tuple, Tensor] = {}  # device index tables of the non-constant modes
_PAD_TABLES_KEPT = 64


def pad(x: Tensor, pads: Sequence[int], value: Any = 0, mode: str = "constant") -> Tensor:
    """``x`` padded as torch's ``F.pad``: ``pads`` lists ``(before, after)`` counts from the
    last axis backwards, ``(last_before, last_after, second_last_before, ...)``. ``mode``:
    ``"constant"`` fills with ``value``; ``"reflect"`` mirrors the tensor about its edge
    elements (pads shorter than the axis), ``"replicate"`` repeats the edge elements,
    ``"circular"`` wraps around (pads at most the axis). A negative count crops that many
    elements (a view) before the other pads apply to what is left.

    Example:
        >>> burn.pad(burn.ones((1, 2)), (1, 0, 0, 1)).tolist()
        [[0.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
        >>> burn.pad(burn.tensor([1, 2, 3]), (2, 1), mode="reflect").tolist()
        [3, 2, 1, 2, 3, 2]
    """
    pads = [int(p) for p in pads]
    if len(pads) % 2 or len(pads) > 2 * x.ndim:
        raise BurnError(f"pad: pads {tuple(pads)} must be pairs, at most two per axis of shape "
                        f"{x.shape}")
    if mode not in PAD_MODES:
        raise BurnError(f"pad: mode must be one of {', '.join(PAD_MODES)}, got {mode!r}")
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pads) // 2):
        pairs[x.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    if any(p < 0 for p in pads):
        x = _cropped(x, pairs, pads)
        pairs = [(max(before, 0), max(after, 0)) for before, after in pairs]
    if mode != "constant":
        if value != 0:
            raise BurnError(f"pad: a value ({value!r}) is only used by mode='constant', not "
                            f"{mode!r}")
        for axis, (before, after) in enumerate(pairs):
            if before or after:
                x = index_select(x, axis, _pad_table(x, axis, before, after, mode))
        return x
    if isinstance(value, str) or not isinstance(value, (int, float, np.number, np.bool_)):
        raise BurnError(f"pad: the value must be a number, got {value!r} "
                        f"({type(value).__name__}); for a tensor of shape {x.shape} and "
                        f"dtype {x.dtype.name}")
    check_scalar("pad", value, x.dtype, "pass a value the tensor's dtype holds")
    return Tensor(x.backend.pad(x.prim, pairs, value), x.backend)


def _cropped(x: Tensor, pairs: list[tuple[int, int]], pads: list[int]) -> Tensor:
    """``x`` without the elements the negative counts of ``pairs`` crop (a view)."""
    for axis, (before, after) in enumerate(pairs):
        start, stop = max(-before, 0), x.shape[axis] - max(-after, 0)
        if stop < start:
            raise BurnError(f"pad: pads {tuple(pads)} crop {start + x.shape[axis] - stop} "
                            f"elements of axis {axis}, which has {x.shape[axis]} (shape "
                            f"{x.shape})")
        if (start, stop) != (0, x.shape[axis]):
            x = x.narrow(axis, start, stop - start)
    return x


def _pad_table(x: Tensor, axis: int, before: int, after: int, mode: str) -> Tensor:
    """Which element of ``axis`` each padded position reads: built on the host once per
    (backend, size, pads, mode) and kept on the device (a captured step uploads nothing)."""
    size = x.shape[axis]
    if size == 0:
        raise BurnError(f"pad: mode={mode!r} has no element to read on axis {axis} of size 0 "
                        f"(shape {x.shape}); use mode='constant'")
    longest = {"reflect": size - 1, "circular": size}.get(mode)
    if longest is not None and max(before, after) > longest:
        raise BurnError(f"pad: mode={mode!r} pads axis {axis} (size {size}) by at most "
                        f"{longest} on each side, got ({before}, {after}); use "
                        f"mode='constant' or 'replicate' for longer pads")
    key = (x.backend, size, before, after, mode)
    if key not in _PAD_TABLES:
        if len(_PAD_TABLES) >= _PAD_TABLES_KEPT:
            _PAD_TABLES.pop(next(iter(_PAD_TABLES)))
        position = np.arange(-before, size + after)
        last = size - 1
        table = {"reflect": last - np.abs(last - np.abs(position)),
                 "replicate": np.clip(position, 0, last),
                 "circular": position % size}[mode]
        _PAD_TABLES[key] = from_numpy(table.astype(np.int32), backend=x.backend)
    return _PAD_TABLES[key]


@tensor_method
def repeat(x: Tensor, *repeats: Any) -> Tensor:
    """``x`` tiled ``repeats[d]`` times along each axis (torch's ``repeat``; more repeats
    than axes add leading axes).

    Example:
        >>> burn.tensor([1, 2]).repeat(2, 2).tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)):
        repeats = tuple(repeats[0])
    counts = [int(r) for r in repeats]
    if len(counts) < x.ndim or any(r < 0 for r in counts):
        raise BurnError(f"repeat: needs a non-negative count for each of the {x.ndim} axes of "
                        f"shape {x.shape}, got {tuple(counts)}")
    shape = (1,) * (len(counts) - x.ndim) + x.shape
    strides = (0,) * (len(counts) - x.ndim) + x.prim.strides
    result_shape = tuple(r * n for r, n in zip(counts, shape))
    if math.prod(result_shape) == 0:
        return Tensor(x.backend.new(result_shape, x.dtype), x.backend)
    # axes (r0, n0, r1, n1, ...) with stride 0 on each repeat axis: one contiguous copy
    tiled = x.prim.with_layout(x.prim.offset, [v for r, n in zip(counts, shape) for v in (r, n)],
                               [v for s in strides for v in (0, s)])
    return reshape(contiguous(Tensor(tiled, x.backend)), result_shape)


def _triangle(op: str, x: Tensor, diagonal: int, upper: bool) -> Tensor:
    if x.ndim < 2:
        raise BurnError(f"{op}: needs a tensor of at least 2 dimensions, got shape {x.shape}")
    if x.numel() == 0:
        return Tensor(x.backend.new(x.shape, x.dtype), x.backend)
    return Tensor(x.backend.triangle(x.prim, int(diagonal), upper), x.backend)


@tensor_method
def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """``x`` with the elements above the ``diagonal``-th diagonal of its last two axes zeroed.

    Example:
        >>> burn.ones((2, 2)).tril().tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    return _triangle("tril", x, diagonal, upper=False)


@tensor_method
def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """``x`` with the elements below the ``diagonal``-th diagonal of its last two axes zeroed.

    Example:
        >>> burn.ones((2, 2)).triu(1).tolist()
        [[0.0, 1.0], [0.0, 0.0]]
    """
    return _triangle("triu", x, diagonal, upper=True)


def one_hot(index: Tensor, num_classes: int = -1) -> Tensor:
    """``index.shape + (num_classes,)``: 1 at each index's class, 0 elsewhere; int64 (int32 on
    a backend without int64). ``num_classes=-1`` uses the largest index plus one.

    Example:
        >>> burn.one_hot(burn.tensor([0, 2]), 3).tolist()
        [[1, 0, 0], [0, 0, 1]]
    """
    check_index_dtype("one_hot", index)
    if num_classes == -1:
        if index.numel() == 0:
            raise BurnError(f"one_hot: cannot infer num_classes from an empty index (shape "
                            f"{index.shape}); pass num_classes")
        num_classes = index.backend.index_range(index.prim)[1] + 1
    if num_classes < 0:
        raise BurnError(f"one_hot: num_classes must be positive or -1, got {num_classes}")
    check_index_range("one_hot", index, num_classes, index.ndim, index.shape + (num_classes,))
    dtype = index_dtype(index.backend)
    return Tensor(index.backend.one_hot(index.prim, int(num_classes), dtype), index.backend)


def _sorted(op: str, x: Tensor, axis: int, k: int | None, descending: bool) -> SortResult:
    if x.ndim == 0:  # a 0-d tensor sorts as one element
        values, indices = _sorted(op, reshape(x, 1), 0, k, descending)
        return SortResult(reshape(values, ()), reshape(indices, ()))
    a = normalize_axis(axis, x.ndim, op)
    n = x.shape[a]
    k = n if k is None else int(k)
    if not 0 <= k <= n:
        raise BurnError(f"{op}: k={k} is out of range for axis {a} of size {n} (shape "
                        f"{x.shape})")
    values, indices = x.backend.sort(x.prim, a, k, descending, index_dtype(x.backend))
    return SortResult(Tensor(values, x.backend), Tensor(indices, x.backend))


@tensor_method
def sort(x: Tensor, axis: int = -1, descending: bool = False) -> SortResult:
    """``(values, indices)`` of ``x`` sorted along ``axis``: stable, NaN largest.

    Example:
        >>> burn.tensor([2, 1, 2]).sort(descending=True).indices.tolist()
        [0, 2, 1]
    """
    return _sorted("sort", x, axis, None, descending)


@tensor_method
def argsort(x: Tensor, axis: int = -1, descending: bool = False) -> Tensor:
    """The indices that sort ``x`` along ``axis`` (stable, NaN largest).

    Example:
        >>> burn.tensor([3.0, 1.0, 2.0]).argsort().tolist()
        [1, 2, 0]
    """
    return _sorted("argsort", x, axis, None, descending).indices


@tensor_method
def topk(x: Tensor, k: int, axis: int = -1, largest: bool = True,
         sorted: bool = True) -> SortResult:  # noqa: A002 - torch's name
    """``(values, indices)`` of the ``k`` largest (or smallest) elements along ``axis``, in
    order (always sorted, whatever ``sorted`` says); ties by original position.

    Example:
        >>> burn.tensor([1.0, 3.0, 2.0]).topk(2).values.tolist()
        [3.0, 2.0]
    """
    if not isinstance(k, (int, np.integer)):
        raise BurnError(f"topk: k must be an int, got {k!r}")
    return _sorted("topk", x, axis, k, descending=largest)
