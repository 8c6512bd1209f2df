"""Activation checkpointing: ``burn.checkpoint(fn, *args)``.

``fn(*args)`` runs as usual, but on the ``Autodiff`` backend its graph is dropped when it
returns: one node stands for the whole call. Its parents are the tracked tensors the call
read from outside (its arguments and the parameters ``fn`` closes over), found by walking
the call's graph once; its rule runs ``fn`` again and the backward pass through that
recomputation, stopping at those parents. A deep network checkpointed block by block keeps
each block's input instead of every intermediate result, for one more forward pass of each
block during the backward pass. It composes with ``backward(create_graph=True)``.

Random numbers replay: the recomputation starts from the states the default generator (and
any in ``generators``) had when the call began, so ``dropout`` draws the same mask, and the
generators are set back afterwards, so the draws after the backward pass are unchanged.

Example:
    >>> ad = burn.Autodiff(burn.NumPy())
    >>> w = burn.ones((3, 3), backend=ad).require_grad()
    >>> block = lambda h: (h @ w).tanh()
    >>> h = burn.checkpoint(block, burn.ones((2, 3), backend=ad))
    >>> h.sum().backward()[w].shape
    (3, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cubepy.ir.dtypes import DType

from ..backend.base import BurnError
from ..tensor import Tensor
from ..tensor.random import Generator, default_generator
from .graph import (
    Node,
    Rule,
    Saved,
    TrackedView,
    backward,
    injective,
    new_serial,
    node_of,
    plain,
)


def checkpoint(fn: Callable[..., Tensor], *args: Any,
               generators: Sequence[Generator] = ()) -> Tensor:
    """``fn(*args)``, whose intermediate results the backward pass recomputes instead of
    keeping (see the module docstring). ``fn`` returns one tensor and computes the same
    thing each call; ``generators`` lists the generators it draws from besides the default
    one. On a backend without ``Autodiff``, or when nothing ``fn`` reads is tracked, it is
    just ``fn(*args)``.

    Example:
        >>> h = burn.checkpoint(lambda x: burn.gelu(x @ w1) @ w2, h)  # doctest: +SKIP
    """
    if not callable(fn):
        raise BurnError(f"checkpoint: fn must be callable, got {type(fn).__name__}")
    replayed = [default_generator(), *generators]
    if not all(isinstance(g, Generator) for g in replayed):
        raise BurnError("checkpoint: generators must be burn.Generator objects, got "
                        f"{[type(g).__name__ for g in generators]}")
    states = [g.get_state() for g in replayed]
    first = new_serial()
    out = fn(*args)
    if not isinstance(out, Tensor):
        raise BurnError(f"checkpoint: fn must return one tensor, got {type(out).__name__}; "
                        "checkpoint each output's computation on its own")
    node = node_of(out.prim)
    if node is None or node.serial < first:  # untracked, or made before the call
        return out
    outside = _outside_parents(node, first)
    if not outside:  # fn made its own leaves: nothing outside has a gradient through it
        return out
    view = plain(out.prim)
    if not injective(view):  # the node's output is the origin of later views
        view = node.inner.copy(view)
    shape, dtype = view.shape, view.dtype  # not the node itself: a cycle would outlive its step
    call = Node("checkpoint", outside, lambda saved: _recompute_rule(
        saved, outside, shape, dtype, fn, args, replayed, states), shape, dtype, node.inner)
    return Tensor(TrackedView(view.storage, view.offset, view.shape, view.strides, view.dtype,
                              call), out.backend)


def _outside_parents(root: Node, first: int) -> tuple[Node, ...]:
    """The nodes made before serial ``first`` that the call's nodes (from ``root``) read,
    in the order they are found."""
    outside: dict[Node, None] = {}
    seen = {id(root)}
    stack = [root]
    while stack:
        node = stack.pop()
        for parent in node.parents:
            if parent is None or id(parent) in seen:
                continue
            seen.add(id(parent))
            if parent.serial < first:
                outside[parent] = None
            else:
                stack.append(parent)
    return tuple(outside)


def _recompute_rule(saved: Saved, outside: tuple[Node, ...], shape: tuple[int, ...],
                    dtype: DType, fn: Callable[..., Tensor], args: tuple,
                    replayed: list[Generator], states: list[tuple[int, int]]) -> Rule:
    """The rule of a checkpointed call of ``fn`` on ``args`` that gave a tensor of ``shape``
    and ``dtype`` and read the nodes ``outside``."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        now = [g.get_state() for g in replayed]
        for g, state in zip(replayed, states):
            g.set_state(state)
        try:
            again = fn(*args)
        finally:
            for g, state in zip(replayed, now):
                g.set_state(state)
        root = node_of(again.prim) if isinstance(again, Tensor) else None
        if root is None or again.shape != shape or again.dtype != dtype:
            raise BurnError(f"checkpoint: fn's recomputation in the backward pass gave "
                            f"{getattr(again, 'shape', type(again).__name__)}, the first call "
                            f"a tracked tensor of shape {shape} ({dtype.name}); fn must "
                            "compute the same thing each call")
        grads = backward(root, grad, saved.backend if saved.create_graph else None,
                         stop_at=frozenset(outside))
        return tuple(grads.get(parent) for parent in outside)

    return rule
