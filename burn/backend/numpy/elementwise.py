"""The NumPy reference for elementwise ops: the same semantics the kernels have."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from cubepy.ir.dtypes import DType
from kernels.layout import View

from ..ops.elementwise import ElementwiseOps
from .core import NumpyCore, register_dtype


@functools.cache
def _erf() -> Any:
    # imported on first use: SciPy costs `import burn` a tenth of a second otherwise
    try:
        from scipy.special import erf
    except ImportError:  # machines without SciPy: math.erf is correctly rounded
        erf = np.vectorize(math.erf, otypes=[np.float64])
    return erf


def _erf_like(v: np.ndarray) -> np.ndarray:
    return np.asarray(_erf()(v)).astype(v.dtype)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-v))).astype(v.dtype)


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    safe = np.where(b < 0, 0, b)
    result = np.power(a, safe)
    unit = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 != 0, -1, 1), 0)).astype(a.dtype)
    return np.where(b < 0, unit, result)


def _floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):  # by zero: 0 for integers, as cubepy's
        return np.floor_divide(a, b).astype(a.dtype)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.remainder(a, b).astype(a.dtype)


UNARY = {
    "identity": lambda v: v, "neg": np.negative, "abs": np.abs, "sign": np.sign,
    "square": lambda v: v * v, "relu": lambda v: np.maximum(v, 0),
    "reciprocal": lambda v: 1.0 / v, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda v: 1.0 / np.sqrt(v), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "atan": np.arctan, "erf": _erf_like, "sigmoid": _sigmoid,
    "gelu": lambda v: v * 0.5 * (1.0 + _erf_like(v * 0.7071067811865476)),
    "silu": lambda v: v * _sigmoid(v),
    "softplus": lambda v: np.maximum(v, 0) + np.log1p(np.exp(-np.abs(v))),
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "logical_not": lambda v: v == 0, "bitwise_not": np.invert,
}

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floor_divide": _floor_divide, "remainder": _remainder,
    "pow": lambda a, b: np.power(a, b) if a.dtype.kind == "f" else _int_pow(a, b),
    "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "logical_and": lambda a, b: (a != 0) & (b != 0),
    "logical_or": lambda a, b: (a != 0) | (b != 0),
    "logical_xor": lambda a, b: (a != 0) ^ (b != 0),
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift,
    "gelu_grad": lambda g, v: g * (0.5 * (1.0 + _erf_like(v * 0.7071067811865476))
                                   + v * np.exp(v * v * -0.5) * 0.3989422804014327),
    "silu_grad": lambda g, v: g * (_sigmoid(v) * (1.0 + v * (1.0 - _sigmoid(v)))),
    "relu_grad": lambda g, v: np.where(v > 0, g, 0).astype(g.dtype),
    "tanh_grad": lambda g, v: g * (1.0 - v * v),
    "sigmoid_grad": lambda g, v: g * (v * (1.0 - v)),
}


class NumpyElementwise(NumpyCore, ElementwiseOps):
    def unary(self, op: str, x: View, compute: DType, out_dtype: DType) -> View:
        v = self.array(x).astype(register_dtype(compute))
        with np.errstate(all="ignore"):
            return self.result(UNARY[op](v), out_dtype)

    def binary(self, op: str, x: View, y: View, compute: DType, out_dtype: DType) -> View:
        a = self.array(x).astype(register_dtype(compute))
        b = self.array(y).astype(register_dtype(compute))
        with np.errstate(all="ignore"):
            return self.result(BINARY[op](a, b), out_dtype)

    def where(self, cond: View, x: View, y: View, out_dtype: DType) -> View:
        c = self.array(cond) != 0
        out = np.where(c, self.array(x).astype(out_dtype.numpy),
                       self.array(y).astype(out_dtype.numpy))
        return self.result(out, out_dtype)

    def clamp(self, x: View, lo: Any, hi: Any, out_dtype: DType) -> View:
        v = self.array(x).astype(register_dtype(out_dtype))
        if lo is not None:
            v = np.maximum(v, np.asarray(lo, v.dtype))
        if hi is not None:
            v = np.minimum(v, np.asarray(hi, v.dtype))
        return self.result(v, out_dtype)

    def cast(self, x: View, dtype: DType) -> View:
        v = self.array(x)
        if x.dtype.name in ("float16", "bfloat16"):
            v = v.astype(np.float32)
        with np.errstate(all="ignore"):
            return self.result(v, dtype)

    def copy(self, x: View) -> View:
        return self.result(self.array(x), x.dtype)
