"""Scans: ``cumsum`` and ``cumprod`` along one axis.

The other axes index ``n_rows`` rows (collapsed as in ``reduce``). ``cumsum`` scans
``(ROWS, BLOCK)`` tiles with the language's ``cumsum``, carrying each row's running total
from one tile to the next (tall tiles when the rows are the contiguous axis). On the cpu the
tiles have one lane axis, ``(1, BLOCK)`` or ``(ROWS, 1)`` (``rows.lane_tile_shape``), which its
backend runs as lane loops: a running sum along a row, or one per lane down tall rows. ``cumprod``
has no builtin scan: one lane per row walks its row sequentially (``ROWS`` rows per cube),
which reads coalesced when the rows are the contiguous axis and through the cache otherwise.

Few long rows are split over cubes in three launches: the total of every chunk of columns
(``reduce.chunk_totals``), an inclusive scan of those totals, then the scan of each chunk
starting from the previous chunk's running total.

Results are contiguous in the input's shape; integer and bool inputs accumulate in the
caller's ``compute`` dtype (int64 in burn), 16-bit floats in float32.

Example:
    >>> y = scan(ctx, "cumsum", x, 1, cube.float32, cube.float32)  # doctest: +SKIP
"""

from __future__ import annotations

import math

import cubepy as cube
from cubepy.ir.dtypes import DType

from .layout import Context, View, scalar
from .reduce import chunk_end, chunk_totals
from .rows import (
    CPU_TARGET_CUBES,
    AxisRows,
    axis_rows,
    lane_splits,
    lane_tile_shape,
    launch_options,
    pow2,
    row_problem,
    split_columns,
    tile_shape,
)
from .strided import cube_rows

SCAN_OPS = ("cumsum", "cumprod")
# cumprod: rows per cube, and the columns a cube walks at least before a row is split.
SEQUENTIAL_ROWS = 256
SEQUENTIAL_STEPS = 16


@cube.func
def carry_in(carries, rows, row_ok, ident, AT, CARRY, ROWS):
    # The running total a row starts this cube's chunk from: the inclusive scan of the
    # chunk totals at the previous chunk.
    carry = cube.zeros((ROWS,), AT) + ident
    if CARRY:
        split = cube.cube_pos(1)
        carry = cube.load(carries + rows * cube.cube_count(1) + split - 1,
                          mask=row_ok & (split > 0), other=ident).to(AT)
    return carry


@cube.kernel
def cumsum_kernel(x, xo, xs0, xs1, xs2, xs3, os0, os1, os2, os3, rd1, rd2, rd3, n_rows,
                  x_step, out_step, n_cols, chunk, carries, out, ident,
                  AT: cube.Comptime[object], DT: cube.Comptime[object],
                  CARRY: cube.Comptime[bool], ROW_RANK: cube.Comptime[int],
                  CONTIG: cube.Comptime[bool], ROWS: cube.Comptime[int],
                  BLOCK: cube.Comptime[int]):
    rows, row_ok, x_base, out_base = cube_rows(ROWS, n_rows, xo, ROW_RANK, rd1, rd2, rd3,
                                               xs0, xs1, xs2, xs3, os0, os1, os2, os3)
    begin = cube.cube_pos(1) * chunk
    end = chunk_end(begin, chunk, n_cols)
    carry = carry_in(carries, rows, row_ok, ident, AT, CARRY, ROWS)
    local = cube.arange(0, BLOCK)
    for start in range(begin, end, BLOCK):
        cols = start + local
        m = row_ok[:, None] & (cols < end)[None, :]
        if CONTIG:
            x_offs = cols
            out_offs = cols
        else:
            x_offs = cols * x_step
            out_offs = cols * out_step
        v = cube.load(x + x_base[:, None] + x_offs[None, :], mask=m, other=0).to(AT)
        s = cube.cumsum(cube.where(m, v, 0), axis=1) + carry[:, None]
        cube.store(out + out_base[:, None] + out_offs[None, :], s.to(DT), mask=m)
        carry = cube.sum(cube.where(local[None, :] == BLOCK - 1, s, 0), axis=1)


@cube.kernel
def cumprod_kernel(x, xo, xs0, xs1, xs2, xs3, os0, os1, os2, os3, rd1, rd2, rd3, n_rows,
                   x_step, out_step, n_cols, chunk, carries, out, ident,
                   AT: cube.Comptime[object], DT: cube.Comptime[object],
                   CARRY: cube.Comptime[bool], ROW_RANK: cube.Comptime[int],
                   ROWS: cube.Comptime[int]):
    rows, row_ok, x_base, out_base = cube_rows(ROWS, n_rows, xo, ROW_RANK, rd1, rd2, rd3,
                                               xs0, xs1, xs2, xs3, os0, os1, os2, os3)
    begin = cube.cube_pos(1) * chunk
    end = chunk_end(begin, chunk, n_cols)
    carry = carry_in(carries, rows, row_ok, ident, AT, CARRY, ROWS)
    for col in range(begin, end):
        carry = carry * cube.load(x + x_base + col * x_step, mask=row_ok, other=1).to(AT)
        cube.store(out + out_base + col * out_step, carry.to(DT), mask=row_ok)


