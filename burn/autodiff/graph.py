"""The Autodiff backend's tape: nodes, tracked views, and the backward pass over them.

Every tensor that needs a gradient has a ``TrackedView`` as its primitive: a ``View`` of the
inner backend's storage plus the ``Node`` that made it. A node holds its op's name, one
parent per op input (``None`` where the input needs no gradient) and the op's backward rule,
which maps the gradient of the output to one gradient per input. Leaves (``require_grad``)
have no rule. Nothing is mutated: ``backward`` walks the nodes from the loss and returns a
``Gradients`` mapping, so one graph can be differentiated twice and tensors can be shared
between threads.

A rule is made when ``backward`` reaches its node, from the node's ``make_rule`` and a
``Saved`` that hands it the op's tensors: on the inner backend (a plain backward, whose
gradients are untracked), or on the ``Autodiff`` backend itself with their tracking
(``backward(create_graph=True)``), so that the rule's own ops are recorded and its gradients
can be differentiated again (gradients of gradients: Hessian-vector products, gradient
penalties).

A view of a tracked tensor (reshape, permute, slicing, broadcasting) shares its storage, so
its node points straight at the *origin* of the chain: the op output or leaf whose storage
it is. That origin's layout never aliases (``injective``), so a storage position names one
of its elements, whatever chain of views led there (see ``relayout.py``).

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> x = burn.tensor([1.0, 2.0], backend=ad).require_grad()
    >>> grads = (x * x).sum().backward()
    >>> x.grad(grads).tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from cubepy.ir.dtypes import DType
from kernels.layout import View

from ..backend.base import Backend, BurnError
from ..tensor import Tensor

#: ``rule(grad_of_output, needs) -> one gradient (or None) per input``; ``needs[i]`` says
#: whether input ``i`` wants one, so a rule can skip work (a matmul's data operand)
Rule = Callable[[Any, tuple[bool, ...]], Sequence[Any]]
#: ``make_rule(saved) -> Rule``: a node's rule, made when the backward pass reaches it
MakeRule = Callable[["Saved"], Rule]
#: numbers nodes in the order they are made (``checkpoint`` tells a call's nodes apart)
_SERIALS = itertools.count()


def new_serial() -> int:
    """A number above every node's serial so far and below every later node's."""
    return next(_SERIALS)


class Node:
    """One recorded op (or a leaf): see the module docstring. ``output`` is the op's result
    (a plain view) when its rule reads it, else None: the node keeps no more memory alive
    than the rule needs. ``serial`` numbers nodes in the order they were made."""

    __slots__ = ("op", "parents", "make_rule", "shape", "dtype", "inner", "output", "serial",
                 "__weakref__")

    def __init__(self, op: str, parents: tuple[Node | None, ...], make_rule: MakeRule | None,
                 shape: tuple[int, ...], dtype: DType, inner: Backend,
                 output: View | None = None):
        self.op = op
        self.parents = parents
        self.make_rule = make_rule
        self.shape = shape
        self.dtype = dtype
        self.inner = inner
        self.output = output
        self.serial = next(_SERIALS)

    @property
    def is_leaf(self) -> bool:
        return self.make_rule is None

    def __repr__(self) -> str:
        return f"Node({self.op}, shape={self.shape}, dtype={self.dtype.name})"


@dataclass(frozen=True, eq=False)
class TrackedView(View):
    """A view whose tensor needs a gradient: ``node`` made it; ``origin`` is the tracked view
    whose storage it shares when it is a view of one (``None`` for op outputs and leaves)."""

    node: Node | None = None
    origin: TrackedView | None = None

    def with_layout(self, offset: int, shape: Sequence[int], strides: Sequence[int]) -> View:
        child = View(self.storage, int(offset), tuple(shape), tuple(strides), self.dtype)
        if self.node is None:
            return child
        from .relayout import relayout_rule  # relayout builds on this module

        origin = self.origin or self
        base = plain(origin)
        node = Node("view", (origin.node,), lambda saved: relayout_rule(saved, base, child),
                    child.shape, child.dtype, origin.node.inner)
        return TrackedView(child.storage, child.offset, child.shape, child.strides, child.dtype,
                           node, origin)


def plain(view: View) -> View:
    """``view`` without tracking: what the inner backend's ops receive."""
    if type(view) is View:
        return view
    return View(view.storage, view.offset, view.shape, view.strides, view.dtype)


def node_of(view: View | None) -> Node | None:
    """The node of a tracked view, else None."""
    return view.node if isinstance(view, TrackedView) else None


def injective(view: View) -> bool:
    """Whether no two elements of ``view`` share a storage position."""
    axes = sorted((abs(s), n) for n, s in zip(view.shape, view.strides) if n > 1)
    extent = 1  # positions spanned by the faster axes so far
    for stride, size in axes:
        if stride < extent:
            return False
        extent = stride * (size - 1) + extent
    return True


class Saved:
    """What a node's rule computes with, made by ``backward`` when it reaches the node.

    ``saved(view)`` is one of the op's inputs (or another view the rule keeps) as a tensor,
    ``saved.output()`` the op's result, ``saved.backend`` the backend of both: the inner
    backend, or the ``Autodiff`` backend when the pass builds a graph of its own
    (``create_graph``), whose tensors keep their tracking so that the rule's ops are
    recorded. ``saved.inner`` is always the inner backend (for caches of host-built tables).
    """

    __slots__ = ("node", "backend", "create_graph")

    def __init__(self, node: Node, backend: Backend, create_graph: bool):
        self.node = node
        self.backend = backend
        self.create_graph = create_graph

    @property
    def inner(self) -> Backend:
        return self.node.inner

    def __call__(self, view: View) -> Tensor:
        return Tensor(view if self.create_graph else plain(view), self.backend)

    def output(self) -> Tensor:
        out = self.node.output
        if out is None:
            raise RuntimeError(f"autodiff: the rule of {self.node.op} reads its output, but "
                               "its node kept none (record(..., keeps_output=True))")
        if self.create_graph:
            out = TrackedView(out.storage, out.offset, out.shape, out.strides, out.dtype,
                              self.node)
        return Tensor(out, self.backend)


