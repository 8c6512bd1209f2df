"""Lowering of each builtin call to IR. Arguments are bound against the stub's signature, so a
wrong call gets Python's own message about it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import Op, Type, Value
from ..ir import dtypes as dt
from ..ir.rules import RuleError, broadcast_shapes, dot_dtype
from ..lang import builtins as B
from .semantics import (
    binary,
    common_dtype,
    is_value,
    materialize,
    math,
    plain_int,
    to_bool,
    unify,
)

Lowering = Callable[..., Any]
LOWERINGS: dict[str, Lowering] = {}
MATH_OPS = {
    "exp": Op.EXP, "exp2": Op.EXP2, "log": Op.LOG, "log2": Op.LOG2, "sqrt": Op.SQRT,
    "rsqrt": Op.RSQRT, "sin": Op.SIN, "cos": Op.COS, "tanh": Op.TANH, "erf": Op.ERF,
    "sigmoid": Op.SIGMOID,
}


def lowering(name: str) -> Callable[[Lowering], Lowering]:
    def register(fn: Lowering) -> Lowering:
        LOWERINGS[name] = fn
        return fn
    return register


def call_builtin(ctx: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Lower ``cube.<name>(*args, **kwargs)``; ``ctx`` is the function being built."""
    stub = getattr(B, name)
    try:
        bound = inspect.signature(stub).bind(*args, **kwargs)
    except TypeError as err:
        raise RuleError(f"cube.{name}(): {err}",
                        f"see help(cube.{name}) for its parameters") from None
    bound.apply_defaults()
    if name in MATH_OPS:
        return math(ctx.b, MATH_OPS[name], bound.arguments["x"])
    return LOWERINGS[name](ctx, **bound.arguments)


def _axis(value: Any) -> int:
    value = plain_int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        what = "a run-time value" if is_value(value) else repr(value)
        raise RuleError(f"axis must be a compile-time int, got {what}",
                        "pass a literal such as axis=0, or a cube.Comptime[int] parameter")
    return value


def _dtype(value: Any) -> dt.DType:
    if isinstance(value, dt.DType):
        return value
    if isinstance(value, str):
        try:
            return dt.from_name(value)
        except TypeError as err:
            raise RuleError(str(err), "write a dtype such as cube.float32") from None
    name = "cube.float32"
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        try:  # a NumPy dtype: say which cube dtype it is
            name = f"cube.{dt.from_numpy(value).name}"
        except TypeError:
            pass
    raise RuleError(f"expected a cube dtype, got {value!r}", f"write {name}")


def _shape(value: Any) -> tuple[int, ...]:
    # Triton's spelling passes a shape as separate ints (reshape(x, M, N)) or as one tuple
    if isinstance(value, tuple) and len(value) == 1 and isinstance(value[0], (tuple, list)):
        value = value[0]
    value = plain_int(value)
    if isinstance(value, int):
        value = (value,)
    if isinstance(value, (tuple, list)):
        value = [plain_int(d) for d in value]
    if not isinstance(value, (tuple, list)) or not all(isinstance(d, int) for d in value):
        dims = value if isinstance(value, (tuple, list)) else [value]
        runtime = any(is_value(d) for d in dims)  # an IR value's repr means nothing to a user
        got = "a run-time value" if runtime else repr(value)
        raise RuleError(f"a tile shape must be a tuple of compile-time ints, got {got}",
                        "use comptime parameters (cube.Comptime[int]) for tile sizes")
    return tuple(value)


@lowering("cube_pos")
def _cube_pos(ctx: Any, axis: Any) -> Value:
    axis = _axis(axis)
    if axis not in (0, 1, 2):
        raise RuleError(f"grid axis {axis} does not exist; the grid has axes 0, 1, 2",
                        "write cube.cube_pos(0), (1) or (2)")
    return ctx.b.emit(Op.CUBE_POS, axis=axis)


@lowering("cube_count")
def _cube_count(ctx: Any, axis: Any) -> Value:
    axis = _axis(axis)
    if axis not in (0, 1, 2):
        raise RuleError(f"grid axis {axis} does not exist; the grid has axes 0, 1, 2",
                        "write cube.cube_count(0), (1) or (2)")
    return ctx.b.emit(Op.CUBE_COUNT, axis=axis)


