"""The gradient methods of ``Tensor``: ``require_grad``, ``backward``, ``grad``, ``detach``,
``inner`` and ``requires_grad``. They need a tensor of an ``Autodiff`` backend.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> x = burn.tensor([3.0], backend=ad).require_grad()
    >>> y = x * x
    >>> y.backward()[x].tolist(), y.detach().requires_grad
    ([6.0], False)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend.base import BurnError
from ..tensor.tensor import Tensor, tensor_method
from .backend import Autodiff
from .graph import Gradients, node_of, plain
from .graph import backward as run_backward


def _autodiff_backend(x: Tensor, op: str) -> Autodiff:
    if not isinstance(x.backend, Autodiff):
        raise BurnError(f"{op}: the tensor is on the {x.backend.name} backend, which records no "
                        f"gradients; create it on burn.Autodiff({x.backend!r}) or move it with "
                        f".to(burn.Autodiff({x.backend!r}))")
    return x.backend


@tensor_method
def require_grad(x: Tensor) -> Tensor:
    """A leaf of the graph with ``x``'s values: ``backward`` computes its gradient.

    Example:
        >>> w = burn.zeros((2, 2), backend=burn.Autodiff("cpu")).require_grad()
    """
    backend = _autodiff_backend(x, "require_grad")
    if not x.dtype.is_float:
        raise BurnError(f"require_grad: only float tensors have gradients, got {x.dtype.name} "
                        f"(shape {x.shape}); convert with .to(burn.float32)")
    return Tensor(backend.leaf(x.prim), backend)


@tensor_method
def backward(x: Tensor, grad: Tensor | None = None, create_graph: bool = False) -> Gradients:
    """The gradients of ``x`` with respect to every leaf it depends on. ``x`` must have one
    element unless ``grad`` (its shape, on the inner backend or this one) weights it.

    With ``create_graph=True`` the backward pass is itself recorded: the gradients are
    tensors of this ``Autodiff`` backend, tracked, and a loss made from them can be
    differentiated again (Hessian-vector products, gradient penalties, meta-learning).

    Example:
        >>> ad = burn.Autodiff(burn.NumPy())
        >>> x = burn.tensor([1.0, 2.0], backend=ad).require_grad()
        >>> slope = (x * x * x).sum().backward(create_graph=True)[x]  # 3 x^2, tracked
        >>> slope.sum().backward()[x].tolist()                          # 6 x
        [6.0, 12.0]
    """
    backend = _autodiff_backend(x, "backward")
    node = node_of(x.prim)
    if node is None:
        raise BurnError(f"backward: the tensor (shape {x.shape}) depends on no tensor that "
                        "requires a gradient; mark the parameters with .require_grad() (a "
                        "gradient that is constant in the leaves, as that of a linear loss, "
                        "has no gradient of its own)")
    if not isinstance(create_graph, (bool, np.bool_)):
        raise BurnError(f"backward: create_graph must be True or False, got {create_graph!r}")
    on = backend if create_graph else backend.inner
    if grad is None:
        if x.numel() != 1:
            raise BurnError(f"backward: the tensor has shape {x.shape}; reduce it to one "
                            "element (e.g. .sum() or .mean()) or pass grad= of that shape")
        seed = Tensor(backend.inner.full(x.shape, 1, x.dtype), on)
    else:
        if not isinstance(grad, Tensor) or grad.shape != x.shape:
            raise BurnError(f"backward: grad must be a tensor of shape {x.shape}, got "
                            f"{getattr(grad, 'shape', type(grad).__name__)}")
        seed = _seed(grad, backend, create_graph).to(x.dtype)
    return Gradients(run_backward(node, seed, backend if create_graph else None))


def _seed(grad: Tensor, backend: Autodiff, create_graph: bool) -> Tensor:
    """``grad`` on the backend the rules compute on: the inner one, or this ``Autodiff``
    backend (keeping ``grad``'s own tracking) when the pass builds a graph."""
    if grad.backend not in (backend, backend.inner):
        grad = grad.to(backend.inner)
    if create_graph:
        return Tensor(grad.prim, backend)
    return Tensor(plain(grad.prim), backend.inner)


@tensor_method
def grad(x: Tensor, grads: Gradients) -> Any:
    """The gradient of the leaf ``x`` in ``grads`` (a tensor of the inner backend; of the
    ``Autodiff`` backend after ``backward(create_graph=True)``), or None when the loss does
    not depend on ``x``."""
    if not isinstance(grads, Gradients):
        raise BurnError(f"grad: expected the Gradients that backward() returned, got "
                        f"{type(grads).__name__}")
    return grads.get(x)


@tensor_method
def detach(x: Tensor) -> Tensor:
    """``x``'s values on the same backend, tracking nothing (no copy)."""
    return Tensor(plain(x.prim), x.backend)


@tensor_method
def inner(x: Tensor) -> Tensor:
    """``x`` as a tensor of the inner backend of an ``Autodiff`` backend (no copy)."""
    backend = _autodiff_backend(x, "inner")
    return Tensor(plain(x.prim), backend.inner)


Tensor.requires_grad = property(  # type: ignore[attr-defined]
    lambda x: node_of(x.prim) is not None,
    doc="Whether gradients flow to this tensor (a leaf or a result of one).")
