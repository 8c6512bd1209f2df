"""Activation checkpointing: ``burn.checkpoint(fn, *args)``.

``fn(*args)`` runs as usual, but on the ``Autodiff`` backend its graph is dropped when it
returns: one node stands for the whole call (with several outputs, each output's node hands
its gradient to that one, which the backward pass runs once with them all). Its parents are
the tracked tensors the call read from outside (its arguments and the parameters ``fn``
closes over), found by walking the call's graph once; its rule runs ``fn`` again and the
backward pass through that recomputation, stopping at those parents. A deep network
checkpointed block by block keeps each block's input instead of every intermediate result,
for one more forward pass of each block during the backward pass. It composes with
``backward(create_graph=True)``.

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
    backward_from,
    injective,
    new_serial,
    node_of,
    plain,
)


def checkpoint(fn: Callable[..., Any], *args: Any,
               generators: Sequence[Generator] = ()) -> Any:
    """``fn(*args)``, whose intermediate results the backward pass recomputes instead of
    keeping (see the module docstring). ``fn`` returns a tensor, or a tuple or list of
    tensors (recomputed together, once per backward pass), and computes the same thing each
    call; ``generators`` lists the generators it draws from besides the default one. On a
    backend without ``Autodiff``, or when nothing ``fn`` reads is tracked, it is just
    ``fn(*args)``.

    Example:
        >>> h = burn.checkpoint(lambda x: burn.gelu(x @ w1) @ w2, h)  # doctest: +SKIP
        >>> h, weights = burn.checkpoint(attention_block, h)  # doctest: +SKIP
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
    outputs = _outputs(out)
    made = [i for i, o in enumerate(outputs)  # tracked, and made by the call
            if node_of(o.prim) is not None and node_of(o.prim).serial >= first]
    outside = _outside_parents([node_of(outputs[i].prim) for i in made], first)
    if not outside:  # untracked, or fn made its own leaves: no gradient flows through it
        return out
    views = {i: _own_view(outputs[i]) for i in made}
    meta = {i: (v.shape, v.dtype) for i, v in views.items()}  # not the nodes: no cycle
    inner = node_of(outputs[made[0]].prim).inner
    recompute = (fn, args, replayed, states)
    if isinstance(out, Tensor):
        shape, dtype = meta[0]
        call = Node("checkpoint", outside, lambda saved: _recompute_rule(
            saved, outside, meta, recompute), shape, dtype, inner)
        return _tracked(views[0], call, out.backend)
    # several outputs: one node recomputes them all; each output's node hands it its
    # gradient, and the backward pass adds those up (_Parts) before that node runs once
    joint = Node("checkpoint", outside, lambda saved: _recompute_rule(
        saved, outside, meta, recompute), (), outputs[made[0]].dtype, inner)
    results = list(outputs)
    for i in made:
        shape, dtype = meta[i]
        part = Node("checkpoint_output", (joint,), _part_rule(i, joint), shape, dtype, inner)
        results[i] = _tracked(views[i], part, outputs[i].backend)
    return type(out)(results)


def _outputs(out: Any) -> tuple[Tensor, ...]:
    if isinstance(out, Tensor):
        return (out,)
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, Tensor) for o in out):
        return tuple(out)
    raise BurnError(f"checkpoint: fn must return a tensor, or a tuple or list of tensors, got "
                    f"{_described(out)}; checkpoint the tensors' computation, and compute "
                    "the rest outside")


def _described(out: Any) -> str:
    if isinstance(out, (tuple, list)):
        return f"a {type(out).__name__} of {', '.join(type(o).__name__ for o in out) or '()'}"
    return type(out).__name__


def _own_view(out: Tensor) -> Any:
    """``out``'s plain view, copied if later views would have it as their origin."""
    view = plain(out.prim)
    return view if injective(view) else node_of(out.prim).inner.copy(view)


def _tracked(view: Any, node: Node, backend: Any) -> Tensor:
    return Tensor(TrackedView(view.storage, view.offset, view.shape, view.strides, view.dtype,
                              node), backend)


class _Parts:
    """The gradients of a checkpointed call's outputs, by output index, as the joint node
    receives them: the backward pass adds the parts up (``+``) and checks them against the
    node's shape and dtype, which ``_Parts`` carries."""

    def __init__(self, parts: dict[int, Any], shape: tuple[int, ...], dtype: DType):
        self.parts, self.shape, self.dtype = parts, shape, dtype

    def __add__(self, other: _Parts) -> _Parts:
        merged = dict(self.parts)
        for i, grad in other.parts.items():
            merged[i] = grad if i not in merged else merged[i] + grad
        return _Parts(merged, self.shape, self.dtype)


def _part_rule(i: int, joint: Node) -> Callable[[Saved], Rule]:
    """The rule of output ``i``'s node: its gradient, handed to the joint node."""
    shape, dtype = joint.shape, joint.dtype

    def make(saved: Saved) -> Rule:
        return lambda grad, needs: (_Parts({i: grad}, shape, dtype),)

    return make


def _outside_parents(roots: list[Node], first: int) -> tuple[Node, ...]:
    """The nodes made before serial ``first`` that the call's nodes (from ``roots``) read,
    in the order they are found."""
    outside: dict[Node, None] = {}
    seen = {id(root) for root in roots}
    stack = list(roots)
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


def _recompute_rule(saved: Saved, outside: tuple[Node, ...],
                    meta: dict[int, tuple[tuple[int, ...], DType]], recompute: tuple) -> Rule:
    """The rule of a checkpointed call ``recompute = (fn, args, generators, states)`` whose
    outputs ``meta`` (index: shape and dtype) were tracked and read the nodes ``outside``."""
    fn, args, replayed, states = recompute

    def rule(grad: Any, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        now = [g.get_state() for g in replayed]
        for g, state in zip(replayed, states):
            g.set_state(state)
        try:
            again = fn(*args)
        finally:
            for g, state in zip(replayed, now):
                g.set_state(state)
        parts = grad.parts if isinstance(grad, _Parts) else {0: grad}
        seeds: dict[Node, Any] = {}
        for i, seed in parts.items():
            root = _recomputed_root(again, i, meta[i])
            seeds[root] = seed if root not in seeds else seeds[root] + seed
        grads = backward_from(seeds, saved.backend if saved.create_graph else None,
                              stop_at=frozenset(outside))
        return tuple(grads.get(parent) for parent in outside)

    return rule


def _recomputed_root(again: Any, i: int, meta: tuple[tuple[int, ...], DType]) -> Node:
    """The node of output ``i`` of the recomputation, checked against the first call's."""
    shape, dtype = meta
    outputs = again if isinstance(again, (tuple, list)) else (again,)
    out = outputs[i] if i < len(outputs) else None
    root = node_of(out.prim) if isinstance(out, Tensor) else None
    if root is None or out.shape != shape or out.dtype != dtype:
        raise BurnError(f"checkpoint: fn's recomputation in the backward pass gave "
                        f"{getattr(out, 'shape', type(out).__name__)} for output {i}, the "
                        f"first call a tracked tensor of shape {shape} ({dtype.name}); fn "
                        "must compute the same thing each call")
    return root
