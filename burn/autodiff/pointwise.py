"""Backward rules of the elementwise ops: unary and binary math, ``where``, ``clamp``, casts.

Each ``*_rule`` takes the op's inputs and output as tensors (of the inner backend, or of the
``Autodiff`` backend when the backward pass builds a graph) and returns a ``graph.Rule``.
Derivatives are written with burn's own tensor ops, so they run as kernels on the inner
backend; the activations whose ``g * f'`` is one kernel op (``_FUSED``) are composed of
differentiable ops instead when the pass builds a graph, since that kernel op has no rule of
its own. Where a function has a kink the one-sided choice is torch's: ``relu``
and ``abs`` give 0 at 0, ``maximum``/``minimum`` split a tie in halves, rounding gives 0.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> x = burn.tensor([0.0, 1.0], backend=ad).require_grad()
    >>> x.sigmoid().sum().backward()[x].tolist()
    [0.25, 0.196...]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from cubepy.ir import dtypes as dt

from ..tensor import Tensor
from .functions import bt
from .graph import Rule

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

#: d op(x) / dx as a function of (x, y = op(x)), for the differentiable unary ops but the
#: ``_FUSED`` activations, whose ``g * f'`` is one kernel op
_UNARY: dict[str, Callable[[Tensor, Tensor], Any]] = {
    "identity": lambda x, y: 1.0,
    "neg": lambda x, y: -1.0,
    "exp": lambda x, y: y,
    "exp2": lambda x, y: y * _LN2,
    "expm1": lambda x, y: y + 1.0,
    "log": lambda x, y: 1.0 / x,
    "log2": lambda x, y: 1.0 / (x * _LN2),
    "log10": lambda x, y: 1.0 / (x * _LN10),
    "log1p": lambda x, y: 1.0 / (x + 1.0),
    "sqrt": lambda x, y: 0.5 / y,
    "rsqrt": lambda x, y: y * y * y * -0.5,
    "sin": lambda x, y: bt.cos(x),
    "cos": lambda x, y: -bt.sin(x),
    "tan": lambda x, y: y * y + 1.0,
    "atan": lambda x, y: 1.0 / (x * x + 1.0),
    "erf": lambda x, y: bt.exp(-(x * x)) * _TWO_OVER_SQRT_PI,
    "softplus": lambda x, y: bt.sigmoid(x),
    "abs": lambda x, y: bt.sign(x),
    "square": lambda x, y: x * 2.0,
    "reciprocal": lambda x, y: -(y * y),
}
#: piecewise constant: the derivative is 0 wherever it exists
_FLAT = frozenset(("floor", "ceil", "round", "trunc", "sign"))
#: activations whose ``g * f'`` is one kernel op (``kernels.elementwise.DERIVATIVE_BINARY``),
#: and whether it reads the output (else the input)
_FUSED = {"gelu": False, "silu": False, "relu": False, "tanh": True, "sigmoid": True}
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
#: the same derivatives in differentiable ops, for a backward pass that builds a graph
_COMPOSED: dict[str, Callable[[Tensor, Tensor], Any]] = {
    "gelu": lambda x, y: (bt.erf(x * math.sqrt(0.5)) + 1.0) * 0.5
    + x * bt.exp(x * x * -0.5) * _INV_SQRT_2PI,
    "silu": lambda x, y: _silu_slope(x, bt.sigmoid(x)),
    "tanh": lambda x, y: 1.0 - y * y,
    "sigmoid": lambda x, y: y * (1.0 - y),
}
#: the unary ops whose derivative is a function of the output alone (the input is not kept)
UNARY_READS_OUTPUT_ONLY = frozenset(("exp", "exp2", "expm1", "sqrt", "rsqrt", "tan",
                                     "reciprocal", "tanh", "sigmoid"))
#: the unary ops whose derivative is a constant (neither the input nor the output is kept)
UNARY_CONSTANT = frozenset(("identity", "neg"))
#: the unary ops whose rule does not read the input (looked up on every recorded op)
UNARY_INPUT_UNREAD = UNARY_READS_OUTPUT_ONLY | UNARY_CONSTANT
#: the binary ops whose rule reads their output (for the second operand's gradient)
READS_OUTPUT = frozenset(("div", "pow"))
#: the binary ops whose rule reads neither input (nor the output)
LINEAR = frozenset(("add", "sub"))


def _silu_slope(x: Tensor, s: Tensor) -> Tensor:
    """d silu(x) / dx from ``s = sigmoid(x)``: ``s * (1 + x * (1 - s))``."""
    return s * (x * (1.0 - s) + 1.0)


def differentiable_unary(op: str) -> bool:
    """Whether the unary ``op`` has a rule (every float op does; predicates give bools)."""
    return op in _UNARY or op in _FUSED or op in _FLAT


def unary_rule(op: str, x: Tensor | None, y: Tensor | None, composed: bool = False) -> Rule:
    """The rule of ``y = op(x)`` (None for what the derivative does not read:
    ``UNARY_READS_OUTPUT_ONLY``, ``UNARY_CONSTANT``); ``composed``: no fused derivative ops
    (a graph-building pass)."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        if op in _FLAT:
            return (bt.zeros_like(x),)
        if op == "relu" and composed:
            return (bt.where(x > 0, grad, 0.0),)
        if op in _COMPOSED and composed:
            return (grad * _COMPOSED[op](x, y),)
        if op in _FUSED:
            # the kernel op takes g and v in one dtype: graph.backward hands a rule gradients
            # in its output's dtype (the seed is cast to the root's, _fitted casts each one)
            assert y is None or grad.dtype == y.dtype, (
                f"autodiff: the gradient of {op} is {grad.dtype.name}, its output "
                f"{y.dtype.name}; graph._fitted should have cast it")
            inner = grad.backend
            compute = dt.float32 if grad.dtype.bits < 32 else grad.dtype
            v = y if _FUSED[op] else x.to(grad.dtype)
            return (Tensor(inner.binary(f"{op}_grad", grad.prim, v.prim, compute, grad.dtype),
                           inner),)
        return (grad * _UNARY[op](x, y),)

    return rule


