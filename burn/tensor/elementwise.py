"""Elementwise ops on tensors: dtype rules, broadcasting, Python operators.

dtype rules (the same on every backend):

- Two tensors promote as cubepy's kernels do (``cubepy/ir/dtypes.py``: the higher kind wins,
  then the wider; float16 with bfloat16 gives float32). Python numbers are weak: an int takes
  the tensor's dtype, a float takes a float tensor's dtype or else float32. An int beyond the
  tensor's integer dtype never wraps around: comparisons are exact (in int64), ``/`` is
  computed in float32, and other ops raise ``BurnError`` (NumPy 2 raises ``OverflowError``).
  NumPy scalars keep their dtype (``x * np.float64(2)`` is float64, as in NumPy).
- Math functions (``exp``, ``sin``, ``sigmoid``, ...) and ``/`` give the float dtype
  (float32 for integer and bool inputs). Comparisons and logical ops give bool.
- Bitwise ops need integers or bools; arithmetic on two bools is refused.
- 16-bit floats are computed in float32 and rounded once when stored.

Example:
    >>> x = burn.tensor([1.0, 2.0, 3.0])
    >>> (x * 2 + 1).tolist(), burn.exp(burn.tensor([0])).dtype
    ([3.0, 5.0, 7.0], cube.float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from kernels import elementwise as kernel_ops

from ..backend.base import BurnError, number_array
from .tensor import Tensor, same_backend, tensor_method
from .views import broadcast_shapes, broadcast_view, expand

Scalar = (bool, int, float, np.generic)

#: the binary ops that are tensor functions (activations' derivatives are Autodiff's own)
PUBLIC_BINARY = tuple(op for op in kernel_ops.BINARY_OPS if op not in kernel_ops.DERIVATIVE_BINARY)

__all__ = [*PUBLIC_BINARY, *(op for op in kernel_ops.UNARY_OPS if op != "identity"),
           "where", "clamp", "cast", "apply_unary", "apply_binary"]


def _float_of(dtype: DType) -> DType:
    return dtype if dtype.is_float else dt.float32


def unary_dtypes(op: str, dtype: DType) -> tuple[str, DType, DType]:
    """(the kernel op, compute dtype, result dtype) of unary ``op`` on ``dtype``."""
    if op in kernel_ops.FLOAT_UNARY or op == "reciprocal":
        return op, _float_of(dtype), _float_of(dtype)
    if op in kernel_ops.ROUNDING_UNARY:
        return (op if dtype.is_float else "identity"), dtype, dtype
    if op in kernel_ops.PREDICATE_UNARY:
        return op, _float_of(dtype), dt.bool_
    if op == "logical_not":
        return op, dtype, dt.bool_
    if op == "bitwise_not":
        if dtype.is_float:
            raise BurnError(f"bitwise_not: needs an integer or bool tensor, got {dtype.name}")
        return op, dtype, dtype
    if op in kernel_ops.NUMERIC_UNARY:
        if dtype.is_bool:
            raise BurnError(f"{op}: not defined for bool tensors; cast with .to(burn.int32)")
        return op, dtype, dtype  # unsigned neg wraps around, as NumPy's does
    raise BurnError(f"unknown unary op {op!r}")


def binary_dtypes(op: str, a: DType, b: DType) -> tuple[DType, DType]:
    """(compute dtype, result dtype) of binary ``op`` on operands of ``a`` and ``b``."""
    common = dt.promote(a, b)
    if op in kernel_ops.COMPARISON_BINARY or op in kernel_ops.LOGICAL_BINARY:
        return common, dt.bool_
    if op in kernel_ops.BITWISE_BINARY:
        if common.is_float:
            raise BurnError(f"{op}: needs integer or bool tensors, got {a.name} and {b.name}")
        return common, common
    if op in ("div", "atan2"):
        return _float_of(common), _float_of(common)
    if common.is_bool and op not in ("maximum", "minimum"):
        raise BurnError(f"{op}: not defined for two bool tensors; cast with .to(burn.int32)")
    return common, common


def check_scalar(op: str, value: Any, dtype: DType,
                 fix: str = "cast the tensor first, e.g. x.to(burn.int64)") -> None:
    """``BurnError`` unless the number ``value`` converts to the integer ``dtype`` without
    wrapping around (NumPy 2 raises ``OverflowError`` there); floats truncate, as casts do.
    ``fix`` says what to write instead."""
    if dtype.kind not in "iu" or isinstance(value, (bool, np.bool_)):
        return
    info = np.iinfo(dtype.numpy)
    if isinstance(value, (float, np.floating)) and math.isfinite(value):
        value = math.trunc(value)
    if not isinstance(value, (int, np.integer)) or not info.min <= value <= info.max:
        raise BurnError(f"{op}: the number {value!r} does not fit {dtype.name} (from "
                        f"{info.min} to {info.max}); {fix}")


def _scalar_dtype(op: str, value: Any, other: DType) -> DType:
    """The dtype a number takes against a tensor of ``other`` (see the module docstring)."""
    if isinstance(value, np.generic):
        return dt.from_numpy(value.dtype)
    weak = dt.promote_literal(other, value)
    if isinstance(value, bool) or not isinstance(value, int) or weak.kind not in "iu":
        return weak
    fits = np.iinfo(weak.numpy).min <= value <= np.iinfo(weak.numpy).max
    if fits:
        return weak
    # an int beyond the tensor's dtype: compared exactly, divided in float, and elsewhere
    # refused by as_tensor_like (it would wrap around), as NumPy 2 does
    if op in kernel_ops.COMPARISON_BINARY:
        return dt.int64
    if op in ("div", "atan2"):
        return dt.float32
    return dt.int64 if other.is_bool else weak


def as_tensor_like(value: Any, like: Tensor, dtype: DType, op: str = "scalar") -> Tensor:
    """A Python or NumPy scalar as a one-element tensor of ``dtype`` on ``like``'s backend;
    ``BurnError`` naming ``op`` if it does not fit an integer ``dtype``."""
    check_scalar(op, value, dtype)
    backend = like.backend
    if type(value) is float or type(value) is int:  # the common case, cached by the number
        return Tensor(backend.number(value, dtype), backend)
    return Tensor(backend.constant(number_array(value, dtype)), backend)


def _operands(op: str, x: Any, y: Any) -> tuple[Tensor, Tensor]:
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        raise BurnError(f"{op}: needs at least one tensor operand, got {type(x).__name__} and "
                        f"{type(y).__name__}")
    if not isinstance(x, Tensor):
        _check_number(op, x)
        x = as_tensor_like(x, y, _scalar_dtype(op, x, y.dtype), op)
    if not isinstance(y, Tensor):
        _check_number(op, y)
        y = as_tensor_like(y, x, _scalar_dtype(op, y, x.dtype), op)
    return x, y


def _check_number(op: str, value: Any) -> None:
    if type(value) is float or type(value) is int:
        return  # the common case, first: the checks below cost a microsecond an op
    if isinstance(value, np.ndarray):  # NumPy defers `array + tensor` to the tensor
        raise BurnError(f"{op}: operands must be tensors or numbers, got a NumPy array of "
                        f"shape {value.shape}; convert it with burn.from_numpy(array, "
                        "backend=x.backend)")
    if not isinstance(value, Scalar) or np.iscomplexobj(value):  # np.complex64 is np.generic
        raise BurnError(f"{op}: operands must be tensors or numbers, got {type(value).__name__}")


def apply_unary(op: str, x: Tensor) -> Tensor:
    """Unary ``op`` (a name from ``kernels.elementwise.UNARY_OPS``) on ``x``."""
    kernel_op, compute, out = unary_dtypes(op, x.dtype)
    return Tensor(x.backend.unary(kernel_op, x.prim, compute, out), x.backend)


def apply_binary(op: str, x: Any, y: Any) -> Tensor:
    """Binary ``op`` with broadcasting; either side may be a Python number."""
    if (op == "pow" and isinstance(x, Tensor) and x.dtype.kind in "iu"
            and isinstance(y, (int, np.integer)) and not isinstance(y, bool) and y < 0):
        # 2 ** -1 would truncate to 0; NumPy and torch refuse it (a tensor exponent is not
        # read back to check: that would be a synchronization per op)
        raise BurnError(f"pow: integers to negative integer powers are not allowed ({x.dtype.name}"
                        f" tensor ** {y}); use x.to(burn.float32) ** {y}")
    squared = op == "pow" and isinstance(x, Tensor) and _is_two(y)
    x, y = _operands(op, x, y)  # a number becomes a tensor of its weak dtype
    backend = same_backend(op, x, y)
    compute, out = binary_dtypes(op, x.dtype, y.dtype)
    if squared and out == x.dtype and x.dtype.kind != "b":
        # x ** 2 is x * x, rounded once as pow's exact result is; the general pow is a log
        # and an exp per element (the mean squared error's inner op)
        return apply_unary("square", x)
    shape = broadcast_shapes(op, x.shape, y.shape)
    return Tensor(backend.binary(op, broadcast_view(x, shape), broadcast_view(y, shape),
                                 compute, out), backend)


def _is_two(value: Any) -> bool:
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, bool) and value == 2)


def _unary_function(op: str):
    def fn(x: Tensor) -> Tensor:
        return apply_unary(op, x)

    fn.__name__ = op
    fn.__doc__ = f"Elementwise ``{op}``: ``burn.{op}(x)`` or ``x.{op}()``."
    return fn


def _binary_function(op: str):
    def fn(x: Any, y: Any) -> Tensor:
        return apply_binary(op, x, y)

    fn.__name__ = op
    fn.__doc__ = f"Elementwise ``{op}(x, y)`` with broadcasting."
    return fn


UNARY_FUNCTIONS = {op: tensor_method(_unary_function(op))
                   for op in kernel_ops.UNARY_OPS if op != "identity"}
BINARY_FUNCTIONS = {op: tensor_method(_binary_function(op)) for op in PUBLIC_BINARY}

_OPERATORS = {
    "add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__",
    "floor_divide": "__floordiv__", "remainder": "__mod__", "pow": "__pow__",
    "bitwise_and": "__and__", "bitwise_or": "__or__", "bitwise_xor": "__xor__",
    "left_shift": "__lshift__", "right_shift": "__rshift__",
}
for _op, _name in _OPERATORS.items():
    setattr(Tensor, _name, BINARY_FUNCTIONS[_op])
    setattr(Tensor, "__r" + _name[2:], lambda x, y, _op=_op: apply_binary(_op, y, x))
for _op, _name in (("eq", "__eq__"), ("ne", "__ne__"), ("lt", "__lt__"), ("le", "__le__"),
                   ("gt", "__gt__"), ("ge", "__ge__")):
    setattr(Tensor, _name, BINARY_FUNCTIONS[_op])
Tensor.__hash__ = object.__hash__  # type: ignore[assignment] - defining __eq__ removed it
Tensor.__neg__ = UNARY_FUNCTIONS["neg"]  # type: ignore[attr-defined]
Tensor.__abs__ = UNARY_FUNCTIONS["abs"]  # type: ignore[attr-defined]
Tensor.__invert__ = lambda x: apply_unary(  # type: ignore[attr-defined]
    "logical_not" if x.dtype.is_bool else "bitwise_not", x)
Tensor.__pos__ = lambda x: x  # type: ignore[attr-defined]


@tensor_method
def where(cond: Tensor, x: Any, y: Any) -> Tensor:
    """``x`` where ``cond`` is true, else ``y`` (broadcast together; numbers are weak)."""
    if not isinstance(cond, Tensor):
        raise BurnError("where: the condition must be a tensor")
    like = x if isinstance(x, Tensor) else y if isinstance(y, Tensor) else cond
    x_dtype = x.dtype if isinstance(x, Tensor) else None
    y_dtype = y.dtype if isinstance(y, Tensor) else None
    if x_dtype and y_dtype:
        out = dt.promote(x_dtype, y_dtype)
    elif x_dtype or y_dtype:
        base = x_dtype or y_dtype
        out = _scalar_dtype("where", y if x_dtype else x, base)
    else:
        out = dt.promote(dt.literal_dtype(x), dt.literal_dtype(y))
    xs = x if isinstance(x, Tensor) else as_tensor_like(x, like, out, "where")
    ys = y if isinstance(y, Tensor) else as_tensor_like(y, like, out, "where")
    backend = same_backend("where", cond, xs, ys)
    shape = broadcast_shapes("where", cond.shape, xs.shape, ys.shape)
    return Tensor(backend.where(expand(cond, *shape).prim, expand(xs, *shape).prim,
                                expand(ys, *shape).prim, out), backend)


@tensor_method
def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's names
    """``x`` limited to ``[min, max]`` (numbers; either may be None)."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = x if min is None else apply_binary("maximum", x, min)
        return lo if max is None else apply_binary("minimum", lo, max)
    if min is None and max is None:
        raise BurnError("clamp: give min, max or both")
    # bounds are weak numbers as in `x + bound`: a float bound makes an integer tensor float32
    out = x.dtype
    for bound in (min, max):
        if bound is not None:
            _check_number("clamp", bound)
            out = dt.promote(out, _scalar_dtype("clamp", bound, x.dtype))
    if out.kind in "iu":  # an int bound beyond the dtype's range changes nothing (as NumPy)
        info = np.iinfo(out.numpy)
        min = None if min is not None and min <= info.min else min
        max = None if max is not None and max >= info.max else max
        for bound in (min, max):
            if bound is not None:
                check_scalar("clamp", bound, out)  # a lower bound above every value
    x = x.to(out)
    if min is None and max is None:
        return x
    return Tensor(x.backend.clamp(x.prim, min, max, out), x.backend)


Tensor.clip = clamp  # type: ignore[attr-defined]


@tensor_method
def cast(x: Tensor, dtype: DType) -> Tensor:
    """``x`` converted to ``dtype`` (same as ``x.to(dtype)``)."""
    return x.to(dtype)


globals().update(UNARY_FUNCTIONS)
globals().update(BINARY_FUNCTIONS)
