"""Backward rules of the indexing, joining and sorting ops.

A read by index (``gather``, ``take``: ``index_select``, ``embedding``, ``x[index]``) sends
its gradient back by a scatter-add into zeros, so repeated indices add up; ``scatter_add``
passes the gradient through to its input and gathers it for ``src``; ``cat`` and ``pad``
slice it; a sort's values scatter it back to where each value came from.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> w = burn.ones((3, 2), backend=ad).require_grad()
    >>> burn.embedding(w, burn.tensor([0, 0, 2], backend=ad)).sum().backward()[w].tolist()
    [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
        gsrc = None
        if needs[2]:
            gsrc = Tensor(grad.backend.gather(grad.prim, axis, index.prim), grad.backend)
            if gsrc.shape != tuple(src_shape):  # src elements past the index add nothing
                pads = [p for n, m in zip(reversed(src_shape), reversed(gsrc.shape))
                        for p in (0, n - m)]
                gsrc = bt.pad(gsrc, pads, 0.0)
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
