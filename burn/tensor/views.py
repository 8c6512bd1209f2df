"""Views: new layouts over the same storage, computed once for every backend.

``reshape`` copies only when the strides cannot express the new shape; every other op here
(``permute``, ``transpose``, slicing with steps, ``expand``, ``squeeze``/``unsqueeze``,
``flatten`` of a contiguous tensor, ``flip``, ``split``/``chunk``) never copies.

Example:
    >>> t = burn.arange(12).reshape(3, 4)
    >>> t[1:, ::2].tolist(), t.T.is_contiguous()
    ([[4, 6], [8, 10]], False)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernels.layout import View, view_strides

from ..backend import bounds
from ..backend.base import BurnError
from .tensor import Tensor, int_arg, normalize_axes, normalize_axis, tensor_method

__all__ = ["broadcast_shapes", "chunk", "contiguous", "diagonal", "expand", "flatten", "flip",
           "narrow", "permute", "reshape", "split", "squeeze", "transpose", "unsqueeze"]


def _shape_arg(shape: tuple[Any, ...], op: str) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int_arg(s, op, "sizes") for s in shape)  # reshape(2.5, 2) is refused


def _relayout(x: Tensor, offset: int, shape: Sequence[int], strides: Sequence[int]) -> Tensor:
    return Tensor(x.prim.with_layout(offset, shape, strides), x.backend)


@tensor_method
def contiguous(x: Tensor) -> Tensor:
    """``x`` itself when dense and in row-major order, else a contiguous copy (which keeps
    the bounds the host knows of integer values: index checks then read nothing back)."""
    if x.prim.is_contiguous:
        return x
    copy = Tensor(x.backend.copy(x.prim), x.backend)
    if not x.dtype.is_float:
        bounds.inherit(copy.prim.storage, x.prim.storage)
    return copy


def _infer_shape(shape: tuple[int, ...], numel: int, op: str, old: tuple[int, ...]
                 ) -> tuple[int, ...]:
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise BurnError(f"{op}: invalid shape {shape}; at most one -1, other sizes >= 0")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or numel % known:
            raise BurnError(f"{op}: cannot reshape a tensor of shape {old} ({numel} elements) "
                            f"into {shape}")
        shape = shape[:unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]
    if math.prod(shape) != numel:
        raise BurnError(f"{op}: cannot reshape a tensor of shape {old} ({numel} elements) into "
                        f"{shape} ({math.prod(shape)} elements)")
    return shape


@tensor_method
def reshape(x: Tensor, *shape: Any) -> Tensor:
    """``x`` with a new shape (one size may be -1); a view when the layout allows."""
    new_shape = _infer_shape(_shape_arg(shape, "reshape"), x.numel(), "reshape", x.shape)
    if x.numel() == 0:
        return Tensor(x.backend.new(new_shape, x.dtype), x.backend)
    strides = view_strides(x.shape, x.prim.strides, new_shape)
    if strides is None:
        x = contiguous(x)
        strides = view_strides(x.shape, x.prim.strides, new_shape)
    return _relayout(x, x.prim.offset, new_shape, strides)


@tensor_method
def view(x: Tensor, *shape: Any) -> Tensor:
    """Like ``reshape`` but never copies: ``BurnError`` when the layout cannot be viewed."""
    new_shape = _infer_shape(_shape_arg(shape, "view"), x.numel(), "view", x.shape)
    strides = view_strides(x.shape, x.prim.strides, new_shape)
    if strides is None:
        raise BurnError(f"view: a tensor of shape {x.shape} and strides {x.prim.strides} cannot "
                        f"be viewed as {new_shape}; use reshape() (which copies)")
    return _relayout(x, x.prim.offset, new_shape, strides)


@tensor_method
def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Axes ``start_dim..end_dim`` merged into one."""
    if x.ndim == 0:
        return reshape(x, 1)
    a, b = normalize_axis(start_dim, x.ndim, "flatten"), normalize_axis(end_dim, x.ndim, "flatten")
    if a > b:
        raise BurnError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for a "
                        f"tensor of shape {x.shape}; write flatten({end_dim}, {start_dim})")
    return reshape(x, *x.shape[:a], math.prod(x.shape[a:b + 1]), *x.shape[b + 1:])


