"""Backward rules of the indexing, joining and sorting ops.

A read by index (``gather``, ``take``: ``index_select``, ``embedding``, ``x[index]``) sends
its gradient back by a scatter-add into zeros, so repeated indices add up; ``scatter_add``
passes the gradient through to its input and gathers it for ``src``; ``scatter_reduce``'s
max/min share it among the values that tie for a slot's result, its product sends each
factor the product of the others; ``cat`` and ``pad`` slice it; a sort's values scatter it
back to where each value came from.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> w = burn.ones((3, 2), backend=ad).require_grad()
    >>> burn.embedding(w, burn.tensor([0, 0, 2], backend=ad)).sum().backward()[w].tolist()
    [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cubepy.ir import dtypes as dt

from ..tensor import Tensor
from .functions import bt
from .graph import Rule


def _scatter_into_zeros(like: Tensor, axis: int, index: Tensor, src: Tensor) -> Tensor:
    """``src`` added into zeros shaped as ``like`` at ``index`` (on ``src``'s backend, so a
    graph-building pass records the scatter)."""
    zeros = bt.zeros_like(like)
    if index.numel() == 0:
        return zeros
    backend = src.backend
    return Tensor(backend.scatter_add(zeros.prim, axis, index.prim, src.prim), backend)


def gather_rule(x: Tensor, axis: int, index: Tensor) -> Rule:
    """The rule of ``gather(x, axis, index)``."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor, None]:
        return _scatter_into_zeros(x, axis, index, grad), None

    return rule


def take_rule(x: Tensor, axis: int, index: Tensor) -> Rule:
    """The rule of ``take(x, axis, index)`` (an index of any shape)."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor, None]:
        n = index.numel()
        rows = grad.reshape((*x.shape[:axis], n, *x.shape[axis + 1:]))
        spread = index.reshape(tuple(n if a == axis else 1 for a in range(x.ndim)))
        return _scatter_into_zeros(x, axis, spread.expand(*rows.shape), rows), None

    return rule


def scatter_add_rule(axis: int, index: Tensor, src_shape: Sequence[int]) -> Rule:
    """The rule of ``scatter_add(x, axis, index, src)`` (inputs ``x``, index, ``src``)."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, None, Any]:
        gsrc = _padded_to(_gathered(grad, axis, index), src_shape) if needs[2] else None
        return grad, None, gsrc

    return rule


def triangle_rule(diagonal: int, upper: bool) -> Rule:
    """The rule of ``triu`` (``upper``) or ``tril``."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        return (bt.triu(grad, diagonal) if upper else bt.tril(grad, diagonal),)

    return rule


def cat_rule(sizes: Sequence[int], axis: int) -> Rule:
    """The rule of ``cat`` of inputs with ``sizes`` along ``axis``."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> list[Any]:
        grads, start = [], 0
        for size, need in zip(sizes, needs):
            grads.append(grad.narrow(axis, start, size) if need else None)
            start += size
        return grads

    return rule


def pad_rule(shape: Sequence[int], pads: Sequence[tuple[int, int]]) -> Rule:
    """The rule of ``pad``: the gradient inside the padding."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        for axis, ((before, _), n) in enumerate(zip(pads, shape)):
            grad = grad.narrow(axis, before, n)
        return (grad,)

    return rule


def sort_rule(x: Tensor, axis: int, indices: Tensor) -> Rule:
    """The rule of a sort's (or top-k's) values: back to each value's place."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        return (_scatter_into_zeros(x, axis, indices, grad),)

    return rule


def _gathered(t: Tensor, axis: int, index: Tensor) -> Tensor:
    return Tensor(t.backend.gather(t.prim, axis, index.prim), t.backend)


def _reduced_into(base: Tensor, axis: int, index: Tensor, src: Tensor, op: str,
                  include_self: bool = True) -> Tensor:
    backend = src.backend
    return Tensor(backend.scatter_reduce(base.prim, axis, index.prim, src.prim, op,
                                         include_self), backend)


def _padded_to(gsrc: Tensor, src_shape: Sequence[int]) -> Tensor:
    """``gsrc`` (the index's shape) padded with zeros to ``src``'s: the src elements past
    the index take no part."""
    if gsrc.shape == tuple(src_shape):
        return gsrc
    pads = [p for n, m in zip(reversed(src_shape), reversed(gsrc.shape)) for p in (0, n - m)]
    return bt.pad(gsrc, pads, 0.0)


def _other_factors(v: Tensor, zeros: Tensor, nonzero: Tensor) -> Tensor:
    """The product of the other factors of each factor ``v``'s slot: the slot's product of
    nonzero factors over ``v`` when ``v`` is its only zero or it has none, else 0."""
    is_zero = v == 0
    alone = (zeros - is_zero.to(zeros.dtype)) == 0
    return bt.where(alone, nonzero / bt.where(is_zero, 1.0, v), 0.0)


def scatter_reduce_rule(op: str, include_self: bool, axis: int, x: Tensor, index: Tensor,
                        src: Tensor, out: Tensor | None) -> Rule:
    """The rule of ``scatter_reduce(x, axis, index, src, op, include_self)``: ``add`` passes
    the gradient through; ``max``/``min`` share a slot's gradient evenly among the values
    equal to its result; ``mul`` sends each factor the product of its slot's other factors."""
    count_dtype = dt.float32 if x.dtype.bits < 32 else x.dtype  # counts exact past 2048

    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, None, Any]:
        part = src[tuple(slice(0, n) for n in index.shape)]  # the elements the index sends
        zeros = bt.zeros(x.shape, count_dtype, grad.backend)

        def tally(marks: Tensor) -> Tensor:  # how many marked elements land on each slot
            return _reduced_into(zeros, axis, index, marks.to(count_dtype), "add")

        written = None
        if not include_self:
            written = tally(bt.ones(index.shape, count_dtype, grad.backend)) > 0
        if op == "add":
            gx = grad if include_self else bt.where(written, 0.0, grad)
            gsrc = _gathered(grad, axis, index)
        elif op in ("max", "min"):
            x_hits = (x == out) if include_self else ~written
            src_hits = part == _gathered(out, axis, index)
            count = x_hits.to(count_dtype) + tally(src_hits)
            share = (grad.to(count_dtype) / count.clamp(min=1)).to(grad.dtype)
            gx = bt.where(x_hits, share, 0.0)
            gsrc = bt.where(src_hits, _gathered(share, axis, index), 0.0)
        else:
            x_zero = (x == 0).to(count_dtype) if include_self else zeros
            slot_zeros = x_zero + tally(part == 0)
            nonzero = _reduced_into(bt.where(x == 0, 1.0, x), axis, index,
                                    bt.where(part == 0, 1.0, part), "mul", include_self)
            gx = (grad * _other_factors(x, slot_zeros, nonzero) if include_self
                  else bt.where(written, 0.0, grad))
            gsrc = _gathered(grad, axis, index) * _other_factors(
                part, _gathered(slot_zeros, axis, index), _gathered(nonzero, axis, index))
        return gx, None, _padded_to(gsrc, src.shape) if needs[2] else None

    return rule
