"""Value-level semantics the frontend applies: promotion, weak literals, broadcasting.

Operands are either IR values or plain Python values (comptime values and literals). Two
Python operands are computed by Python itself (comptime folding as we build); a Python
literal next to an IR value is materialized with the dtype the promotion rules give it.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..ir import Builder, Op, Value
from ..ir import dtypes as dt
from ..ir.rules import RuleError, broadcast_shapes

PY_BINARY = {
    Op.ADD: operator.add, Op.SUB: operator.sub, Op.MUL: operator.mul,
    Op.DIV: operator.truediv, Op.FLOORDIV: operator.floordiv, Op.MOD: operator.mod,
    Op.POW: operator.pow, Op.AND: operator.and_, Op.OR: operator.or_, Op.XOR: operator.xor,
    Op.SHL: operator.lshift, Op.SHR: operator.rshift, Op.EQ: operator.eq, Op.NE: operator.ne,
    Op.LT: operator.lt, Op.LE: operator.le, Op.GT: operator.gt, Op.GE: operator.ge,
    Op.MAXIMUM: max, Op.MINIMUM: min,
}

SCALAR_TYPES = (bool, int, float, np.generic)


def is_value(x: Any) -> bool:
    return isinstance(x, Value)


def plain_int(x: Any) -> Any:
    """A NumPy integer as a Python int (a comptime value computed with NumPy); else ``x``."""
    return int(x) if isinstance(x, np.integer) else x


def is_literal(x: Any) -> bool:
    return isinstance(x, SCALAR_TYPES)


def dtype_of(x: Any) -> dt.DType:
    return x.type.dtype if is_value(x) else dt.literal_dtype(x)


def materialize(b: Builder, x: Any, dtype: dt.DType | None = None,
                shape: tuple[int, ...] = ()) -> Value:
    """An IR value for ``x`` (cast to ``dtype`` and broadcast to ``shape`` when given)."""
    if is_value(x):
        value = b.cast(x, dtype) if dtype is not None else x
        return b.broadcast(value, shape) if shape and value.type.shape != shape else value
    if not is_literal(x):
        raise _not_a_number(x)
    if isinstance(x, np.generic):
        x = x.item() if dtype is not None else x
    dtype = dtype or dt.literal_dtype(x)
    value = b.const(x.item() if isinstance(x, np.generic) else x, dtype)
    if shape:
        value = b.emit(Op.FULL, value, shape=tuple(shape))
    return value


def _not_a_number(x: Any) -> RuleError:
    if x is None:
        return RuleError("None cannot be used as a tile or scalar",
                         "if it comes from a @cube.func, end that helper with `return value`")
    return RuleError(f"{type(x).__name__} value {x!r} cannot be used as a tile or scalar",
                     "use numbers, tiles, or comptime values here")


def _check_literal_fits(literal: Any, dtype: dt.DType) -> None:
    """A weak int literal takes the other operand's dtype; one it cannot hold would wrap."""
    if isinstance(literal, bool) or not isinstance(literal, int) or not dtype.is_int:
        return
    info = np.iinfo(dtype.numpy)
    if not info.min <= literal <= info.max:
        wide = "uint32" if dtype.name == "uint8" and 0 <= literal < 2**32 else "int64"
        raise RuleError(f"the literal {literal} does not fit in {dtype.name}, the dtype of "
                        "the other operand", f"cast that operand first, e.g. "
                        f"`x.to(cube.{wide})`")


def common_dtype(a: Any, b: Any) -> dt.DType:
    """Promotion of two operands, Python literals being weak."""
    if is_value(a) and is_value(b):
        return dt.promote(a.type.dtype, b.type.dtype)
    if is_value(a):
        return dt.promote_literal(a.type.dtype, b) if not isinstance(b, np.generic) \
            else dt.promote(a.type.dtype, dt.literal_dtype(b))
    if is_value(b):
        return common_dtype(b, a)
    return dt.promote(dt.literal_dtype(a), dt.literal_dtype(b))


