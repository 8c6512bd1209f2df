"""Lowering of the builtins that Triton kernels use and cubepy spells the same way, so that
they port by renaming ``tl.`` to ``cube.``: the compiler hints (``multiple_of``,
``max_contiguous``, ``max_constancy``), ``umulhi``, ``clamp``, ``zeros_like``, ``ravel``,
``view``, ``broadcast``, ``join``, ``split``, ``interleave``, ``cat``, ``swizzle2d`` and
``static_print``.

A hint becomes a ``HINT`` op that the ``triton`` backend renders as Triton's own call and the
other backends drop (``cubepy/backends/blocks.py``); the others are built from other ops (or,
``static_print``, from none)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Op, Value
from ..ir import dtypes as dt
from ..ir.rules import RuleError, broadcast_shapes
from .builtins import (
    LOWERINGS,
    _broadcast_to,
    _expand_dims,
    _full,
    _maximum,
    _minimum,
    _permute,
    _reshape,
    _tile,
    _where,
    lowering,
    tile_axis,
)
from .pycalls import describe
from .semantics import binary, is_value, math, plain_int, to_bool


def _hint_values(kind: str, values: Any, rank: int) -> tuple[int, ...]:
    """``values`` as one positive int per axis (one int stands for every axis)."""
    given = values = plain_int(values)
    if isinstance(values, int) and not isinstance(values, bool):
        values = (values,) * max(1, rank)
    if isinstance(values, (tuple, list)):
        values = tuple(plain_int(v) for v in values)
    if not isinstance(values, tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        got = "a run-time value" if is_value(given) else repr(given)
        raise RuleError(f"cube.{kind}() needs positive compile-time ints, got {got}",
                        f"pass a literal or a cube.Comptime[int], e.g. cube.{kind}(x, 16)")
    return values


def _hint(kind: str) -> Any:
    def lower(ctx: Any, x: Any, values: Any) -> Any:
        if not is_value(x):
            _hint_values(kind, values, 0)
            return x  # a compile-time number: there is nothing for the compiler to learn
        return ctx.b.emit(Op.HINT, x, kind=kind,
                          values=_hint_values(kind, values, len(x.type.shape)))
    return lower


for _kind in ("multiple_of", "max_contiguous", "max_constancy"):
    lowering(_kind)(_hint(_kind))


@lowering("umulhi")
def _umulhi(ctx: Any, x: Any, y: Any) -> Value:
    if not is_value(x) and not is_value(y):
        raise RuleError("cube.umulhi() needs a run-time operand; both are compile-time numbers",
                        "compute it in Python: ((x & 0xFFFFFFFF) * (y & 0xFFFFFFFF)) >> 32")
    return binary(ctx.b, Op.UMULHI, x, y)


@lowering("clamp")
def _clamp(ctx: Any, x: Any, min: Any, max: Any) -> Any:  # noqa: A002 - the stub's names
    return _minimum(ctx, _maximum(ctx, x, min), max)


@lowering("zeros_like")
def _zeros_like(ctx: Any, x: Any) -> Value:
    if not is_value(x) or x.type.is_ptr:
        what = "a pointer tile" if is_value(x) else repr(x)
        raise RuleError(f"cube.zeros_like() needs a tile or a run-time scalar, got {what}",
                        "write cube.zeros(shape, dtype)")
    if not x.type.shape:
        return ctx.b.const(0, x.type.dtype)
    return _full(ctx, x.type.shape, 0, x.type.dtype)


@lowering("ravel")
def _ravel(ctx: Any, x: Any) -> Value:
    x = _tile(x, "ravel")
    return _reshape(ctx, x, (x.type.numel,))


@lowering("view")
def _view(ctx: Any, x: Any, shape: Any) -> Value:
    return _reshape(ctx, _tile(x, "view"), shape)


@lowering("broadcast")
def _broadcast(ctx: Any, a: Any, b: Any) -> tuple[Any, Any]:
    shapes = [v.type.shape if is_value(v) else () for v in (a, b)]
    try:
        shape = broadcast_shapes(*shapes)
    except RuleError:
        raise RuleError(f"cube.broadcast(): shapes {shapes[0]} and {shapes[1]} do not "
                        "broadcast", "each axis must match or be 1, as in NumPy") from None
    if not shape:  # two scalars stay scalars
        return a, b
    return tuple(_broadcast_to(ctx, v, shape) for v in (a, b))


@lowering("swizzle2d")
def _swizzle2d(ctx: Any, i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> tuple:
    # (i, j) is the k-th position in row-major order, k = i * size_j + j; positions are dealt
    # out band by band (size_g rows, fewer in the last band), down each column of a band
    def op(kind: Op, x: Any, y: Any) -> Any:
        return binary(ctx.b, kind, x, y)

    k = op(Op.ADD, op(Op.MUL, i, size_j), j)
    band_size = op(Op.MUL, size_g, size_j)
    first_row = op(Op.MUL, op(Op.FLOORDIV, k, band_size), size_g)
    rows = _minimum(ctx, op(Op.SUB, size_i, first_row), size_g)
    within = op(Op.MOD, k, band_size)
    return op(Op.ADD, first_row, op(Op.MOD, within, rows)), op(Op.FLOORDIV, within, rows)


@lowering("static_print")
def _static_print(ctx: Any, values: tuple) -> None:
    shown = [describe(v) if is_value(v) else str(v) for v in values]
    print(f"{ctx.b.loc}: {' '.join(shown)}", flush=True)


def _pair_selector(ctx: Any, rank: int) -> Value:
    """A bool tile of shape (1, ..., 1, 2), true at the first of each pair."""
    index = ctx.b.emit(Op.ARANGE, start=0, end=2)
    if rank:
        index = _reshape(ctx, index, (1,) * rank + (2,))
    return binary(ctx.b, Op.EQ, index, 0)


@lowering("join")
def _join(ctx: Any, a: Any, b: Any) -> Value:
    # pairs along a new last axis: a where the selector is true, b after it
    a, b = _broadcast(ctx, a, b)
    rank = len(a.type.shape) if is_value(a) else 0
    halves = [_expand_dims(ctx, v, -1) if is_value(v) and v.type.shape else v for v in (a, b)]
    return _where(ctx, _pair_selector(ctx, rank), *halves)


@lowering("split")
def _split(ctx: Any, x: Any) -> tuple[Value, Value]:
    x = _tile(x, "split")
    if x.type.shape[-1] != 2:
        raise RuleError(f"cube.split() needs a last axis of 2, got shape {x.type.shape}",
                        "split the pairs that cube.join() made, or reshape to (..., 2) first")
    dtype, rank = x.type.dtype, len(x.type.shape)
    first = _pair_selector(ctx, rank - 1)
    # each half is the max of its own element and the lowest value, which is the element
    # itself, bit for bit (-0.0 and NaN too: a sum, 0 + -0.0, lost the zero's sign)
    lowest = False if dtype.is_bool else float("-inf") if dtype.is_float else \
        int(np.iinfo(dtype.numpy).min)
    halves = []
    for pick in (first, binary(ctx.b, Op.EQ, first, False)):
        kept = _where(ctx, pick, x, ctx.b.const(lowest, dtype))
        halves.append(LOWERINGS["max"](ctx, kept, rank - 1))
    return halves[0], halves[1]


@lowering("interleave")
def _interleave(ctx: Any, a: Any, b: Any) -> Value:
    joined = _join(ctx, a, b)
    if len(joined.type.shape) < 2:
        raise RuleError("cube.interleave() needs tiles, got two scalars",
                        "use cube.join(a, b) for a pair")
    shape = joined.type.shape
    return _reshape(ctx, joined, shape[:-2] + (shape[-2] * 2,))


@lowering("cat")
def _cat(ctx: Any, a: Any, b: Any, can_reorder: Any) -> Value:
    # a's rows, then b's: the pairs of join with their axis moved to the front, merged with
    # the first. In order, which Triton's can_reorder=True also allows.
    a, b = _tile(a, "cat"), _tile(b, "cat")
    if a.type.shape != b.type.shape:
        raise RuleError(f"cube.cat() needs tiles of one shape, got {a.type.shape} and "
                        f"{b.type.shape}", "broadcast or reshape them to one shape first")
    shape = a.type.shape
    pairs = _join(ctx, a, b)
    front = _permute(ctx, pairs, (len(shape),) + tuple(range(len(shape))))
    return _reshape(ctx, front, (2 * shape[0],) + shape[1:])


@lowering("squeeze")
def _squeeze(ctx: Any, x: Any, dim: Any) -> Value:
    x = _tile(x, "squeeze")
    shape, axis = x.type.shape, plain_int(dim)
    rank = len(shape)
    if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank or \
            shape[axis % rank] != 1:
        raise RuleError(f"cube.squeeze(): dim {dim!r} is not an axis of length 1 of a tile "
                        f"of shape {shape}", "pass the compile-time index of an axis of 1")
    if rank == 1:  # the one element as a scalar: a max against the lowest value keeps its bits
        return LOWERINGS["max"](ctx, x, 0)
    axis %= rank
    return _reshape(ctx, x, shape[:axis] + shape[axis + 1:])


@lowering("unsqueeze")
def _unsqueeze(ctx: Any, x: Any, dim: Any) -> Value:
    return _expand_dims(ctx, x, dim)


@lowering("softmax")
def _softmax(ctx: Any, x: Any, dim: Any, keep_dims: Any, ieee_rounding: Any) -> Value:
    # Triton's: normalized along dim 0 unless told (not the last axis, as torch's is)
    x = _tile(x, "softmax")
    axis = 0 if dim is None else dim
    shifted = binary(ctx.b, Op.SUB, x, LOWERINGS["max"](ctx, x, axis, keep_dims=True))
    num = math(ctx.b, Op.EXP, shifted)
    return binary(ctx.b, Op.DIV, num, LOWERINGS["sum"](ctx, num, axis, keep_dims=True))


@lowering("gather")
def _gather(ctx: Any, src: Any, index: Any, axis: Any) -> Value:
    src, index = _tile(src, "gather"), _tile(index, "gather")
    rank, ax = len(src.type.shape), tile_axis(src, axis, "gather", "axis")
    if not index.type.dtype.is_int or index.type.is_ptr:
        raise RuleError(f"cube.gather() needs integer indices, got {describe(index)}",
                        "cast them: index.to(cube.int32)")
    if len(index.type.shape) != rank or any(
            a != b for d, (a, b) in enumerate(zip(src.type.shape, index.type.shape)) if d != ax):
        raise RuleError(f"cube.gather() along axis {ax} of a tile of shape {src.type.shape} "
                        f"needs indices of that shape but along axis {ax}, got "
                        f"{index.type.shape}", "reshape or broadcast the indices to match")
    # an index past either end reads that end: defined alike on every target
    last = src.type.shape[ax] - 1
    index = _minimum(ctx, _maximum(ctx, index, 0), last)
    return ctx.b.emit(Op.GATHER, src, index, axis=ax)


@lowering("histogram")
def _histogram(ctx: Any, input: Any, num_bins: Any, mask: Any) -> Value:  # noqa: A002
    x = _tile(input, "histogram")
    bins = plain_int(num_bins)
    if len(x.type.shape) != 1 or not x.type.dtype.is_int:
        raise RuleError(f"cube.histogram() counts a 1-D integer tile, got {describe(x)}",
                        "flatten it with cube.ravel(x); cast floats with x.to(cube.int32)")
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1 or bins & (bins - 1):
        raise RuleError(f"cube.histogram(): num_bins must be a compile-time power of two, "
                        f"got {num_bins!r}", "pass a literal or a cube.Comptime[int]")
    # bin b counts the elements equal to b (those outside 0..num_bins-1 count nowhere)
    hits = binary(ctx.b, Op.EQ, _expand_dims(ctx, x, 1),
                  _reshape(ctx, ctx.b.emit(Op.ARANGE, start=0, end=bins), (1, bins)))
    if mask is not None:
        hits = binary(ctx.b, Op.AND, hits, _expand_dims(ctx, _broadcast_to(
            ctx, binary(ctx.b, Op.NE, mask, False), x.type.shape), 1))
    return LOWERINGS["sum"](ctx, ctx.b.cast(hits, dt.int32), 0)


@lowering("debug_barrier")
def _debug_barrier(ctx: Any) -> None:
    ctx.b.create(Op.BARRIER, [], {})


def _condition(ctx: Any, cond: Any, what: str) -> Any:
    if is_value(cond) and cond.type.is_ptr:
        raise RuleError(f"cube.{what}() of a pointer tile", "compare the offsets instead")
    return to_bool(ctx.b, cond)


@lowering("device_assert")
def _device_assert(ctx: Any, cond: Any, msg: Any, mask: Any) -> None:
    cond = _condition(ctx, cond, "device_assert")
    if not is_value(cond):  # known now: true costs nothing, false is an error now
        if not cond:
            raise RuleError(f"cube.device_assert() of a condition false at compile time"
                            f"{': ' + str(msg) if msg else ''}",
                            "use cube.static_assert for compile-time conditions")
        return
    operands = [cond]
    if mask is not None:
        mask = _condition(ctx, mask, "device_assert")
        operands.append(mask if is_value(mask) else ctx.b.const(bool(mask), dt.bool_))
    ctx.b.create(Op.ASSERT, operands, {"message": str(msg)})


@lowering("assume")
def _assume(ctx: Any, cond: Any) -> None:
    cond = _condition(ctx, cond, "assume")
    if not is_value(cond):
        if not cond:
            raise RuleError("cube.assume() of a condition false at compile time",
                            "assume only what holds")
        return
    if cond.type.shape:
        raise RuleError(f"cube.assume() takes a scalar condition, got {describe(cond)}",
                        "assume about the scalars the tile is made from, e.g. "
                        "cube.assume(stride > 0)")
    ctx.b.create(Op.ASSUME, [cond], {})