@tensor_method
def permute(x: Tensor, *dims: Any) -> Tensor:
    """Axes reordered: ``x.permute(2, 0, 1)``."""
    dims = _shape_arg(dims, "permute")
    axes = [normalize_axis(d, x.ndim, "permute") for d in dims]
    if sorted(axes) != list(range(x.ndim)):
        raise BurnError(f"permute: {dims} is not a permutation of the {x.ndim} axes of a tensor "
                        f"of shape {x.shape}")
    return _relayout(x, x.prim.offset, [x.shape[a] for a in axes],
                     [x.prim.strides[a] for a in axes])


@tensor_method
def transpose(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """Two axes swapped (the last two by default)."""
    a, b = normalize_axis(dim0, x.ndim, "transpose"), normalize_axis(dim1, x.ndim, "transpose")
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return permute(x, *axes)


@tensor_method
def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The ``offset``-th diagonal of the axes ``dim1`` and ``dim2`` (above the main one when
    positive, below when negative), as torch's: a view that drops both axes and appends the
    diagonal as the last axis.

    Example:
        >>> m = burn.arange(9).reshape(3, 3)
        >>> m.diagonal().tolist(), m.diagonal(1).tolist(), m.diagonal(-1).tolist()
        ([0, 4, 8], [1, 5], [3, 7])
    """
    offset = int_arg(offset, "diagonal", "offset")
    a, b = normalize_axis(dim1, x.ndim, "diagonal"), normalize_axis(dim2, x.ndim, "diagonal")
    if a == b:
        raise BurnError(f"diagonal: dim1 and dim2 are both axis {a} of shape {x.shape}; name "
                        "two different axes")
    rows, cols = x.shape[a], x.shape[b]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    start = x.prim.offset
    if length:  # the first element: offset columns right, or -offset rows down
        start += offset * x.prim.strides[b] if offset >= 0 else -offset * x.prim.strides[a]
    keep = [i for i in range(x.ndim) if i not in (a, b)]
    return _relayout(x, start, [x.shape[i] for i in keep] + [length],
                     [x.prim.strides[i] for i in keep] + [x.prim.strides[a] + x.prim.strides[b]])


Tensor.T = property(lambda x: permute(x, *reversed(range(x.ndim))))  # type: ignore[attr-defined]
Tensor.mT = property(lambda x: transpose(x, -2, -1))  # type: ignore[attr-defined]


@tensor_method
def unsqueeze(x: Tensor, axis: int) -> Tensor:
    """A size-1 axis inserted at ``axis``."""
    a = normalize_axis(axis, x.ndim + 1, "unsqueeze")
    return _relayout(x, x.prim.offset, x.shape[:a] + (1,) + x.shape[a:],
                     x.prim.strides[:a] + (0,) + x.prim.strides[a:])


@tensor_method
def squeeze(x: Tensor, axis: Any = None) -> Tensor:
    """Size-1 axes removed (all of them, or those named)."""
    axes = normalize_axes(axis, x.ndim, "squeeze")
    if axis is not None:
        for a in axes:
            if x.shape[a] != 1:
                raise BurnError(f"squeeze: axis {a} has size {x.shape[a]} in shape {x.shape}; "
                                "only size-1 axes can be squeezed")
    keep = [i for i in range(x.ndim) if not (i in axes and x.shape[i] == 1)]
    return _relayout(x, x.prim.offset, [x.shape[i] for i in keep],
                     [x.prim.strides[i] for i in keep])


def broadcast_shapes(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes``, or ``BurnError`` naming the op and the shapes."""
    result: tuple[int, ...] | None = tuple(shapes[0])
    for shape in shapes[1:]:  # pair by pair: every binary op with a bias or a number asks
        result = _broadcast_pair(result, shape)
        if result is None:
            raise _mismatch(op, shapes)
    return result


def _broadcast_pair(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """The broadcast of two shapes, or None when they do not broadcast."""
    if len(a) < len(b):
        a, b = b, a
    lead = len(a) - len(b)
    result = list(a[:lead])
    for m, n in zip(a[lead:], b):
        if m == n or n == 1:
            result.append(m)
        elif m == 1:
            result.append(n)
        else:
            return None
    return tuple(result)


def _mismatch(op: str, shapes: Sequence[Sequence[int]]) -> BurnError:
    """The error of ``shapes`` that do not broadcast, naming the first axis that fails."""
    ndim = max(len(s) for s in shapes)
    for i in range(ndim):
        sizes = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(sizes) > 1:
            break
    return BurnError(f"{op}: shapes {' and '.join(str(tuple(s)) for s in shapes)} do not "
                     f"broadcast (axis {i - ndim}: sizes {sorted(sizes)})")


def broadcast_view(x: Tensor, shape: tuple[int, ...]) -> View:
    """``x``'s view broadcast to ``shape``, a shape ``broadcast_shapes`` gave with ``x``'s
    (so not checked again): ``expand``'s layout without its argument checks, for the
    operands of every elementwise op."""
    prim = x.prim
    if prim.shape == shape:
        return prim
    lead = len(shape) - len(prim.shape)
    strides = [0] * lead + [s if n == m else 0
                            for n, m, s in zip(prim.shape, shape[lead:], prim.strides)]
    return prim.with_layout(prim.offset, shape, strides)


@tensor_method
def expand(x: Tensor, *shape: Any) -> Tensor:
    """``x`` broadcast to ``shape`` without copying (-1 keeps a size)."""
    shape = _shape_arg(shape, "expand")
    if shape == x.shape:
        return x
    if len(shape) < x.ndim:
        raise BurnError(f"expand: cannot expand shape {x.shape} to fewer dimensions {shape}")
    lead = len(shape) - x.ndim
    # -1 keeps an existing size: a new leading axis has none to keep
    if any(s < -1 for s in shape) or -1 in shape[:lead]:
        raise BurnError(f"expand: invalid shape {shape} for a tensor of shape {x.shape}; sizes "
                        "must be >= 0, or -1 to keep one of the tensor's own axes")
    sizes, strides = [], []
    for i, size in enumerate(shape):
        if i < lead:
            sizes.append(size)
            strides.append(0)
            continue
        old, stride = x.shape[i - lead], x.prim.strides[i - lead]
        if size == -1 or size == old:
            sizes.append(old)
            strides.append(stride)
        elif old == 1:
            sizes.append(size)
            strides.append(0)
        else:
            raise BurnError(f"expand: cannot expand shape {x.shape} to {shape} (axis {i}: "
                            f"size {old} is not 1)")
    return _relayout(x, x.prim.offset, sizes, strides)


Tensor.broadcast_to = expand  # type: ignore[attr-defined]


@tensor_method
def flip(x: Tensor, axis: Any = None) -> Tensor:
    """The order of elements reversed along ``axis`` (every axis by default): a view with
    negative strides."""
    axes = normalize_axes(axis, x.ndim, "flip")
    offset, strides = x.prim.offset, list(x.prim.strides)
    for a in axes:
        if x.shape[a] > 1:
            offset += (x.shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
    return _relayout(x, offset, x.shape, strides)


@tensor_method
def narrow(x: Tensor, axis: int, start: int, length: int) -> Tensor:
    """``length`` elements of ``x`` from ``start`` along ``axis``: a view.

    Example:
        >>> burn.tensor([[1, 2, 3], [4, 5, 6]]).narrow(1, 1, 2).tolist()
        [[2, 3], [5, 6]]
    """
    a = normalize_axis(axis, x.ndim, "narrow")
    start, length = int_arg(start, "narrow", "start"), int_arg(length, "narrow", "length")
    if start < 0:
        start += x.shape[a]
    if not 0 <= start <= x.shape[a] or not 0 <= length <= x.shape[a] - start:
        raise BurnError(f"narrow: elements {start} to {start + length} do not fit axis {a} of "
                        f"shape {x.shape}")
    shape = list(x.shape)
    shape[a] = length
    return _relayout(x, x.prim.offset + start * x.prim.strides[a], shape, x.prim.strides)


def _index_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _int_index(k: Any, x: Tensor) -> int:
    """``k`` as an int index, or ``BurnError`` saying what to write instead."""
    if isinstance(k, Tensor) and k.dtype.is_bool:
        raise BurnError(f"indexing: a bool mask (shape {k.shape}) cannot index a tensor of "
                        f"shape {x.shape} (the result's shape would depend on the values); "
                        "use burn.where(mask, x, 0) or x.masked_fill(~mask, 0)")
    if isinstance(k, Tensor) and k.ndim:
        raise BurnError(f"indexing: an index tensor (shape {k.shape}) must be the only index: "
                        "x[index] selects along axis 0; for another axis use "
                        "x.index_select(axis, index)")
    if isinstance(k, (bool, np.bool_)):  # an int to Python, a mask to NumPy: neither guessed
        raise BurnError(f"indexing: a bool index ({k!r}) is not supported; use an int")
    try:
        return operator.index(k)  # a float (or a 0-d float tensor) is refused, not truncated
    except TypeError:
        raise BurnError(f"indexing: unsupported index {k!r}; use ints, slices, None, ... or "
                        "an integer tensor (burn.tensor([...]) for a list of indices)") from None


@tensor_method
def __getitem__(x: Tensor, key: Any) -> Tensor:  # noqa: N807 - the indexing protocol
    """Basic indexing: ints, slices with steps (negative too), ``None`` and ``...``; a view.
    An integer tensor index selects along the first axis (``index_select``; negative indices
    count from the end)."""
    if isinstance(key, Tensor) and not key.dtype.is_bool:
        from .index import selected  # index imports views: resolved at the call

        return selected(x, 0, key, wrap=True)
    items = _index_tuple(key)
    # identity, never ==: `k == ...` on a tensor or an array index is elementwise
    ellipses = [i for i, k in enumerate(items) if k is Ellipsis]
    if len(ellipses) > 1:
        raise BurnError("indexing: at most one '...' is allowed")
    consumed = sum(1 for k in items if k is not None and k is not Ellipsis)
    if consumed > x.ndim:
        raise BurnError(f"indexing: {consumed} indices for a tensor of shape {x.shape}")
    if ellipses:
        at = ellipses[0]
        items = items[:at] + (slice(None),) * (x.ndim - consumed) + items[at + 1:]
    items = items + (slice(None),) * (x.ndim - sum(1 for k in items if k is not None))
    offset, shape, strides, axis = x.prim.offset, [], [], 0
    for k in items:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        size, stride = x.shape[axis], x.prim.strides[axis]
        if isinstance(k, slice):
            try:
                start, stop, step = k.indices(size)
            except (TypeError, ValueError) as error:  # a float bound, a zero step
                raise BurnError(f"indexing: bad slice {k!r} for axis {axis} of shape "
                                f"{x.shape}: {error}") from None
            count = len(range(start, stop, step))
            offset += start * stride if count else 0
            shape.append(count)
            strides.append(stride * step)
        else:
            i = _int_index(k, x)
            if not -size <= i < size:
                raise BurnError(f"indexing: index {i} is out of range for axis {axis} of size "
                                f"{size} (shape {x.shape})")
            offset += (i % size) * stride
        axis += 1
    return _relayout(x, offset, shape, strides)


@tensor_method
def split(x: Tensor, split_size: Any, axis: int = 0) -> list[Tensor]:
    """Views of ``split_size`` elements along ``axis`` (the last may be shorter), or of the
    sizes listed."""
    a = normalize_axis(axis, x.ndim, "split")
    n = x.shape[a]
    if isinstance(split_size, (int, np.integer)):
        split_size = int(split_size)
        if split_size <= 0:
            raise BurnError(f"split: split_size must be positive, got {split_size}")
        sizes = [min(split_size, n - i) for i in range(0, n, split_size)] or [0]
    else:
        sizes = [int_arg(s, "split", "sizes") for s in split_size]
        if any(s < 0 for s in sizes):  # would give overlapping parts, not a split
            raise BurnError(f"split: sizes {sizes} must not be negative (shape {x.shape})")
        if sum(sizes) != n:
            raise BurnError(f"split: sizes {sizes} sum to {sum(sizes)}, not to axis {a}'s size "
                            f"{n} (shape {x.shape})")
    parts, start = [], 0
    for size in sizes:
        index = [slice(None)] * a + [slice(start, start + size)]
        parts.append(__getitem__(x, tuple(index)))
        start += size
    return parts


@tensor_method
def chunk(x: Tensor, chunks: int, axis: int = 0) -> list[Tensor]:
    """``chunks`` views of (nearly) equal size along ``axis``."""
    if chunks <= 0:
        raise BurnError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[normalize_axis(axis, x.ndim, "chunk")]
    return split(x, max(1, math.ceil(n / chunks)), axis)