@lowering("arange")
def _arange(ctx: Any, start: Any, end: Any) -> Value:
    start, end = plain_int(start), plain_int(end)
    if not isinstance(start, int) or not isinstance(end, int):
        raise RuleError("cube.arange() bounds must be compile-time ints",
                        "make the size a cube.Comptime[int] parameter and add a run-time "
                        "offset: `start + cube.arange(0, BLOCK)`")
    return ctx.b.emit(Op.ARANGE, start=start, end=end)


@lowering("zeros")
def _zeros(ctx: Any, shape: Any, dtype: Any) -> Value:
    return _full(ctx, shape, 0, dtype)


@lowering("full")
def _full(ctx: Any, shape: Any, value: Any, dtype: Any) -> Value:
    scalar = materialize(ctx.b, value, _dtype(dtype))
    if scalar.type.shape:
        raise RuleError("cube.full() needs a scalar fill value",
                        "to give a tile another shape, use cube.broadcast_to(x, shape)")
    return ctx.b.emit(Op.FULL, scalar, shape=_shape(shape))


@lowering("load")
def _load(ctx: Any, pointer: Any, mask: Any, other: Any, boundary_check: Any = (),
          padding_option: Any = "", cache_modifier: Any = "", eviction_policy: Any = "",
          volatile: Any = False) -> Value:
    # cache_modifier, eviction_policy, volatile: Triton's hints for a GPU's caches; the
    # value is the same without them (accepted so that kernels port unchanged)
    if getattr(pointer, "is_block_pointer", False):
        if mask is not None or other is not None:
            raise RuleError("cube.load() of a block pointer takes no mask or other",
                            'bound it with boundary_check=(0, 1), padding_option="zero"')
        return pointer.load(ctx, boundary_check, padding_option)
    if boundary_check or padding_option:
        raise RuleError("boundary_check and padding_option are for block pointers",
                        "mask a pointer tile's load with mask= and other=")
    ptr = _pointer(pointer, "load")
    operands = [ptr]
    if mask is not None:
        operands.append(materialize(ctx.b, mask, None, ptr.type.shape))
    elif other is not None:
        operands.append(materialize(ctx.b, True, dt.bool_))
    if other is not None:
        dtype = ptr.type.dtype
        if isinstance(other, float) and not dtype.is_float and np.isfinite(other) \
                and not other.is_integer():  # as a store of it would be refused
            raise RuleError(f"other={other!r} for {article(dtype.name)} array would truncate",
                            f"write an integer, e.g. other={int(other)}")
        operands.append(materialize(ctx.b, other, dtype,
                                    ptr.type.shape if is_value(other) else ()))
    return ctx.b.emit(Op.LOAD, *operands)


def _pointer(value: Any, what: str) -> Value:
    if not is_value(value) or not value.type.is_ptr:
        raise RuleError(f"cube.{what}() needs a pointer: an array argument plus offsets",
                        f"write `cube.{what}(x + offsets, ...)` where `x` is an array argument")
    return value


def _stored(ctx: Any, ptr: Value, value: Any) -> Value:
    shape, dtype = ptr.type.shape, ptr.type.dtype
    if is_value(value):
        if value.type.dtype != dtype:
            if value.type.dtype.is_float and not dtype.is_float:
                raise RuleError(
                    f"storing {value.type.dtype.name} values into {article(dtype.name)} array",
                    f"convert explicitly: `value.to(cube.{dtype.name})`")
            value = ctx.b.cast(value, dtype)
        if value.type.shape and not shape:
            raise RuleError(f"storing a tile of shape {value.type.shape} through a single "
                            "pointer", "add the offsets to the array: `out + offs`, with "
                            f"offs a tile of shape {value.type.shape}")
        return ctx.b.broadcast(value, shape) if value.type.shape else value
    if isinstance(value, float) and not dtype.is_float and not value.is_integer():
        raise RuleError(f"writing the float {value!r} into {article(dtype.name)} array would "
                        "truncate it", f"write an integer, e.g. {int(value)}")
    return materialize(ctx.b, value, dtype)


