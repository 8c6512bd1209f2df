"""Automatic differentiation: ``Autodiff``, a backend that wraps any other and records a tape.

``burn.Autodiff(burn.Cpu())`` (or ``Cuda()``, ``Wgpu()``, ``NumPy()``) runs every op on the
inner backend; tensors made with ``require_grad()`` are the leaves, ``loss.backward()``
returns a ``Gradients`` object and ``w.grad(grads)`` (or ``grads[w]``) reads a leaf's
gradient as a tensor of the inner backend. No tensor is mutated: a graph can be
differentiated more than once and tensors can move between threads.
``loss.backward(create_graph=True)`` records the backward pass as well: its gradients are
tracked tensors of the ``Autodiff`` backend, and can be differentiated again.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> w = burn.tensor([[1.0, 2.0]], backend=ad).require_grad()
    >>> x = burn.tensor([[3.0], [4.0]], backend=ad)
    >>> grads = (w @ x).sum().backward()
    >>> grads[w].tolist()
    [[3.0, 4.0]]
"""

from . import tensor_api  # noqa: F401 - attaches require_grad, backward, grad, ...
from .backend import Autodiff
from .checkpointing import checkpoint
from .graph import Gradients

__all__ = ["Autodiff", "Gradients", "checkpoint"]
