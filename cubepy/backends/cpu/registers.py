"""The NumPy types generated cpu code keeps values in."""

from __future__ import annotations

from ...ir import dtypes as dt

HALF = ("float16", "bfloat16")  # stored as 16 bits, computed in float32


def reg(dtype: dt.DType) -> str:
    """The NumPy type a value of ``dtype`` has in registers."""
    if dtype.name in HALF:
        return "np.float32"
    return "np.bool_" if dtype.is_bool else f"np.{dtype.name}"