def article(word: str) -> str:
    """``word`` with its indefinite article: "an int32", "a float32"."""
    return ("an " if word[0] in "aeiou" else "a ") + word


def store_operands(ctx: Any, pointer: Any, value: Any, mask: Any) -> list[Value]:
    """The operands of the STORE op for ``cube.store(pointer, value, mask)``: the value cast
    to the array's dtype, the mask as a tile of the pointers' shape."""
    ptr = _pointer(pointer, "store")
    operands = [ptr, _stored(ctx, ptr, value)]
    if mask is not None:
        operands.append(materialize(ctx.b, mask, None, ptr.type.shape))
    return operands


@lowering("store")
def _store(ctx: Any, pointer: Any, value: Any, mask: Any, boundary_check: Any = (),
           cache_modifier: Any = "", eviction_policy: Any = "") -> None:
    if getattr(pointer, "is_block_pointer", False):  # hints: as cube.load's
        if mask is not None:
            raise RuleError("cube.store() to a block pointer takes no mask",
                            "bound it with boundary_check=(0, 1)")
        pointer.store(ctx, value, boundary_check)
        return
    if boundary_check:
        raise RuleError("boundary_check is for block pointers",
                        "mask a pointer tile's store with mask=")
    ctx.b.create(Op.STORE, store_operands(ctx, pointer, value, mask))


ATOMIC_ORDERS = ("acq_rel", "relaxed")


def _atomic_order(value: Any) -> str:
    if value not in ATOMIC_ORDERS:
        got = "a run-time value" if is_value(value) else repr(value)
        raise RuleError(f"an atomic's sem must be \"acq_rel\" or \"relaxed\", got {got}",
                        'write sem="relaxed" for an add that orders nothing else, or leave '
                        "it out (acquire-release)")
    return value


def _atomic(kind: str) -> Lowering:
    def lower(ctx: Any, pointer: Any, value: Any, mask: Any, sem: Any) -> Value:
        ptr = _pointer(pointer, f"atomic_{kind}")
        sem = _atomic_order(sem)
        operands = [ptr, _stored(ctx, ptr, value)]
        if mask is not None:
            operands.append(materialize(ctx.b, mask, None, ptr.type.shape))
        return ctx.b.emit(Op.ATOMIC, *operands, kind=kind, sem=sem)
    return lower


for _kind in ("add", "max", "min", "xchg", "and", "or", "xor"):
    LOWERINGS[f"atomic_{_kind}"] = _atomic(_kind)


@lowering("atomic_cas")
def _atomic_cas(ctx: Any, pointer: Any, cmp: Any, value: Any) -> Value:
    ptr = _pointer(pointer, "atomic_cas")
    return ctx.b.emit(Op.ATOMIC_CAS, ptr, _stored(ctx, ptr, cmp), _stored(ctx, ptr, value))


@lowering("abs")
def _abs(ctx: Any, x: Any) -> Any:
    return abs(x) if not is_value(x) else ctx.b.emit(Op.ABS, x)


@lowering("floor")
def _floor(ctx: Any, x: Any) -> Value:
    value = materialize(ctx.b, x)
    return ctx.b.emit(Op.FLOOR, ctx.b.cast(value, dt.math_dtype(value.type.dtype)))


@lowering("ceil")
def _ceil(ctx: Any, x: Any) -> Value:
    value = materialize(ctx.b, x)
    return ctx.b.emit(Op.CEIL, ctx.b.cast(value, dt.math_dtype(value.type.dtype)))


@lowering("pow")
def _pow(ctx: Any, x: Any, y: Any) -> Any:
    return binary(ctx.b, Op.POW, x, y)


@lowering("maximum")
def _maximum(ctx: Any, x: Any, y: Any) -> Any:
    return binary(ctx.b, Op.MAXIMUM, x, y)


@lowering("minimum")
def _minimum(ctx: Any, x: Any, y: Any) -> Any:
    return binary(ctx.b, Op.MINIMUM, x, y)


@lowering("fma")
def _fma(ctx: Any, x: Any, y: Any, z: Any) -> Value:
    operands = unify(ctx.b, [x, y, z])
    dtype = dt.math_dtype(operands[0].type.dtype)
    return ctx.b.emit(Op.FMA, *(ctx.b.cast(v, dtype) for v in operands))


