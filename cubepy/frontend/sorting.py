"""Lowering of ``sort`` and ``topk`` (Triton's spelling).

The ``SORT`` op orders integer keys along a tile's last axis; each backend has its own sort
(Triton's bitonic ``tl.sort``, a sort per row on the CPU, a bitonic network in workgroup
memory on WGSL). Everything else is built here from other ops, so every target orders alike:

- floats become integer keys of their bits that order as the floats do, with a NaN of either
  sign above +inf (NumPy's order: NaNs last, first when descending), and -0.0 before +0.0;
  16-bit floats are widened to float32 first, which keeps their order;
- bools sort as int32 (which every target has);
- another axis than the last is moved last and back;
- ``topk`` keeps the first ``k`` sorted keys of each row, picked bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Op, Value
from ..ir import dtypes as dt
from ..ir.rules import RuleError
from .builtins import (
    LOWERINGS,
    _permute,
    _reshape,
    _tile,
    _where,
    comptime_flag,
    lowering,
    tile_axis,
)
from .semantics import binary, plain_int

_FLOAT_KEYS = {32: (dt.float32, dt.int32, 0x7F800000), 64: (dt.float64, dt.int64,
                                                           0x7FF0000000000000)}


def _flip_negatives(ctx: Any, bits: Value, magnitude_mask: int) -> Value:
    # a negative float's bits read as an int grow with its magnitude: flipping the magnitude
    # bits makes them fall instead (an involution, so it also turns keys back into bits)
    negative = binary(ctx.b, Op.LT, bits, 0)
    return _where(ctx, negative, binary(ctx.b, Op.XOR, bits, magnitude_mask), bits)


def _to_keys(ctx: Any, x: Value) -> tuple[Value, Any]:
    """Integer keys that sort as ``x`` should, and the function that turns them back."""
    dtype = x.type.dtype
    if dtype.is_int:
        return x, lambda keys: keys
    if dtype.is_bool:
        return ctx.b.cast(x, dt.int32), lambda keys: ctx.b.cast(keys, dt.bool_)
    wide, key_dtype, inf_bits = _FLOAT_KEYS[max(32, dtype.bits)]
    magnitude_mask = (1 << (key_dtype.bits - 1)) - 1
    bits = ctx.b.bitcast(ctx.b.cast(x, wide), key_dtype)
    magnitude = binary(ctx.b, Op.AND, bits, magnitude_mask)
    # a NaN of either sign goes above +inf: its sign bit is cleared
    bits = _where(ctx, binary(ctx.b, Op.GT, magnitude, inf_bits), magnitude, bits)

    def restore(keys: Value) -> Value:
        floats = ctx.b.bitcast(_flip_negatives(ctx, keys, magnitude_mask), wide)
        return ctx.b.cast(floats, dtype)

    return _flip_negatives(ctx, bits, magnitude_mask), restore


def _move_axis(ctx: Any, x: Value, axis: int, to_last: bool) -> Value:
    rank = len(x.type.shape)
    if axis == rank - 1:
        return x
    order = [d for d in range(rank) if d != axis] + [axis]
    if not to_last:
        order = [order.index(d) for d in range(rank)]
    return _permute(ctx, x, tuple(order))


def _first_of_rows(ctx: Any, keys: Value, k: int) -> Value:
    """The first ``k`` keys of each row along the last axis: the rows cut into groups of k,
    the first group picked by a max against the lowest key (which keeps every key's bits)."""
    shape = keys.type.shape
    groups = shape[-1] // k
    grouped = _reshape(ctx, keys, shape[:-1] + (groups, k))
    group = ctx.b.emit(Op.ARANGE, start=0, end=groups)
    first = binary(ctx.b, Op.EQ, _reshape(ctx, group, (1,) * (len(shape) - 1) + (groups, 1)), 0)
    lowest = int(np.iinfo(keys.type.dtype.numpy).min)
    kept = _where(ctx, first, grouped, ctx.b.const(lowest, keys.type.dtype))
    return LOWERINGS["max"](ctx, kept, len(shape) - 1)


def sorted_along(ctx: Any, x: Value, axis: int, descending: bool, k: int | None = None) -> Value:
    """``x`` sorted along ``axis``, cut to its first ``k`` elements there when ``k`` is given."""
    keys, restore = _to_keys(ctx, _move_axis(ctx, x, axis, to_last=True))
    keys = ctx.b.emit(Op.SORT, keys, descending=descending)
    if k is not None and k < keys.type.shape[-1]:
        keys = _first_of_rows(ctx, keys, k)
    return _move_axis(ctx, restore(keys), axis, to_last=False)


def _sortable(x: Any, what: str) -> Value:
    x = _tile(x, what)
    if x.type.is_ptr:
        raise RuleError(f"cube.{what}() of a pointer tile", "sort the loaded values")
    return x


@lowering("sort")
def _sort(ctx: Any, x: Any, dim: Any, descending: Any) -> Value:
    x = _sortable(x, "sort")
    return sorted_along(ctx, x, tile_axis(x, -1 if dim is None else dim, "sort"),
                        comptime_flag(descending, "descending"))


@lowering("topk")
def _topk(ctx: Any, x: Any, k: Any, dim: Any, descending: Any) -> Value:
    x = _sortable(x, "topk")
    axis = tile_axis(x, -1 if dim is None else dim, "topk")
    n, k = x.type.shape[axis], plain_int(k)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1 or k > n or k & (k - 1):
        raise RuleError(f"cube.topk(): k must be a compile-time power of two from 1 to {n} "
                        f"(the length of axis {axis}), got {k!r}",
                        "pass a literal or a cube.Comptime[int], e.g. cube.topk(x, 4)")
    return sorted_along(ctx, x, axis, comptime_flag(descending, "descending"), k)
