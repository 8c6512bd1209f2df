"""The backward rule of a view: the gradient of a relayout of a tracked tensor's storage.

A view (reshape, permute, slice, expand, flip, repeat's tiling) is a new layout over the
storage of its origin (``graph.TrackedView``). Its gradient flows back to the origin by
storage position: child element ``i`` sits at ``offset + sum(i_k * strides_k)``, which is
one element of the origin (whose layout never aliases). Broadcast axes (stride 0) send many
child elements to one position, so their gradients add up.

Four cases cost no index work: the same layout (a no-op view), a contiguous child over a
contiguous origin (a reshape), a permutation of the origin's axes (the gradient permuted
back), and broadcast axes, summed away first. Everything else is one gather with positions
computed on the host, uploaded once per layout and kept: each origin element reads the child
element at its position, or a zero where no child element lies (a slice).

A backward pass that builds a graph records that whole step as one node, whose rule is its
adjoint: the origin-shaped gradient read at the child's positions, which is the child's own
view of it (a gather where the origin's layout is not row-major). The adjoint's rule is the
step back again, so a view over a row-major origin needs no scatter at any order.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], backend=ad).require_grad()
    >>> x.T[0].sum().backward()[x].tolist()
    [[1.0, 0.0], [1.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cubepy.ir import dtypes as dt
from kernels.layout import View, contiguous_strides

from ..backend.base import Backend
from ..tensor import Tensor
from .functions import bt
from .graph import Rule, Saved, injective, plain


def relayout_rule(saved: Saved, origin: View, child: View) -> Rule:
    """The rule sending a gradient of ``child``'s shape back to ``origin``'s shape."""

    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        if not saved.create_graph:
            return (_to_origin(saved.inner, origin, child, grad),)
        value = _to_origin(saved.inner, origin, child, Tensor(plain(grad.prim), saved.inner))
        out = saved.backend.record("view_grad", value.prim, (grad.prim,),
                                   lambda s: _adjoint_rule(s, origin, child))
        return (Tensor(out, saved.backend),)

    return rule


def _adjoint_rule(saved: Saved, origin: View, child: View) -> Rule:
    """The rule of ``_to_origin``: a gradient of ``origin``'s shape read at ``child``'s
    positions. On a tracked gradient that read is a view (or a take) of it, recorded with
    ``relayout_rule`` (or take's rule) in its turn."""

    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        if _row_major(origin):
            dense = grad.contiguous()
            view = dense.prim.with_layout(dense.prim.offset + child.offset - origin.offset,
                                          child.shape, child.strides)
            return (Tensor(view, dense.backend),)
        index = _cached_index(saved.inner, origin, child, _origin_index)
        flat = grad.reshape(-1)
        return (Tensor(saved.backend.take(flat.prim, 0, index.prim), saved.backend).reshape(
            child.shape),)

    return rule


def _row_major(view: View) -> bool:
    strides = contiguous_strides(view.shape)
    return all(n == 1 or s == t for n, s, t in zip(view.shape, view.strides, strides))


def _to_origin(inner: Backend, origin: View, child: View, grad: Tensor) -> Tensor:
    grad, child = _sum_broadcast_axes(grad, child)
    if _same_layout(origin, child):
        return grad
    if origin.is_contiguous and child.is_contiguous and child.offset == origin.offset \
            and child.numel == origin.numel:
        return grad.reshape(origin.shape)
    order = _axis_permutation(origin, child)
    if order is not None:  # a transpose or permute: the gradient's view back, no copy
        return grad.permute(*order)
    flat = grad.reshape(-1)
    if injective(child):  # each origin element gets at most one: a gather, no atomics
        if child.numel < origin.numel:  # elements outside the child read a trailing 0
            flat = bt.cat([flat, bt.zeros(1, dtype=flat.dtype, backend=inner)])
        inverse = _cached_index(inner, origin, child, _inverse_index)
        return Tensor(inner.take(flat.prim, 0, inverse.prim), inner).reshape(origin.shape)
    # not reached by burn's own views (their aliasing is broadcasting, summed above)
    zeros = Tensor(inner.full((origin.numel,), 0, grad.dtype), inner)
    positions = _cached_index(inner, origin, child, _origin_index)
    return Tensor(inner.scatter_add(zeros.prim, 0, positions.prim, flat.prim),
                  inner).reshape(origin.shape)


def _axis_permutation(origin: View, child: View) -> list[int] | None:
    """``order`` with ``child == origin.permute(inverse of order)``, if the child is a pure
    permutation of the origin's axes (same offset, same (size, stride) pairs), else None."""
    if child.offset != origin.offset or child.ndim != origin.ndim:
        return None
    pairs = list(zip(child.shape, child.strides))
    order = []
    for pair in zip(origin.shape, origin.strides):
        if pair not in pairs or pairs.index(pair) in order:
            return None
        order.append(pairs.index(pair))
    return order


def _inverse_index(origin: View, child: View) -> np.ndarray:
    """For each origin element, the child element at its position (``child.numel`` where
    there is none)."""
    inverse = np.full(origin.numel, child.numel, np.int64)
    inverse[_origin_index(origin, child)] = np.arange(child.numel)
    return inverse


#: index tensors by (backend, layouts relative to the origin's offset): a training loop
#: takes the same views at every step, and each upload to a GPU waits for its queue
_INDEX_CACHE: dict[tuple, Tensor] = {}
_INDEX_CACHE_SIZE = 256


def _cached_index(inner: Backend, origin: View, child: View,
                  make: Callable[[View, View], np.ndarray]) -> Tensor:
    key = (id(inner), make.__name__, origin.shape, origin.strides, child.offset - origin.offset,
           child.shape, child.strides)
    index = _INDEX_CACHE.get(key)
    if index is None or index.backend is not inner:
        if len(_INDEX_CACHE) >= _INDEX_CACHE_SIZE:
            _INDEX_CACHE.clear()
        index = _INDEX_CACHE[key] = _index_tensor(inner, make(origin, child))
    return index


def _sum_broadcast_axes(grad: Tensor, child: View) -> tuple[Tensor, View]:
    """Gradients of broadcast axes (stride 0) summed, size-1 axes dropped: the same positions
    with no aliasing left from broadcasting."""
    broadcast = tuple(a for a, (n, s) in enumerate(zip(child.shape, child.strides))
                      if s == 0 and n > 1)
    if broadcast:
        grad = grad.sum(axis=broadcast)
    keep = [a for a, n in enumerate(child.shape) if a not in broadcast and n != 1]
    if len(keep) == child.ndim:
        return grad, child
    shape = tuple(child.shape[a] for a in keep)
    strides = tuple(child.strides[a] for a in keep)
    return grad.reshape(shape), View(child.storage, child.offset, shape, strides, child.dtype)


def _same_layout(a: View, b: View) -> bool:
    return a.offset == b.offset and a.shape == b.shape and all(
        n == 1 or s == t for n, s, t in zip(a.shape, a.strides, b.strides))


def _positions(view: View) -> np.ndarray:
    """The storage position of every element of ``view``, row-major."""
    positions = np.full((1,) * view.ndim, view.offset, np.int64)
    for axis, (n, s) in enumerate(zip(view.shape, view.strides)):
        shape = [1] * view.ndim
        shape[axis] = n
        positions = positions + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return np.broadcast_to(positions, view.shape).reshape(-1)


def _origin_index(origin: View, child: View) -> np.ndarray:
    """For each child element, the row-major index of the origin element at its position."""
    if _row_major(origin):
        return _positions(child) - origin.offset
    origin_positions = _positions(origin)
    order = np.argsort(origin_positions, kind="stable")
    found = np.searchsorted(origin_positions[order], _positions(child))
    return order[found]


def _index_tensor(inner: Backend, index: np.ndarray) -> Tensor:
    dtype = np.int32 if index.size == 0 or index.max() < 2**31 else np.int64
    if dtype == np.int64 and dt.int64.name not in inner.dtypes:
        raise RuntimeError("autodiff: a view of more than 2**31 elements on a backend without "
                           "int64")
    return Tensor(inner.from_numpy(index.astype(dtype)), inner)