def backward(root: Node, seed: Tensor, backend: Backend | None = None,
             stop_at: Collection[Node] = ()) -> dict[Node, Any]:
    """The gradient of every leaf that ``root`` depends on, given ``seed`` (a tensor with
    ``root``'s shape) as the gradient of ``root``. Without ``backend`` the rules compute on
    the inner backend and record nothing; with the ``Autodiff`` backend (``seed`` on it) they
    compute on it, so the gradients are tracked and can be differentiated again. Nodes in
    ``stop_at`` count as leaves: the pass gives their gradients and goes no further."""
    return backward_from({root: seed}, backend, stop_at)


def backward_from(seeds: dict[Node, Any], backend: Backend | None = None,
                  stop_at: Collection[Node] = ()) -> dict[Node, Any]:
    """``backward`` from several roots at once, each with its gradient in ``seeds``: one
    pass, in which a node that several roots depend on runs its rule once."""
    create_graph = backend is not None
    grads: dict[Node, Any] = dict(seeds)
    leaves: dict[Node, Any] = {}
    for node in _reverse_topological(list(seeds), stop_at):
        grad = grads.pop(node, None)
        if grad is None:
            continue
        if node.is_leaf or node in stop_at:
            leaves[node] = grad
            continue
        needs = tuple(p is not None for p in node.parents)
        saved = Saved(node, backend if create_graph else node.inner, create_graph)
        results = node.make_rule(saved)(grad, needs)
        if len(results) != len(node.parents):
            raise RuntimeError(f"autodiff: the rule of {node.op} gave {len(results)} gradients "
                               f"for {len(node.parents)} inputs")
        for parent, result in zip(node.parents, results):
            if parent is None or result is None:
                continue
            result = _fitted(node, parent, result)
            grads[parent] = result if parent not in grads else grads[parent] + result
    return leaves


def _fitted(node: Node, parent: Node, grad: Any) -> Any:
    if tuple(grad.shape) != parent.shape:
        raise RuntimeError(f"autodiff: the rule of {node.op} gave a gradient of shape "
                           f"{tuple(grad.shape)} for an input of shape {parent.shape}")
    return grad if grad.dtype == parent.dtype else grad.to(parent.dtype)


def _reverse_topological(roots: list[Node], stop_at: Collection[Node] = ()) -> list[Node]:
    """Nodes reachable from ``roots`` without passing a node of ``stop_at``, each after every
    node that consumes it (iterative: a long chain of ops must not hit Python's recursion
    limit). A root that another root consumes comes after it, as any node does."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:  # one depth-first walk each, sharing what they have seen
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack: list[tuple[Node, int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i < len(node.parents) and node not in stop_at:
                stack.append((node, i + 1))
                parent = node.parents[i]
                if parent is not None and id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append((parent, 0))
            else:
                order.append(node)
    order.reverse()
    return order


class Gradients:
    """The gradients of one ``backward``: ``grads[x]`` or ``x.grad(grads)`` for a leaf ``x``
    (a tensor of the inner backend, or ``None`` when the loss does not depend on ``x``; after
    ``backward(create_graph=True)`` a tensor of the ``Autodiff`` backend, tracked, that can be
    differentiated again).

    Example:
        >>> grads = loss.backward()  # doctest: +SKIP
        >>> w_grad = grads[w]  # doctest: +SKIP
    """

    def __init__(self, leaves: dict[Node, Any]):
        self._leaves = leaves

    def get(self, tensor: Any) -> Any:
        """The gradient of the leaf ``tensor``, or None."""
        node = node_of(getattr(tensor, "prim", None))
        if node is None:
            raise BurnError("grad: the tensor does not track gradients; call "
                            "x = x.require_grad() on an Autodiff backend's tensor first")
        if not node.is_leaf:
            raise BurnError(f"grad: the tensor is the result of {node.op}, not a leaf; only "
                            "tensors made with require_grad() keep their gradients")
        return self._leaves.get(node)

    def __getitem__(self, tensor: Any) -> Any:
        return self.get(tensor)

    def leaves(self) -> dict[Node, Any]:
        """Every leaf's gradient by its node (a copy: ``Gradients`` is never mutated)."""
        return dict(self._leaves)

    def __add__(self, other: Gradients) -> Gradients:
        """Leafwise sums (a leaf in one only keeps its gradient): the gradients of the sum of
        two losses over the same leaves, as accumulating batches needs.

        Example:
            >>> total = first.backward() + second.backward()  # doctest: +SKIP
        """
        if not isinstance(other, Gradients):
            return NotImplemented
        summed = dict(self._leaves)
        for node, grad in other._leaves.items():
            summed[node] = grad if node not in summed else summed[node] + grad
        return Gradients(summed)

    def scaled(self, factor: float) -> Gradients:
        """Every gradient times ``factor`` (in its own dtype).

        Example:
            >>> mean = (first.backward() + second.backward()).scaled(0.5)  # doctest: +SKIP
        """
        return Gradients({node: grad * factor for node, grad in self._leaves.items()})

    def __len__(self) -> int:
        return len(self._leaves)

    def __repr__(self) -> str:
        return f"Gradients({len(self._leaves)} leaves)"