@lowering("where")
def _where(ctx: Any, cond: Any, x: Any, y: Any) -> Value:
    pointers = any(is_value(v) and v.type.is_ptr for v in (x, y))
    dtype = None if pointers else common_dtype(x, y)
    values = [to_bool(ctx.b, materialize(ctx.b, cond)), materialize(ctx.b, x, dtype),
              materialize(ctx.b, y, dtype)]
    return ctx.b.emit(Op.WHERE, *_broadcast_all(ctx, values))


def _broadcast_all(ctx: Any, values: list[Value]) -> list[Value]:
    shape: tuple[int, ...] = ()
    for v in values:
        shape = broadcast_shapes(shape, v.type.shape)
    return [ctx.b.broadcast(v, shape) for v in values]


@lowering("cast")
def _cast(ctx: Any, x: Any, dtype: Any, bitcast: Any = False) -> Value:
    if not isinstance(bitcast, bool):
        raise RuleError(f"cube.cast()'s bitcast must be True or False, got {bitcast!r}",
                        "write `bitcast=True`: whether to reinterpret is known at compile time")
    if bitcast:
        return ctx.b.bitcast(materialize(ctx.b, x), _dtype(dtype))
    return ctx.b.cast(materialize(ctx.b, x), _dtype(dtype))


def _tile(x: Any, what: str) -> Value:
    if not is_value(x) or not x.type.shape:
        got = f"a {x.type.dtype.name} scalar" if is_value(x) else repr(x)
        raise RuleError(f"cube.{what}() needs a tile, got {got}",
                        "build tiles with cube.arange(), cube.load(ptr + offsets) or "
                        "cube.full()")
    return x


def tile_axis(x: Value, dim: Any, what: str, name: str = "dim") -> int:
    """``dim`` as an axis of tile ``x`` counted from 0 (a negative one counts from the end)."""
    rank, axis = len(x.type.shape), plain_int(dim)
    if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
        raise RuleError(f"cube.{what}(): {name} {dim!r} is not an axis of a tile of shape "
                        f"{x.type.shape}", f"pass a compile-time int from {-rank} to {rank - 1}")
    return axis % rank


def comptime_flag(value: Any, name: str) -> bool:
    """A builtin's bool argument, which must be known at compile time."""
    flag = plain_int(value)
    if not isinstance(flag, (bool, int)):
        raise RuleError(f"{name} must be a compile-time bool, got a run-time value",
                        "pass True or False (or a cube.Comptime[bool])")
    return bool(flag)


@lowering("reshape")
def _reshape(ctx: Any, x: Any, shape: Any, can_reorder: Any = False) -> Value:
    # can_reorder lets Triton pick another order; cubepy keeps row-major order, which it allows
    x, shape = _tile(x, "reshape"), _shape(shape)
    if Type(x.type.dtype, shape).numel != x.type.numel:
        raise RuleError(f"cannot reshape a tile of shape {x.type.shape} ({x.type.numel} "
                        f"elements) to {shape}", "the new shape must have as many elements; "
                        "use cube.broadcast_to() or cube.sum() to change the element count")
    return ctx.b.emit(Op.RESHAPE, x, shape=shape)


@lowering("permute")
def _permute(ctx: Any, x: Any, dims: Any) -> Value:
    x, dims = _tile(x, "permute"), _shape(dims)
    rank = len(x.type.shape)
    if sorted(dims) != list(range(rank)):
        raise RuleError(f"permute dims {dims} are not a permutation of the {rank} axes of "
                        f"{x.type.shape}", f"list each axis once, e.g. "
                        f"{tuple(reversed(range(rank)))}")
    return ctx.b.emit(Op.PERMUTE, x, dims=dims)


@lowering("flip")
def _flip(ctx: Any, x: Any, dim: Any) -> Value:
    x = _tile(x, "flip")
    axis = tile_axis(x, -1 if dim is None else dim, "flip")
    return ctx.b.emit(Op.FLIP, x, axis=axis)


