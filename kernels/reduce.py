"""Reductions: sum, prod, max, min, any, all, mean, var/std, logsumexp, argmax/argmin.

Every reduction is a *row* problem: the kept axes of the input index ``n_rows`` outputs and
the reduced axes (in their order) form each output's row of ``n_cols`` elements. Both groups
of axes are collapsed on the host (``group``) and addressed in the kernel by a linear index
with ``strided.element_offset``: a dense row (the reduced axes contiguous) is read with plain
``start + arange`` addressing, and a row's offset is computed once per row, not per element.

A cube reduces ``ROWS`` rows, loading ``(ROWS, BLOCK)`` tiles in a loop over the row and
combining them elementwise into an accumulator tile that is reduced once at the end. When the
reduced axis is strided and the kept axis is the contiguous one (``x.sum(0)`` of a row-major
matrix), the tile is tall (many rows, a few columns) so that loads stay coalesced. Few long
rows (a full reduction) are split over several cubes (``split_columns``): each writes a
partial result and a second launch reduces the partials. On the cpu a tile has one lane axis,
``(1, BLOCK)`` or tall ``(ROWS, 1)`` (``rows.lane_tile_shape``), which its backend runs as fused
loops over lanes; rows are split there so that each lane adds at most ``CPU_LANE_DEPTH``
values (``rows.lane_splits``).

Accumulators: the caller passes ``compute`` (int64 or int32 for integer sums and products,
float32 for 16-bit floats); ``max``/``min`` compute in the input's dtype (float32 for 16-bit
floats, int32 for bool and small ints). Variance is two-pass (the mean, then the sum of
squared deviations); ``logsumexp`` is the max, then the sum of ``exp(x - max)``.

Example:
    >>> y = reduce(ctx, "sum", x, (1,), cube.float32, cube.float32)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import cubepy as cube
from cubepy.ir.dtypes import DType

from .layout import Context, View, register, scalar
from .rows import (
    Group,
    RowProblem,
    identity,
    lane_splits,
    lane_tile_shape,
    launch_options,
    row_problem,
    split_columns,
    tile_shape,
)
from .strided import element_offset

REDUCE_OPS = ("sum", "prod", "max", "min", "any", "all", "mean")
ARG_OPS = ("argmax", "argmin")
# The op that combines the partial results of each op when a row is split over cubes.
COMBINE = {"sum": "sum", "prod": "prod", "max": "max", "min": "min", "any": "any", "all": "all",
            "sqdev": "sum", "sumexp": "sum"}


# ---------------------------------------------------------------- kernels


@cube.func
def prod_along_rows(acc, ROWS, BLOCK):
    # A halving tree over axis 1: the product of each pair of columns is its max times its
    # min (exact, and cheaper to compile for the CPU than picking the two out).
    for level in cube.static_range(16):
        if (BLOCK >> level) > 1:
            pairs = cube.reshape(acc, (ROWS, BLOCK >> (level + 1), 2))
            acc = cube.max(pairs, axis=2) * cube.min(pairs, axis=2)
    return cube.reshape(acc, (ROWS,))


@cube.func
def chunk_end(begin, chunk, n_cols):
    # A split row: cube (i, j) takes columns [j * chunk, (j + 1) * chunk) of its rows.
    end = begin + chunk
    if end > n_cols:
        end = n_cols
    return end


@cube.func
def prepare(raw, m, center, ident, OP, AT):
    # The values an op accumulates, with masked lanes set to its identity.
    if OP == "any" or OP == "all":
        v = (raw != 0).to(AT)
    elif OP == "sqdev":
        d = raw.to(AT) - center[:, None]
        v = d * d
    elif OP == "sumexp":
        v = cube.exp(raw.to(AT) - center[:, None])
    else:
        v = raw.to(AT)
    return cube.where(m, v, ident)


@cube.func
def combine(acc, v, OP):
    if OP == "prod":
        r = acc * v
    elif OP == "max" or OP == "any":
        r = cube.maximum(acc, v)
    elif OP == "min" or OP == "all":
        r = cube.minimum(acc, v)
    else:
        r = acc + v
    return r


@cube.func
def finish(acc, OP, ROWS, BLOCK):
    if OP == "prod":
        r = prod_along_rows(acc, ROWS, BLOCK)
    elif OP == "max" or OP == "any":
        r = cube.max(acc, axis=1)
    elif OP == "min" or OP == "all":
        r = cube.min(acc, axis=1)
    else:
        r = cube.sum(acc, axis=1)
    return r


@cube.func
def finite_or_zero(c):
    # exp(x - max) with an infinite max (all -inf, or a +inf) is taken around 0 instead.
    return cube.where(cube.abs(c) < float("inf"), c, 0.0)


@cube.func
def row_center(center, rows, row_ok, OP, POST, ROWS, AT):
    # Each row's center (the mean a variance subtracts, the max of a logsumexp) and the shift
    # its values are taken around (exp's: finite); zeros for ops without one.
    c = cube.zeros((ROWS,), AT)
    if OP == "sqdev" or OP == "sumexp" or POST == "lse":
        c = cube.load(center + rows, mask=row_ok, other=0).to(AT)
    shift = c
    if OP == "sumexp":
        shift = finite_or_zero(c)
    return c, shift


@cube.func
def finish_rows(acc, c, divisor, OP, POST, ROWS, BLOCK):
    # The accumulator tile reduced to one value per row, and the result made of it.
    r = finish(acc, OP, ROWS, BLOCK)
    if POST == "sqrt":
        r = cube.sqrt(r / divisor)
    elif POST == "lse":
        r = c + cube.log(r)
    elif r.dtype.is_float:
        r = r / divisor  # 1 but for means and variances: sums and means share a kernel
    return r


@cube.kernel
def reduce_kernel(x, xo, rs0, rs1, rs2, rs3, rd1, rd2, rd3, n_rows,
                  cs0, cs1, cs2, cs3, cd1, cd2, cd3, n_cols, chunk, center, out, ident, divisor,
                  OP: cube.Comptime[str], POST: cube.Comptime[str], AT: cube.Comptime[object],
                  DT: cube.Comptime[object], ROW_RANK: cube.Comptime[int],
                  COL_RANK: cube.Comptime[int], ROWS: cube.Comptime[int],
                  BLOCK: cube.Comptime[int]):
    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)
    row_ok = rows < n_rows
    base = xo + element_offset(rows, ROW_RANK, rd1, rd2, rd3, rs0, rs1, rs2, rs3)
    begin = cube.cube_pos(1) * chunk
    end = chunk_end(begin, chunk, n_cols)
    c, shift = row_center(center, rows, row_ok, OP, POST, ROWS, AT)
    acc = cube.zeros((ROWS, BLOCK), AT) + ident
    for start in range(begin, end, BLOCK):
        cols = start + cube.arange(0, BLOCK)
        m = row_ok[:, None] & (cols < end)[None, :]
        offs = element_offset(cols, COL_RANK, cd1, cd2, cd3, cs0, cs1, cs2, cs3)
        raw = cube.load(x + base[:, None] + offs[None, :], mask=m, other=0)
        acc = combine(acc, prepare(raw, m, shift, ident, OP, AT), OP)
    r = finish_rows(acc, c, divisor, OP, POST, ROWS, BLOCK)
    cube.store(out + rows * cube.cube_count(1) + cube.cube_pos(1), r.to(DT), mask=row_ok)


@cube.kernel
def arg_kernel(x, xo, rs0, rs1, rs2, rs3, rd1, rd2, rd3, n_rows,
               cs0, cs1, cs2, cs3, cd1, cd2, cd3, n_cols, chunk, part_index, out_value,
               out_index, ident, OP: cube.Comptime[str], VT: cube.Comptime[object],
               IT: cube.Comptime[object], PARTIALS: cube.Comptime[bool],
               SPLIT: cube.Comptime[bool], ROW_RANK: cube.Comptime[int],
               COL_RANK: cube.Comptime[int], ROWS: cube.Comptime[int],
               BLOCK: cube.Comptime[int]):
    # PARTIALS: x holds the best values of a split launch, part_index their indices.
    # SPLIT: this launch is one, writing its best values and indices for a second.
    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)
    row_ok = rows < n_rows
    base = xo + element_offset(rows, ROW_RANK, rd1, rd2, rd3, rs0, rs1, rs2, rs3)
    begin = cube.cube_pos(1) * chunk
    end = chunk_end(begin, chunk, n_cols)
    best = cube.zeros((ROWS,), VT) + ident
    best_at = cube.zeros((ROWS,), cube.int32) + begin
    for start in range(begin, end, BLOCK):
        local = cube.arange(0, BLOCK)
        cols = start + local
        m = row_ok[:, None] & (cols < end)[None, :]
        offs = element_offset(cols, COL_RANK, cd1, cd2, cd3, cs0, cs1, cs2, cs3)
        v = cube.load(x + base[:, None] + offs[None, :], mask=m, other=0).to(VT)
        v = cube.where(m, v, ident)
        # strictly better: on ties the earlier tile (the first occurrence) is kept
        if OP == "argmax":
            tile_best = cube.max(v, axis=1)
            tile_at = cube.argmax(v, axis=1)
            better = tile_best > best
        else:
            tile_best = cube.min(v, axis=1)
            tile_at = cube.argmin(v, axis=1)
            better = tile_best < best
        if best.dtype.is_float:  # the first NaN wins, as NumPy's (no NaN is > or < one)
            better = better | ((tile_best != tile_best) & (best == best))
        at = start + tile_at
        if PARTIALS:
            found = cube.load(part_index + rows[:, None] * n_cols + cols[None, :], mask=m,
                              other=0)
            at = cube.sum(cube.where(local[None, :] == tile_at[:, None], found, 0), axis=1)
        best = cube.where(better, tile_best, best)
        best_at = cube.where(better, at, best_at)
    slot = rows * cube.cube_count(1) + cube.cube_pos(1)
    cube.store(out_index + slot, best_at.to(IT), mask=row_ok)
    if SPLIT:
        cube.store(out_value + slot, best, mask=row_ok)


# ---------------------------------------------------------------- launchers


@dataclass(frozen=True)
class Plan:
    """How a row problem is launched: the tile and how each row is split over cubes."""

    tile_rows: int
    block: int
    splits: int
    chunk: int
    row_tiles: int

    @property
    def grid(self) -> tuple[int, int]:
        return self.row_tiles, self.splits


def plan(ctx: Context, problem: RowProblem, chunk: int | None = None) -> Plan:
    """The tile of ``problem`` and its split (``chunk`` columns per cube if given)."""
    return tile_plan(ctx, problem.rows, problem.cols, chunk)


def tile_plan(ctx: Context, rows: Group, cols: Group, chunk: int | None = None) -> Plan:
    """``plan`` for rows addressed by ``rows`` reducing the axes of ``cols`` (the groups of
    one view, or of several operands read together)."""
    tall = rows.rank == 0 and cols.rank != 0
    lanes = ctx.target.startswith("cpu")
    shape = lane_tile_shape if lanes else functools.partial(tile_shape, ctx)
    tile_rows, block = shape(rows.numel, cols.numel, tall)
    row_tiles = math.ceil(rows.numel / tile_rows)
    if chunk is None:
        split = lane_splits if lanes else split_columns
        splits, chunk = split(row_tiles, cols.numel, block)
    else:
        splits = math.ceil(cols.numel / chunk)
    return Plan(tile_rows, block, splits, chunk, row_tiles)


def _run_reduce(ctx: Context, op: str, post: str, problem: RowProblem, how: Plan,
                compute: DType, out: View, center: View | None, divisor: float) -> None:
    rows, cols, x = problem.rows, problem.cols, problem.x
    reduce_kernel[how.grid](
        x.storage, x.offset, *rows.args(0), *rows.dim_args, rows.numel,
        *cols.args(0), *cols.dim_args, cols.numel, how.chunk,
        (x if center is None else center).storage, out.storage,
        scalar(identity(op, compute), compute), scalar(divisor, compute),
        OP=op, POST=post, AT=compute, DT=out.dtype, ROW_RANK=rows.rank, COL_RANK=cols.rank,
        ROWS=how.tile_rows, BLOCK=how.block, target=ctx.target,
        **launch_options(ctx, how.tile_rows * how.block))


def reduce_rows(ctx: Context, op: str, post: str, problem: RowProblem, compute: DType,
                out: View, center: View | None, divisor: float) -> None:
    """``op`` over every row of ``problem`` into ``out``; few long rows are split over
    cubes and their partial results reduced by a second launch."""
    how = plan(ctx, problem)
    if how.splits == 1:
        _run_reduce(ctx, op, post, problem, how, compute, out, center, divisor)
        return
    partials = ctx.new((problem.rows.numel, how.splits), compute)
    _run_reduce(ctx, op, "scale", problem, how, compute, partials, center, 1.0)
    reduce_partials(ctx, op, post, partials, compute, out, center, divisor)


def reduce_partials(ctx: Context, op: str, post: str, partials: View, compute: DType,
                    out: View, center: View | None = None, divisor: float = 1.0) -> None:
    """The second launch of a split ``op``: each row of ``partials`` (one value per cube of
    the first) combined into ``out``."""
    reduce_rows(ctx, COMBINE[op], post, row_problem(ctx, partials, (1,)), compute, out,
                center, divisor)


def chunk_totals(ctx: Context, op: str, problem: RowProblem, compute: DType, chunk: int
                 ) -> View:
    """``op`` (``sum`` or ``prod``) over each run of ``chunk`` columns of every row: an
    ``(n_rows, ceil(n_cols / chunk))`` view in ``compute`` (the carries of a split scan)."""
    how = plan(ctx, problem, chunk)
    out = ctx.new((problem.rows.numel, how.splits), compute)
    _run_reduce(ctx, op, "scale", problem, how, compute, out, None, 1.0)
    return out


def check_axes(x: View, axes: Sequence[int]) -> tuple[int, ...]:
    axes = tuple(sorted(set(int(a) for a in axes)))
    if any(not 0 <= a < x.ndim for a in axes):
        raise ValueError(f"axes {axes} out of range for a view of {x.ndim} dimensions")
    return axes


def _reduce(ctx: Context, op: str, post: str, x: View, axes: Sequence[int], compute: DType,
            out_dtype: DType, center: View | None = None, divisor: float = 1.0) -> View:
    out = ctx.new(tuple(n for a, n in enumerate(x.shape) if a not in axes), out_dtype)
    if out.numel:
        reduce_rows(ctx, op, post, row_problem(ctx, x, axes), compute, out, center, divisor)
    return out


def reduce(ctx: Context, op: str, x: View, axes: Sequence[int], compute: DType,
           out_dtype: DType) -> View:
    """``op`` (one of ``REDUCE_OPS``) over ``axes`` of ``x``, accumulated in ``compute``; the
    result has the kept axes. ``any``/``all`` accumulate in int32 whatever ``compute`` is.

    Example:
        >>> reduce(ctx, "mean", x, (0, 2), cube.float32, cube.float16)  # doctest: +SKIP
    """
    axes = check_axes(x, axes)
    op, compute, divisor = kernel_op(op, math.prod(x.shape[a] for a in axes), compute)
    return _reduce(ctx, op, "scale", x, axes, compute, out_dtype, divisor=divisor)


def kernel_op(op: str, count: int, compute: DType) -> tuple[str, DType, float]:
    """What ``reduce``'s ``op`` over ``count`` elements a row runs in the kernel: the op, its
    accumulator and the divisor of the result (a mean is a sum over the count; ``any`` and
    ``all`` accumulate in int32)."""
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduction {op!r}; ops: {', '.join(REDUCE_OPS)}")
    if op in ("any", "all"):
        return op, cube.int32, 1.0
    if op == "mean":
        return "sum", compute, count
    return op, compute, 1.0


def variance(ctx: Context, x: View, axes: Sequence[int], correction: float, sqrt: bool,
             compute: DType, out_dtype: DType) -> View:
    """The variance (with ``sqrt`` the standard deviation) over ``axes``: the sum of squared
    deviations from the mean divided by ``count - correction`` (at least 0).

    Example:
        >>> variance(ctx, x, (1,), 1, False, cube.float32, cube.float32)  # doctest: +SKIP
    """
    axes = check_axes(x, axes)
    count = math.prod(x.shape[a] for a in axes)
    mean = _reduce(ctx, "sum", "scale", x, axes, compute, compute, divisor=count)
    return _reduce(ctx, "sqdev", "sqrt" if sqrt else "scale", x, axes, compute, out_dtype,
                   center=mean, divisor=max(count - correction, 0))


def logsumexp(ctx: Context, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
              ) -> View:
    """``log(sum(exp(x)))`` over ``axes``, computed around each row's max (no overflow).

    Example:
        >>> logsumexp(ctx, x, (1,), cube.float32, cube.float32)  # doctest: +SKIP
    """
    axes = check_axes(x, axes)
    peak = _reduce(ctx, "max", "scale", x, axes, compute, compute)
    return _reduce(ctx, "sumexp", "lse", x, axes, compute, out_dtype, center=peak)


def max_and_exp_sum(ctx: Context, x: View, axes: Sequence[int], compute: DType
                    ) -> tuple[View, View]:
    """Each row's max over ``axes`` and the sum of ``exp(x - max)`` (taken around 0 where the
    max is infinite), both in ``compute``: a softmax's shift and denominator, summed as any
    sum is (rows split over cubes, their partial sums added as a tree).

    Example:
        >>> peak, total = max_and_exp_sum(ctx, x, (0,), cube.float32)  # doctest: +SKIP
    """
    axes = check_axes(x, axes)
    peak = _reduce(ctx, "max", "scale", x, axes, compute, compute)
    return peak, _reduce(ctx, "sumexp", "scale", x, axes, compute, compute, center=peak)


def _arg_rows(ctx: Context, op: str, problem: RowProblem, out: View,
              part_index: View | None) -> None:
    """``op`` over every row of ``problem`` into ``out``; ``part_index`` holds the indices
    of the values in ``problem.x`` when those are the best values of a split launch."""
    x, rows, cols = problem.x, problem.rows, problem.cols
    how = plan(ctx, problem, cols.numel if part_index is not None else None)
    value_dtype = register(x.dtype)
    values, indices = out, out
    if how.splits > 1:
        values = ctx.new((rows.numel, how.splits), value_dtype)
        indices = ctx.new((rows.numel, how.splits), cube.int32)
    arg_kernel[how.grid](
        x.storage, x.offset, *rows.args(0), *rows.dim_args, rows.numel,
        *cols.args(0), *cols.dim_args, cols.numel, how.chunk,
        (x if part_index is None else part_index).storage, values.storage, indices.storage,
        scalar(identity(op, value_dtype), value_dtype), OP=op, VT=value_dtype,
        IT=indices.dtype, PARTIALS=part_index is not None, SPLIT=how.splits > 1,
        ROW_RANK=rows.rank, COL_RANK=cols.rank, ROWS=how.tile_rows, BLOCK=how.block,
        target=ctx.target, **launch_options(ctx, how.tile_rows * how.block))
    if how.splits > 1:
        _arg_rows(ctx, op, row_problem(ctx, values, (1,)), out, indices)


def argreduce(ctx: Context, op: str, x: View, axes: Sequence[int], out_dtype: DType) -> View:
    """The index of the first largest (``argmax``) or smallest (``argmin``) element over
    ``axes``: one axis, or every axis for an index into the row-major flattened ``x``.

    Example:
        >>> argreduce(ctx, "argmax", x, (1,), cube.int64)  # doctest: +SKIP
    """
    if op not in ARG_OPS:
        raise ValueError(f"unknown arg reduction {op!r}; ops: {', '.join(ARG_OPS)}")
    axes = check_axes(x, axes)
    out = ctx.new(tuple(n for a, n in enumerate(x.shape) if a not in axes), out_dtype)
    if out.numel:
        _arg_rows(ctx, op, row_problem(ctx, x, axes), out, None)
    return out