def binary_rule(op: str, x: Tensor | None, y: Tensor | None, z: Tensor | None) -> Rule:
    """The rule of ``z = op(x, y)`` (``x`` and ``y`` of one shape; None where the rule does
    not read them: ``LINEAR``, ``READS_OUTPUT``)."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, Any]:
        gx, gy = _BINARY[op](grad, x, y, z, needs)
        return gx, gy

    return rule


def _add(g, x, y, z, needs):
    return g, g


def _sub(g, x, y, z, needs):
    return g, (-g if needs[1] else None)


def _mul(g, x, y, z, needs):
    return (g * y if needs[0] else None), (g * x if needs[1] else None)


def _div(g, x, y, z, needs):
    return (g / y if needs[0] else None), (-(g * z) / y if needs[1] else None)


def _pow(g, x, y, z, needs):
    gx = g * y * bt.pow(x, y - 1.0) if needs[0] else None
    gy = None
    if needs[1]:  # d/dy x**y = x**y * log(x); 0 where x == 0 and y >= 0 (torch's choice)
        gy = bt.where((x == 0) & (y >= 0), 0.0, g * z * bt.log(x))
    return gx, gy


def _extreme(first_wins: Callable[[Tensor, Tensor], Tensor]):
    def extreme(g, x, y, z, needs):
        half = g * 0.5
        tie = x == y
        gx = bt.where(first_wins(x, y), g, bt.where(tie, half, 0.0)) if needs[0] else None
        gy = bt.where(first_wins(y, x), g, bt.where(tie, half, 0.0)) if needs[1] else None
        return gx, gy

    return extreme


def _atan2(g, x, y, z, needs):  # z = atan2(x, y): the angle of the point (y, x)
    scale = g / (x * x + y * y)
    return (scale * y if needs[0] else None), (-(scale * x) if needs[1] else None)


def _remainder(g, x, y, z, needs):  # z = x - floor(x / y) * y
    return g, (-(g * bt.floor(x / y)) if needs[1] else None)


def _floor_divide(g, x, y, z, needs):
    return bt.zeros_like(x), bt.zeros_like(y)


_BINARY = {"add": _add, "sub": _sub, "mul": _mul, "div": _div, "pow": _pow,
           "maximum": _extreme(lambda a, b: a > b), "minimum": _extreme(lambda a, b: a < b),
           "atan2": _atan2, "remainder": _remainder, "floor_divide": _floor_divide}


def differentiable_binary(op: str) -> bool:
    """Whether the binary ``op`` has a rule (comparisons and logic give bools or ints)."""
    return op in _BINARY


def where_rule(cond: Tensor) -> Rule:
    """The rule of ``where(cond, x, y)``: the gradient goes to the side that was chosen."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, Any, Any]:
        gx = bt.where(cond, grad, 0.0) if needs[1] else None
        gy = bt.where(cond, 0.0, grad) if needs[2] else None
        return None, gx, gy

    return rule


def clamp_rule(x: Tensor, lo: Any, hi: Any) -> Rule:
    """The rule of ``clamp(x, lo, hi)``: the gradient passes where ``lo <= x <= hi``."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        inside = None
        for bound in (lo is not None and x >= lo, hi is not None and x <= hi):
            if bound is not False:
                inside = bound if inside is None else inside & bound
        return (bt.where(inside, grad, 0.0),)

    return rule


def pass_through_rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
    """The rule of a copy or a float-to-float cast (``graph`` casts the gradient back)."""
    return (grad,)
