"""Lowering of Triton's correctly rounded division and square root: ``div_rn``, ``sqrt_rn``
and ``fdiv(..., ieee_rounding=True)``. Each is the ``DIV`` or ``SQRT`` op with the attribute
``rounding="rn"``, which the backends honour (or refuse: WGSL promises neither)."""

from __future__ import annotations

from typing import Any

from ..ir import Op
from ..ir.rules import RuleError
from .builtins import comptime_flag, lowering
from .semantics import binary, is_value, math


def _rounded(value: Any) -> Any:
    if is_value(value):  # Python numbers: Python's float64 division and sqrt are exact
        value.owner.attrs["rounding"] = "rn"
    return value


@lowering("div_rn")
def _div_rn(ctx: Any, x: Any, y: Any) -> Any:
    return _rounded(binary(ctx.b, Op.DIV, x, y))


@lowering("sqrt_rn")
def _sqrt_rn(ctx: Any, x: Any) -> Any:
    if not is_value(x):
        raise RuleError("cube.sqrt_rn() needs a run-time value, got a compile-time number",
                        "compute it in Python: math.sqrt(x)")
    return _rounded(math(ctx.b, Op.SQRT, x))


@lowering("fdiv")
def _fdiv(ctx: Any, x: Any, y: Any, ieee_rounding: Any, approx: Any) -> Any:
    rounded = comptime_flag(ieee_rounding, "ieee_rounding")
    comptime_flag(approx, "approx")  # `/` is within its 2.5 ulp already
    quotient = binary(ctx.b, Op.DIV, x, y)
    return _rounded(quotient) if rounded else quotient
