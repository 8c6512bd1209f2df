"""Backward rule of fused scaled dot-product attention.

The forward op saves its inputs, its output and each query row's log-sum-exp (``lse``), so
the backward op (``attention_backward``, one fused kernel on the cubepy backends)
recomputes the attention weights block by block instead of keeping the (Sq, Sk) matrix.
``lse`` is not differentiable: it is a saved value, never an input of the graph. Attention
with a mask, in float64 or with head dimensions the kernels do not take is composed of
matmul, softmax and elementwise ops in ``burn.tensor.attention``, whose own rules apply.

Example:
    >>> ad = burn.Autodiff(burn.NumPy())  # the reference backend: no kernels to compile
    >>> q = burn.ones((1, 2, 3, 4), backend=ad).require_grad()
    >>> grads = burn.scaled_dot_product_attention(q, q, q).sum().backward()
    >>> q.grad(grads).shape
    (1, 2, 3, 4)
"""

from __future__ import annotations

from typing import Any

from ..backend.base import Backend
from ..tensor import Tensor
from .graph import Rule


def attention_rule(inner: Backend, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
                   causal: bool, scale: float) -> Rule:
    """The rule of ``attention(q, k, v)`` (inputs ``q``, ``k``, ``v``), from the saved
    output and log-sum-exp."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, Any, Any]:
        # one kernel computes all three (dq needs the same recomputed weights as dk and dv)
        grads = inner.attention_backward(q.prim, k.prim, v.prim, out.prim, lse.prim,
                                         grad.prim, causal, scale)
        return tuple(Tensor(g, inner) if need else None for g, need in zip(grads, needs))

    return rule