def scan(ctx: Context, op: str, x: View, axis: int, compute: DType, out_dtype: DType
         ) -> View:
    """The inclusive ``cumsum`` or ``cumprod`` of ``x`` along ``axis``, accumulated in
    ``compute``, as a contiguous view of ``x``'s shape in ``out_dtype``.

    Example:
        >>> scan(ctx, "cumprod", x, 0, cube.int64, cube.int64)  # doctest: +SKIP
    """
    if op not in SCAN_OPS:
        raise ValueError(f"unknown scan {op!r}; ops: {', '.join(SCAN_OPS)}")
    out = ctx.new(x.shape, out_dtype)
    if out.numel:
        layout = axis_rows(ctx, x, out, (axis,))
        if op == "cumsum":
            _cumsum(ctx, layout, axis, compute, out)
        else:
            _cumprod(ctx, layout, axis, compute, out)
    return out


def _carries(ctx: Context, op: str, layout: AxisRows, axis: int, compute: DType, splits: int,
             chunk: int) -> View:
    """Where each chunk of a split row starts from: the inclusive scan of chunk totals (any
    array when the rows are not split)."""
    if splits == 1:
        return layout.x
    total = "sum" if op == "cumsum" else "prod"
    totals = chunk_totals(ctx, total, row_problem(ctx, layout.x, (axis,)), compute, chunk)
    return scan(ctx, op, totals, 1, compute, compute)


def _cumsum(ctx: Context, layout: AxisRows, axis: int, compute: DType, out: View) -> None:
    x, rows, n_cols = layout.x, layout.rows, layout.n_cols
    tall = rows.rank == 0 and not layout.contig
    if ctx.target.startswith("cpu"):  # one lane axis: the backend's fused lane loops
        tile_rows, block = lane_tile_shape(rows.numel, n_cols, tall)
        splits, chunk = _lane_scan_splits(math.ceil(rows.numel / tile_rows), n_cols, block)
    else:
        tile_rows, block = tile_shape(ctx, rows.numel, n_cols, tall)
        splits, chunk = split_columns(math.ceil(rows.numel / tile_rows), n_cols, block)
    carries = _carries(ctx, "cumsum", layout, axis, compute, splits, chunk)
    cumsum_kernel[(math.ceil(rows.numel / tile_rows), splits)](
        x.storage, x.offset, *rows.args(0), *rows.args(1), *rows.dim_args, rows.numel,
        layout.x_step, layout.out_step, n_cols, chunk, carries.storage, out.storage,
        scalar(0, compute), AT=compute, DT=out.dtype, CARRY=splits > 1, ROW_RANK=rows.rank,
        CONTIG=layout.contig, ROWS=tile_rows, BLOCK=block, target=ctx.target,
        **launch_options(ctx, tile_rows * block))


def _lane_scan_splits(row_tiles: int, n_cols: int, block: int) -> tuple[int, int]:
    """``lane_splits`` for a scan: a lane loop adds its row's values in order however long the
    row, so a row is split (three launches, two passes over it) only to give idle cores work."""
    if row_tiles >= CPU_TARGET_CUBES:
        return 1, max(n_cols, 1)
    return lane_splits(row_tiles, n_cols, block)


def _cumprod(ctx: Context, layout: AxisRows, axis: int, compute: DType, out: View) -> None:
    x, rows, n_cols = layout.x, layout.rows, layout.n_cols
    tile_rows = min(max(pow2(rows.numel), 16), SEQUENTIAL_ROWS)
    splits, chunk = split_columns(math.ceil(rows.numel / tile_rows), n_cols, SEQUENTIAL_STEPS)
    carries = _carries(ctx, "cumprod", layout, axis, compute, splits, chunk)
    cumprod_kernel[(math.ceil(rows.numel / tile_rows), splits)](
        x.storage, x.offset, *rows.args(0), *rows.args(1), *rows.dim_args, rows.numel,
        layout.x_step, layout.out_step, n_cols, chunk, carries.storage, out.storage,
        scalar(1, compute), AT=compute, DT=out.dtype, CARRY=splits > 1, ROW_RANK=rows.rank,
        ROWS=tile_rows, target=ctx.target)
