"""Backward rule of fused scaled dot-product attention.

The forward op saves its inputs, its output and each query row's log-sum-exp (``lse``), so
the backward op (``attention_backward``, one fused kernel on the cubepy backends)
recomputes the attention weights block by block instead of keeping the (Sq, Sk) matrix.
``lse`` is not differentiable: it is a saved value, never an input of the graph. Attention
with a mask, in float64 or with head dimensions the kernels do not take is composed of
matmul, softmax and elementwise ops in ``burn.tensor.attention``, whose own rules apply.

A backward pass that builds a graph (``backward(create_graph=True)``) cannot differentiate
the fused backward kernel, so there the rule is composed of ``matmul``, ``softmax`` and
``where``, whose rules give the second-order terms; that path stores the (Sq, Sk) weights.

Example:
    >>> ad = burn.Autodiff(burn.NumPy())  # the reference backend: no kernels to compile
    >>> q = burn.ones((1, 2, 3, 4), backend=ad).require_grad()
    >>> grads = burn.scaled_dot_product_attention(q, q, q).sum().backward()
    >>> q.grad(grads).shape
    (1, 2, 3, 4)
"""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from .functions import bt
from .graph import Rule, Saved


def attention_rule(saved: Saved, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
                   causal: bool, scale: float) -> Rule:
    """The rule of ``attention(q, k, v)`` (inputs ``q``, ``k``, ``v``), from the saved
    output and log-sum-exp."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, Any, Any]:
        if saved.create_graph:
            grads = _composed_gradients(q, k, v, grad, causal, scale)
            return tuple(g if need else None for g, need in zip(grads, needs))
        # one kernel computes all three (dq needs the same recomputed weights as dk and dv)
        inner = saved.inner
        grads = inner.attention_backward(q.prim, k.prim, v.prim, out.prim, lse.prim,
                                         grad.prim, causal, scale)
        return tuple(Tensor(g, inner) if need else None for g, need in zip(grads, needs))

    return rule


def _composed_gradients(q: Tensor, k: Tensor, v: Tensor, grad: Tensor, causal: bool,
                        scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """``dq``, ``dk``, ``dv`` in differentiable ops: the weights ``P = softmax(S)`` of the
    scores ``S = q @ k^T * scale`` (keys after each query masked when ``causal``, top-left
    aligned as the forward op), ``dS = P * (dP - rowsum(dP * P))`` with ``dP = g @ v^T``."""
    scores = (q @ k.transpose(-1, -2)) * scale
    if causal:
        sq, sk = scores.shape[-2:]
        seen = bt.tril(bt.full((sq, sk), True, dtype="bool", backend=q.backend))
        scores = bt.where(seen, scores, -math.inf)
    weights = bt.softmax(scores, -1)
    d_weights = grad @ v.transpose(-1, -2)
    d_scores = weights * (d_weights - (d_weights * weights).sum(axis=-1, keepdim=True))
    dq = (d_scores @ k) * scale
    dk = (d_scores.transpose(-1, -2) @ q) * scale
    dv = weights.transpose(-1, -2) @ grad
    return dq, dk, dv
