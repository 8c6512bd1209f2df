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
def backward(x: Tensor, grad: Tensor | None = None) -> Gradients:
    """The gradients of ``x`` with respect to every leaf it depends on. ``x`` must have one
    element unless ``grad`` (its shape, on the inner backend or this one) weights it.

    Example:
        >>> grads = loss.backward()  # doctest: +SKIP
        >>> grads[w]  # doctest: +SKIP
    """
    backend = _autodiff_backend(x, "backward")
    node = node_of(x.prim)
    if node is None:
        raise BurnError(f"backward: the tensor (shape {x.shape}) depends on no tensor that "
                        "requires a gradient; mark the parameters with .require_grad()")
    if grad is None:
        if x.numel() != 1:
            raise BurnError(f"backward: the tensor has shape {x.shape}; reduce it to one "
                            "element (e.g. .sum() or .mean()) or pass grad= of that shape")
        seed = Tensor(backend.inner.full(x.shape, 1, x.dtype), backend.inner)
    else:
        if not isinstance(grad, Tensor) or grad.shape != x.shape:
            raise BurnError(f"backward: grad must be a tensor of shape {x.shape}, got "
                            f"{getattr(grad, 'shape', type(grad).__name__)}")
        seed = Tensor(plain(grad.prim), backend.inner) if grad.backend in (
            backend, backend.inner) else grad.to(backend.inner)
        seed = seed.to(x.dtype)
    return Gradients(run_backward(node, seed))


@tensor_method
def grad(x: Tensor, grads: Gradients) -> Any:
    """The gradient of the leaf ``x`` in ``grads`` (a tensor of the inner backend), or None
    when the loss does not depend on ``x``."""
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
