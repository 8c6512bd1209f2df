"""Backward rules of reductions, scans, softmax and the normalizations.

Conventions are torch's: ``max``/``min`` share the gradient among tied extremes; ``prod``
and ``cumprod`` are exact where inputs are zero (products of the other elements, never a
division by zero); a normalization's gradient is computed in its compute dtype (float32 for
16-bit floats).

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], backend=ad).require_grad()
    >>> x.prod(axis=1).sum().backward()[x].tolist()
    [[2.0, 1.0], [4.0, 3.0]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType

from ..tensor import Tensor
from .functions import bt
from .graph import Rule, Saved


def _kept(t: Tensor, shape: Sequence[int], axes: Sequence[int]) -> Tensor:
    """``t`` (reduced over ``axes``) with those axes back as size 1."""
    return t.reshape(tuple(1 if a in axes else n for a, n in enumerate(shape)))


def _spread(t: Tensor, shape: Sequence[int], axes: Sequence[int]) -> Tensor:
    """``t`` (reduced over ``axes``) broadcast back to ``shape``."""
    return _kept(t, shape, axes).expand(*shape)


def _count(shape: Sequence[int], axes: Sequence[int]) -> int:
    return math.prod(shape[a] for a in axes)


#: the reductions whose rule needs only the input's shape, not its values
SHAPE_ONLY = frozenset(("sum", "mean"))


def spread_rule(op: str, shape: Sequence[int], axes: Sequence[int]) -> Rule:
    """The rule of ``sum`` or ``mean`` over ``axes`` of an input of ``shape``: the gradient
    spread back (divided by the count for ``mean``)."""
    axes, shape = tuple(axes), tuple(shape)

    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        if op == "mean":
            grad = grad / max(_count(shape, axes), 1)
        return (_spread(grad, shape, axes),)

    return rule


def reduce_rule(op: str, x: Tensor, axes: Sequence[int], out: Tensor | None) -> Rule:
    """The rule of ``prod``, ``max`` or ``min`` over ``axes`` (``out``: the result, for
    ``max`` and ``min``)."""
    axes = tuple(axes)

    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        if op == "prod":
            return (_prod_grad(grad, x, axes),)
        chosen = x == _spread(out, x.shape, axes)
        share = grad / chosen.to(x.dtype).sum(axis=axes)
        return (bt.where(chosen, _spread(share, x.shape, axes), 0.0),)

    return rule


def _exclusive_products(x: Tensor, axis: int) -> Tensor:
    """``prod(x[..., :i])`` at each ``i`` along ``axis`` (1 at the first)."""
    n = x.shape[axis]
    before = bt.cumprod(x, axis).narrow(axis, 0, n - 1)
    pads = [0, 0] * (x.ndim - 1 - axis) + [1, 0]
    return bt.pad(before, pads, 1.0)


def _prod_grad(grad: Tensor, x: Tensor, axes: Sequence[int]) -> Tensor:
    """``grad`` times the product of the other elements of each reduced group."""
    if x.numel() == 0:
        return bt.zeros_like(x)
    kept = [a for a in range(x.ndim) if a not in axes]
    order = kept + list(axes)
    moved = x.permute(*order)
    rows = moved.reshape((*moved.shape[:len(kept)], -1))
    last = rows.ndim - 1
    left = _exclusive_products(rows, last)
    right = _exclusive_products(rows.flip(last), last).flip(last)
    others = (left * right).reshape(moved.shape)
    inverse = [order.index(a) for a in range(x.ndim)]
    return _spread(grad, x.shape, axes) * others.permute(*inverse)


def variance_rule(x: Tensor, axes: Sequence[int], correction: float, sqrt: bool,
                  out: Tensor) -> Rule:
    """The rule of ``var`` (``std`` with ``sqrt``) over ``axes``."""
    axes = tuple(axes)

    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        dof = _count(x.shape, axes) - correction
        centered = x - x.mean(axis=axes, keepdim=True)
        scale = grad / out if sqrt else grad * 2.0
        scale = scale / dof if dof > 0 else scale * math.inf
        return (_spread(scale, x.shape, axes) * centered,)

    return rule


def logsumexp_rule(x: Tensor, axes: Sequence[int], out: Tensor) -> Rule:
    """The rule of ``logsumexp``: the gradient times ``softmax(x)`` over ``axes``."""
    axes = tuple(axes)

    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        weights = bt.exp(x - _spread(out, x.shape, axes))
        return (_spread(grad, x.shape, axes) * weights,)

    return rule


def _reverse_cumsum(t: Tensor, axis: int) -> Tensor:
    return bt.cumsum(t.flip(axis), axis).flip(axis)


def scan_rule(op: str, x: Tensor, axis: int, out: Tensor) -> Rule:
    """The rule of ``cumsum`` or ``cumprod`` along ``axis``."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        if op == "cumsum":
            return (_reverse_cumsum(grad, axis),)
        return (_cumprod_grad(grad, x, axis, out),)

    return rule


def _cumprod_grad(grad: Tensor, x: Tensor, axis: int, out: Tensor) -> Tensor:
    """Exact with zeros: before a row's first zero ``z`` the quotient form holds, at ``z`` the
    products skip ``x[z]``, and after it every product holds the zero."""
    n = x.shape[axis]
    if x.numel() == 0:
        return bt.zeros_like(x)
    zero = x == 0
    first = zero.to(dt.int32).argmax(axis=axis, keepdim=True)
    first = bt.where(zero.any(axis=axis, keepdim=True), first, n)
    position = bt.arange(n, dtype=dt.int32, backend=x.backend).reshape(
        tuple(n if a == axis else 1 for a in range(x.ndim)))
    # divided by 1 from the first zero on, where the quotient is not used: a 0 / 0 there
    # would make the second-order gradient NaN (where's gradient to its other side is a 0)
    before = _reverse_cumsum(grad * out, axis) / bt.where(position < first, x, 1.0)
    skipped = bt.cumprod(bt.where(position == first, 1.0, x), axis)
    at_zero = _reverse_cumsum(grad * skipped, axis)
    return bt.where(position < first, before, bt.where(position == first, at_zero, 0.0))


