"""Lowering of the reductions and scans, with Triton's parameters: ``sum``, ``max``, ``min``
(``return_indices=True`` gives the argmax or argmin too), ``argmax``, ``argmin``, ``xor_sum``,
``reduce_or`` (each with ``keep_dims``), ``cumsum`` and ``cumprod`` (``reverse``), and
``sum``'s and the scans' ``dtype`` (the input cast to it first, the result of that dtype)."""

from __future__ import annotations

from typing import Any

from ..ir import Op, Value
from ..ir.rules import RuleError
from .builtins import LOWERINGS, Lowering, _axis, _dtype, _flip, _tile, comptime_flag


def _reduce_axes(ctx: Any, x: Any, axis: Any, what: str) -> tuple[Value, int]:
    """Normalize ``axis``; ``None`` flattens the tile so one axis-0 reduction gives a scalar."""
    x = _tile(x, what)
    if axis is None:
        if len(x.type.shape) > 1:
            x = ctx.b.emit(Op.RESHAPE, x, shape=(x.type.numel,))
        return x, 0
    axis = _axis(axis)
    rank = len(x.type.shape)
    if not -rank <= axis < rank:
        raise RuleError(f"axis {axis} is out of range for a tile of shape {x.type.shape}",
                        f"use an axis from {-rank} to {rank - 1}, or axis=None for all")
    return x, axis % rank


def _kept_dims(ctx: Any, result: Value, shape: tuple[int, ...], axis: int | None,
               keep_dims: Any) -> Value:
    """A reduction's ``result`` over ``axis`` of a tile of ``shape``, with the reduced axes
    kept as axes of 1 when ``keep_dims`` (Triton's ``keep_dims=True``)."""
    if not comptime_flag(keep_dims, "keep_dims"):
        return result
    if axis is None:
        return ctx.b.emit(Op.FULL, result, shape=(1,) * len(shape))
    return ctx.b.emit(Op.EXPAND_DIMS, result, axis=axis)


def _as_dtype(ctx: Any, x: Any, dtype: Any, what: str) -> Any:
    return x if dtype is None else ctx.b.cast(_tile(x, what), _dtype(dtype))


def _reduction(kind: str) -> Lowering:
    def lower(ctx: Any, x: Any, axis: Any, keep_dims: Any = False, dtype: Any = None,
              return_indices: Any = False, return_indices_tie_break_left: Any = True) -> Any:
        # the first of equal values is always the one returned: a tie broken to the left
        # is also one broken anyhow, which is what Triton's False allows
        comptime_flag(return_indices_tie_break_left, "return_indices_tie_break_left")
        x = _as_dtype(ctx, x, dtype, kind)
        value, ax = _reduce_axes(ctx, x, axis, kind)
        kept = None if axis is None else ax
        result = ctx.b.emit(Op.REDUCE, value, kind=kind, axis=ax)
        if dtype is not None:
            result = ctx.b.cast(result, _dtype(dtype))
        result = _kept_dims(ctx, result, x.type.shape, kept, keep_dims)
        if not comptime_flag(return_indices, "return_indices"):
            return result
        index = ctx.b.emit(Op.ARGREDUCE, value, kind=f"arg{kind}", axis=ax)
        return result, _kept_dims(ctx, index, x.type.shape, kept, keep_dims)
    return lower


def _argreduction(kind: str) -> Lowering:
    def lower(ctx: Any, x: Any, axis: Any, tie_break_left: Any = True,
              keep_dims: Any = False) -> Value:
        comptime_flag(tie_break_left, "tie_break_left")  # the first: see _reduction
        value, ax = _reduce_axes(ctx, x, axis, kind)
        result = ctx.b.emit(Op.ARGREDUCE, value, kind=kind, axis=ax)
        return _kept_dims(ctx, result, x.type.shape, None if axis is None else ax, keep_dims)
    return lower


for _kind in ("sum", "max", "min"):
    LOWERINGS[_kind] = _reduction(_kind)
for _kind in ("argmax", "argmin"):
    LOWERINGS[_kind] = _argreduction(_kind)


def _scan(kind: str) -> Lowering:
    def lower(ctx: Any, x: Any, axis: Any, reverse: Any = False, dtype: Any = None) -> Value:
        x = _as_dtype(ctx, x, dtype, kind)
        value, ax = _reduce_axes(ctx, x, axis, kind)
        backwards = comptime_flag(reverse, "reverse")
        if backwards:  # from the end: the scan of the reversed line, reversed
            value = _flip(ctx, value, ax)
        result = ctx.b.emit(Op.SCAN, value, kind=kind, axis=ax)
        if backwards:
            result = _flip(ctx, result, ax)
        return result if dtype is None else ctx.b.cast(result, _dtype(dtype))
    return lower


LOWERINGS["cumsum"] = _scan("cumsum")
LOWERINGS["cumprod"] = _scan("cumprod")


def _bitwise_reduction(name: str, kind: str) -> Lowering:
    def lower(ctx: Any, x: Any, axis: Any, keep_dims: Any = False) -> Value:
        value, ax = _reduce_axes(ctx, x, axis, name)
        if not value.type.dtype.is_int:
            raise RuleError(f"cube.{name}() needs an integer tile, got "
                            f"{value.type.dtype.name}", "for float bits, bitcast first: "
                            "x.to(cube.uint32, bitcast=True); for bools, cube.max(x, axis)")
        result = ctx.b.emit(Op.REDUCE, value, kind=kind, axis=ax)
        return _kept_dims(ctx, result, x.type.shape, None if axis is None else ax, keep_dims)
    return lower


LOWERINGS["xor_sum"] = _bitwise_reduction("xor_sum", "xor")
LOWERINGS["reduce_or"] = _bitwise_reduction("reduce_or", "or")
