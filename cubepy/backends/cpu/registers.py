"""The NumPy types generated cpu code keeps values in."""

from __future__ import annotations

import math

from ...ir import dtypes as dt

HALF = ("float16", "bfloat16")  # stored as 16 bits, computed in float32


def reg(dtype: dt.DType) -> str:
    """The NumPy type a value of ``dtype`` has in registers."""
    if dtype.name in HALF:
        return "np.float32"
    return "np.bool_" if dtype.is_bool else f"np.{dtype.name}"


def literal(value: object, dtype: dt.DType) -> str:
    """Source for the constant ``value`` in a register of ``dtype``: ``literal(0, f32)``."""
    if dtype.is_bool:
        return f"np.bool_({bool(value)})"
    if dtype.is_float:
        v = float(value)
        if math.isnan(v):
            text = "np.nan"
        elif math.isinf(v):
            text = "np.inf" if v > 0 else "-np.inf"
        else:
            text = repr(v)
        if dtype.name in HALF:
            rounder = "round_f16_s" if dtype.name == "float16" else "round_bf16_s"
            return f"{rounder}(np.float32({text}))"
        return f"{reg(dtype)}({text})"
    return f"{reg(dtype)}({int(value)})"
