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
)
from .pycalls import describe
from .semantics import binary, is_value, plain_int


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