def softmax_rule(axis: int, log: bool, out: Tensor) -> Rule:
    """The rule of ``softmax`` (``log_softmax`` with ``log``) along ``axis``."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        if log:
            return (grad - bt.exp(out) * grad.sum(axis=axis, keepdim=True),)
        return (out * (grad - (grad * out).sum(axis=axis, keepdim=True)),)

    return rule


def _leading_sum(t: Tensor, k: int) -> Tensor:
    """``t`` summed over every axis but the last ``k``."""
    leading = tuple(range(t.ndim - k))
    return t.sum(axis=leading) if leading else t


def norm_rule(saved: Saved, x: Tensor, k: int, weight: Tensor | None, eps: float, rms: bool,
              compute: DType) -> Rule:
    """The rule of ``layer_norm`` (inputs ``x``, weight, bias) or, with ``rms``, ``rms_norm``
    (inputs ``x``, weight) over the last ``k`` axes. A plain backward pass runs the backend's
    ``norm_backward`` (one fused kernel on the cubepy backends); a graph-building one composes
    the same formulas of differentiable ops."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        params = any(needs[1:])
        if saved.create_graph:
            grads = _composed_norm_gradients(x, k, weight, grad, eps, rms, params, compute)
        else:
            inner = saved.inner
            grads = tuple(None if g is None else Tensor(g, inner) for g in inner.norm_backward(
                x.prim, k, None if weight is None else weight.prim, grad.prim, eps, rms,
                params, compute))
        dx, dw, db = (g if need else None for g, need in zip(grads, needs + (False,)))
        return (dx, dw) if rms else (dx, dw, db)

    return rule


def _composed_norm_gradients(x: Tensor, k: int, weight: Tensor | None, grad: Tensor,
                             eps: float, rms: bool, params: bool, compute: DType
                             ) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """``norm_backward``'s results in differentiable ops (computed in ``compute``)."""
    axes = tuple(range(x.ndim - k, x.ndim))
    xf, g = x.to(compute), grad.to(compute)
    centered = xf if rms else xf - xf.mean(axis=axes, keepdim=True)
    rstd = bt.rsqrt((centered * centered).mean(axis=axes, keepdim=True) + eps)
    normalized = centered * rstd
    gy = g if weight is None else g * weight.to(compute)
    d = gy - normalized * (gy * normalized).mean(axis=axes, keepdim=True)
    if not rms:
        d = d - gy.mean(axis=axes, keepdim=True)
    if not params:
        return rstd * d, None, None
    return rstd * d, _leading_sum(g * normalized, k), None if rms else _leading_sum(g, k)


def batch_norm_rule(saved: Saved, x: Tensor, weight: Tensor | None, mean: Tensor, var: Tensor,
                    own: bool, eps: float, compute: DType) -> Rule:
    """The rule of ``batch_norm`` (inputs ``x``, weight, bias, mean, var). Normalized by the
    batch's ``own`` statistics, a plain backward pass runs the backend's fused
    ``batch_norm_backward``; given statistics (running ones), or a graph-building pass,
    compose the formulas of differentiable ops."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        if own and not saved.create_graph:
            inner = saved.inner
            grads = inner.batch_norm_backward(
                x.prim, grad.prim, mean.prim, var.prim, None if weight is None else weight.prim,
                eps, needs[1] or needs[2], compute)
            return (*(Tensor(g, inner) if g is not None and need else None
                      for g, need in zip(grads, needs)), None, None)
        return _composed_batch_norm_gradients(x, weight, mean, var, grad, own, eps, compute,
                                              needs)

    return rule


def _composed_batch_norm_gradients(x: Tensor, weight: Tensor | None, mean: Tensor,
                                   var: Tensor, grad: Tensor, own: bool, eps: float,
                                   compute: DType, needs: tuple[bool, ...]
                                   ) -> tuple[Tensor | None, ...]:
    """``batch_norm``'s gradients in differentiable ops (computed in ``compute``): with its
    ``own`` statistics recomputed from ``x``, so a graph-building pass differentiates
    through them; else through the given ``mean`` and ``var`` too."""
    axes = (0, *range(2, x.ndim))
    per_channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    xf, g = x.to(compute), grad.to(compute)
    if own:
        centered = xf - xf.mean(axis=axes, keepdim=True)
        variance = (centered * centered).mean(axis=axes, keepdim=True)
    else:
        centered = xf - mean.to(compute).reshape(per_channel)
        variance = var.to(compute).reshape(per_channel)
    rstd = bt.rsqrt(variance + eps)
    normalized = centered * rstd
    gy = g if weight is None else g * weight.to(compute).reshape(per_channel)
    if own:
        dx = rstd * (gy - gy.mean(axis=axes, keepdim=True)
                     - normalized * (gy * normalized).mean(axis=axes, keepdim=True))
    else:
        dx = gy * rstd
    wanted = {
        1: lambda: (g * normalized).sum(axis=axes),
        2: lambda: g.sum(axis=axes),
        3: lambda: -(gy * rstd).sum(axis=axes),
        4: lambda: (gy * centered * rstd * rstd * rstd).sum(axis=axes) * -0.5,
    }
    return (dx if needs[0] else None,
            *(make() if needs[i] and not (own and i > 2) else None
              for i, make in wanted.items()))