def unify(b: Builder, operands: list[Any], dtype: dt.DType | None = None) -> list[Value]:
    """Materialize, cast to one dtype and broadcast tiles to one shape."""
    if dtype is None:
        for x in operands:
            dtype = dtype_of(x) if dtype is None else _merge(dtype, x)
    shape: tuple[int, ...] = ()
    for x in operands:
        if is_value(x):
            shape = broadcast_shapes(shape, x.type.shape)
    return [materialize(b, x, dtype, shape if is_value(x) else ()) for x in operands]


def _merge(dtype: dt.DType, x: Any) -> dt.DType:
    if is_value(x) or isinstance(x, np.generic):
        return dt.promote(dtype, dtype_of(x))
    return dt.promote_literal(dtype, x)


def _pointer_add(b: Builder, op: Op, ptr: Value, offset: Any) -> Value:
    if is_value(offset) and offset.type.is_ptr:
        raise RuleError("two pointers cannot be added or subtracted: an array argument is a "
                        "pointer to its first element",
                        "load the values first: cube.load(x + offs) + cube.load(y + offs)")
    if op is Op.SUB:
        offset = unary(b, Op.NEG, offset)
    if not is_value(offset) and not isinstance(offset, (int, np.integer)):
        raise RuleError(f"pointer offsets must be integers, got {offset!r}",
                        "offsets count elements: write an int, or convert with int(...)")
    offset = materialize(b, offset)
    if not offset.type.dtype.is_int:
        raise RuleError(f"pointer offsets must be integers, got {offset.type.dtype.name}",
                        "cast them with `.to(cube.int32)`")
    shape = broadcast_shapes(ptr.type.shape, offset.type.shape)
    return b.emit(Op.PTR_ADD, b.broadcast(ptr, shape), b.broadcast(offset, shape))


def binary(b: Builder, op: Op, lhs: Any, rhs: Any) -> Any:
    """``lhs <op> rhs`` with promotion and broadcasting (comptime when both are Python)."""
    if not is_value(lhs) and not is_value(rhs):
        return _python_binary(op, lhs, rhs)
    for x in (lhs, rhs):
        if not is_value(x) and not is_literal(x):
            raise _not_a_number(x)
    if op in (Op.ADD, Op.SUB) and is_value(lhs) and lhs.type.is_ptr:
        return _pointer_add(b, op, lhs, rhs)
    if op is Op.ADD and is_value(rhs) and rhs.type.is_ptr:
        return _pointer_add(b, op, rhs, lhs)
    dtype = common_dtype(lhs, rhs)
    for x in (lhs, rhs):
        _check_literal_fits(x, dtype)
    if op is Op.DIV and not dtype.is_float:
        dtype = dt.float32
    if op is Op.POW and not dtype.is_float:
        dtype = dt.float32
    x, y = unify(b, [lhs, rhs], dtype)
    return b.emit(op, x, y)


def _python_binary(op: Op, lhs: Any, rhs: Any) -> Any:
    try:
        return PY_BINARY[op](lhs, rhs)
    except ZeroDivisionError as err:
        raise RuleError(f"compile-time {op.value} of {lhs!r} and {rhs!r} failed: {err}",
                        "check the comptime values this divides by") from None
    except TypeError as err:
        raise RuleError(f"compile-time {op.value} of {lhs!r} and {rhs!r} failed: {err}",
                        "combine numbers, tiles and comptime values of matching kinds") from None


def unary(b: Builder, op: Op, x: Any) -> Any:
    if not is_value(x):
        if op is Op.NEG:
            return -x
        if op is Op.NOT:
            return (not x) if isinstance(x, bool) else ~x
        if op is Op.ABS:
            return abs(x)
        x = materialize(b, x)
    return b.emit(op, x)


def math(b: Builder, op: Op, x: Any) -> Value:
    value = materialize(b, x)
    return b.emit(op, b.cast(value, dt.math_dtype(value.type.dtype)))


def to_bool(b: Builder, x: Any) -> Any:
    """A condition as bool: Python values stay Python, values are compared with zero."""
    if not is_value(x):
        return bool(x)
    if x.type.dtype.is_bool:
        return x
    return b.emit(Op.NE, x, materialize(b, 0, x.type.dtype, ()))