@lowering("trans")
def _trans(ctx: Any, x: Any, dims: Any = ()) -> Value:
    x = _tile(x, "trans")
    if dims:  # Triton's trans(x, *dims) is a permute
        return _permute(ctx, x, dims)
    if len(x.type.shape) != 2:
        raise RuleError(f"cube.trans() needs a 2-D tile, got shape {x.type.shape}",
                        "pass the new order of the axes, cube.trans(x, 2, 0, 1), or use "
                        "cube.permute(x, dims)")
    return ctx.b.emit(Op.PERMUTE, x, dims=(1, 0))


@lowering("expand_dims")
def _expand_dims(ctx: Any, x: Any, axis: Any) -> Value:
    x = materialize(ctx.b, x)
    if isinstance(axis, (tuple, list)):  # several new axes: positions in the result
        rank = len(x.type.shape) + len(axis)
        axes = [_axis(a) for a in axis]
        if not all(-rank <= a < rank for a in axes) or len({a % rank for a in axes}) < len(axes):
            raise RuleError(f"expand_dims axes {tuple(axes)} are not distinct axes of a "
                            f"result of {rank} axes", f"use axes from {-rank} to {rank - 1}")
        for a in sorted(a % rank for a in axes):
            x = ctx.b.emit(Op.EXPAND_DIMS, x, axis=a)
        return x
    axis = _axis(axis)
    rank = len(x.type.shape)
    if not -rank - 1 <= axis <= rank:
        raise RuleError(f"expand_dims axis {axis} is out of range for shape {x.type.shape}",
                        f"use an axis from {-rank - 1} to {rank}")
    return ctx.b.emit(Op.EXPAND_DIMS, x, axis=axis)


@lowering("broadcast_to")
def _broadcast_to(ctx: Any, x: Any, shape: Any) -> Value:
    shape = _shape(shape)
    value = materialize(ctx.b, x)
    if not value.type.shape:
        return ctx.b.emit(Op.FULL, value, shape=shape)
    return ctx.b.broadcast(value, shape)


@lowering("dot")
def _dot(ctx: Any, a: Any, b: Any, acc: Any) -> Value:
    a, b = _tile(a, "dot"), _tile(b, "dot")
    if len(a.type.shape) != 2 or len(b.type.shape) != 2:
        raise RuleError(f"cube.dot() needs 2-D tiles, got {a.type.shape} and {b.type.shape}",
                        "make them 2-D: `a[None, :]` for a row, `b[:, None]` for a column; "
                        "for an elementwise product and sum write cube.sum(a * b, axis=0)")
    if a.type.shape[1] != b.type.shape[0]:
        raise RuleError(f"cube.dot() of {a.type.shape} and {b.type.shape}: the inner "
                        "dimensions differ", "a's columns must match b's rows; did you mean "
                        "cube.dot(a, cube.trans(b))?" if a.type.shape[1] == b.type.shape[1]
                        else "a (M, K) tile times a (K, N) tile")
    shape = (a.type.shape[0], b.type.shape[1])
    if acc is None:
        if a.type.dtype != b.type.dtype:
            raise RuleError(f"cube.dot() of {a.type.dtype.name} and {b.type.dtype.name}",
                            "cast both operands to one dtype")
        acc = materialize(ctx.b, 0, dot_dtype(a.type.dtype), shape)
    else:
        acc = materialize(ctx.b, acc, None, shape if is_value(acc) else ())
        if not acc.type.shape:
            acc = ctx.b.emit(Op.FULL, acc, shape=shape)
    return ctx.b.emit(Op.DOT, a, b, acc)


@lowering("static_assert")
def _static_assert(ctx: Any, cond: Any, msg: Any) -> None:
    if is_value(cond):
        raise RuleError("static_assert needs a compile-time condition",
                        "assert on comptime parameters and shapes only")
    if not cond:
        raise RuleError(f"static_assert failed{': ' + str(msg) if msg else ''}")


@lowering("device_print")
def _device_print(ctx: Any, prefix: Any, values: tuple) -> None:
    operands = [materialize(ctx.b, v) for v in values]
    ctx.b.create(Op.PRINT, operands, {"prefix": str(prefix)})
