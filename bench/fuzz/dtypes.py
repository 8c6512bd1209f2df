"""Dtype tables and cubepy's promotion rules (docs/language.md), as the fuzzer models them."""

from __future__ import annotations

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint32")
INTS = SIGNED + UNSIGNED
FLOATS = ("float16", "bfloat16", "float32", "float64")
NUMERIC = INTS + FLOATS
ALL = ("bool",) + NUMERIC
BITS = {"bool": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint32": 32,
        "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
PREC = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
EMIN = {"float16": -14, "bfloat16": -126, "float32": -126, "float64": -1022}
HALF = ("float16", "bfloat16")
MATH1 = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid")
ROUNDING = ("floor", "ceil")
ARITH = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
BITOPS = ("and", "or", "xor")
SHIFTS = ("shl", "shr")
PYOP = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
        "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
        "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}
NPCMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}
# ulps a math function may be off by (besides the reference's own rounding)
MATH_ULPS = {"sqrt": 1, "rsqrt": 2, "exp": 4, "exp2": 4, "log": 4, "log2": 4, "sin": 4,
             "cos": 4, "tanh": 4, "erf": 4, "sigmoid": 4}


def npd(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def is_f(name: str) -> bool:
    return name in FLOATS


def is_i(name: str) -> bool:
    return name in INTS


def fmax(name: str) -> float:
    return float(ml_dtypes.finfo(npd(name)).max)


def overflow_at(name: str) -> float:
    """The smallest magnitude that rounds to infinity in `name`."""
    return fmax(name) * (1.0 + 2.0 ** -PREC[name])


def int_range(name: str) -> tuple[int, int]:
    info = np.iinfo(npd(name))
    return int(info.min), int(info.max)


def kind_of(name: str) -> str:
    return "b" if name == "bool" else "f" if is_f(name) else "u" if name in UNSIGNED else "i"


def promote(a: str, b: str) -> str:
    """cubepy's promotion (cubepy/ir/dtypes.py), written again so the reference is independent."""
    if a == b:
        return a
    rank = {"b": 0, "i": 1, "u": 1, "f": 2}
    ka, kb = kind_of(a), kind_of(b)
    ra, rb = rank[ka], rank[kb]
    if ra != rb:
        return a if ra > rb else b
    if ka == "f":
        if BITS[a] == BITS[b]:
            return "float32"
        return a if BITS[a] > BITS[b] else b
    if ka == kb:
        return a if BITS[a] > BITS[b] else b
    uns, sig = (a, b) if ka == "u" else (b, a)
    return uns if BITS[uns] >= BITS[sig] else sig


def promote_literal(other: str, lit: object) -> str:
    if isinstance(lit, bool):
        return other
    if isinstance(lit, int):
        return "int32" if other == "bool" else other
    return other if is_f(other) else "float32"


def literal_dtype(lit: object) -> str:
    if isinstance(lit, bool):
        return "bool"
    if isinstance(lit, int):
        return "int32" if -(2**31) <= lit < 2**31 else "int64"
    return "float32"


def math_dtype(name: str) -> str:
    return name if is_f(name) else "float32"


def reduce_dtype(name: str) -> str:
    if name == "bool" or (is_i(name) and BITS[name] < 32):
        return "int32"
    return name
