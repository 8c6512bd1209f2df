"""bfloat16 on Triton's interpreter, which cubepy keeps in float32 registers: constants
rounded as a GPU would, and loads and stores through the 16-bit patterns, since the
interpreter's own bfloat16 conversions read subnormals as 0 (``_bf16_value`` and
``_bf16_bits`` in the prelude)."""

from __future__ import annotations

import math

import numpy as np


def as_int16(pointer: str) -> str:
    """A bfloat16 pointer as one to int16, for the interpreter's loads and stores of bits."""
    return f"{pointer}.to(tl.pointer_type(tl.int16), bitcast=True)"


def round_bf16(value: float) -> float:
    """The bfloat16 nearest to ``value`` (ties to even), as a Python float."""
    if not math.isfinite(value):
        return value
    with np.errstate(over="ignore"):
        bits = int(np.array(value, np.float32).view(np.uint32))
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return float(np.array(bits, np.uint32).view(np.float32))
