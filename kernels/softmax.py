"""``softmax`` and ``log_softmax`` along one axis.

The other axes index rows (collapsed as in ``reduce``). A row that fits one tile (up to
``single_pass_limit`` elements: 16384 on Triton and the CPU, 1024 on WGSL) is read once:
max, exponentials, their sum and the result come from registers, several short rows per
cube. Longer rows take two passes: an online max and rescaled sum over the row's tiles,
then the result tile by tile. Contiguous rows are addressed as ``row_base + arange``; a
strided axis with contiguous rows (softmax over axis 0) uses tall tiles of many rows. On the
cpu, whose tiles have one lane axis, those rows (longer than a tile, or tall) take their max
and sum of exponentials from the reductions (``reduce.max_and_exp_sum``), then one pass.

16-bit floats compute in float32; the result is contiguous, of the input's shape.

Example:
    >>> y = softmax(ctx, x, 1, False, cube.float32, cube.bfloat16)  # doctest: +SKIP
"""

from __future__ import annotations

import math

import cubepy as cube
from cubepy.ir.dtypes import DType

from .layout import Context, View
from .reduce import finite_or_zero, max_and_exp_sum
from .rows import axis_rows, lane_tile_shape, launch_options, pow2, rows_per_tile, tile_shape
from .strided import cube_rows

SINGLE_PASS_LIMIT = {"wgsl": 1024}
DEFAULT_SINGLE_PASS_LIMIT = 16384


def single_pass_limit(ctx: Context) -> int:
    """The longest row a cube holds in one tile on ``ctx``'s target."""
    return SINGLE_PASS_LIMIT.get(ctx.target, DEFAULT_SINGLE_PASS_LIMIT)


@cube.func
def row_offsets(cols, step, CONTIG):
    if CONTIG:
        offs = cols
    else:
        offs = cols * step
    return offs


@cube.func
def softmax_tile(v, m, LOG):
    # each row of a (ROWS, BLOCK) tile; masked entries count as -inf
    v = cube.where(m, v, float("-inf"))
    shifted = v - cube.max(v, axis=1)[:, None]
    e = cube.exp(shifted)
    total = cube.sum(e, axis=1)
    if LOG:
        r = shifted - cube.log(total)[:, None]
    else:
        r = e / total[:, None]
    return r


@cube.func
def write_softmax(x, x_base, x_step, out, out_base, out_step, row_ok, n_cols, peak, total,
                  LOG, CT, DT, CONTIG, BLOCK):
    # rows from their max and their sum of exp(x - max), tile after tile
    log_total = cube.log(total)
    for start in range(0, n_cols, BLOCK):
        cols = start + cube.arange(0, BLOCK)
        m = row_ok[:, None] & (cols < n_cols)[None, :]
        v = cube.load(x + x_base[:, None] + row_offsets(cols, x_step, CONTIG)[None, :],
                      mask=m, other=0).to(CT)
        shifted = v - peak[:, None]
        if LOG:
            r = shifted - log_total[:, None]
        else:
            r = cube.exp(shifted) / total[:, None]
        cube.store(out + out_base[:, None] + row_offsets(cols, out_step, CONTIG)[None, :],
                   r.to(DT), mask=m)


@cube.kernel
def softmax_row_kernel(x, xo, xs0, xs1, xs2, xs3, os0, os1, os2, os3, rd1, rd2, rd3, n_rows,
                       x_step, out_step, n_cols, out, LOG: cube.Comptime[bool],
                       CT: cube.Comptime[object], DT: cube.Comptime[object],
                       ROW_RANK: cube.Comptime[int], CONTIG: cube.Comptime[bool],
                       ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    rows, row_ok, x_base, out_base = cube_rows(ROWS, n_rows, xo, ROW_RANK, rd1, rd2, rd3,
                                               xs0, xs1, xs2, xs3, os0, os1, os2, os3)
    cols = cube.arange(0, BLOCK)
    m = row_ok[:, None] & (cols < n_cols)[None, :]
    v = cube.load(x + x_base[:, None] + row_offsets(cols, x_step, CONTIG)[None, :], mask=m,
                  other=0).to(CT)
    cube.store(out + out_base[:, None] + row_offsets(cols, out_step, CONTIG)[None, :],
               softmax_tile(v, m, LOG).to(DT), mask=m)


@cube.kernel
def softmax_dense_kernel(x, xo, out, n_rows, n_cols, LOG: cube.Comptime[bool],
                         CT: cube.Comptime[object], DT: cube.Comptime[object],
                         ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    # rows stored one after the other: five arguments instead of twenty (on a GPU the host
    # cost of a launch grows with them, and a softmax of 8192 rows takes ~70 us)
    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)
    cols = cube.arange(0, BLOCK)
    m = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    v = cube.load(x + xo + offs, mask=m, other=0).to(CT)
    cube.store(out + offs, softmax_tile(v, m, LOG).to(DT), mask=m)


@cube.kernel
def softmax_loop_kernel(x, xo, xs0, xs1, xs2, xs3, os0, os1, os2, os3, rd1, rd2, rd3, n_rows,
                        x_step, out_step, n_cols, out, LOG: cube.Comptime[bool],
                        CT: cube.Comptime[object], DT: cube.Comptime[object],
                        ROW_RANK: cube.Comptime[int], CONTIG: cube.Comptime[bool],
                        ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    rows, row_ok, x_base, out_base = cube_rows(ROWS, n_rows, xo, ROW_RANK, rd1, rd2, rd3,
                                               xs0, xs1, xs2, xs3, os0, os1, os2, os3)
    # pass 1: the running max, and the sum of exponentials rescaled whenever it grows
    peak = cube.zeros((ROWS,), CT) + float("-inf")
    total = cube.zeros((ROWS,), CT)
    for start in range(0, n_cols, BLOCK):
        cols = start + cube.arange(0, BLOCK)
        m = row_ok[:, None] & (cols < n_cols)[None, :]
        v = cube.load(x + x_base[:, None] + row_offsets(cols, x_step, CONTIG)[None, :],
                      mask=m, other=0).to(CT)
        v = cube.where(m, v, float("-inf"))
        new_peak = cube.maximum(peak, cube.max(v, axis=1))
        shift = finite_or_zero(new_peak)
        total = total * cube.exp(peak - shift) + cube.sum(cube.exp(v - shift[:, None]), axis=1)
        peak = new_peak
    # pass 2: the result
    write_softmax(x, x_base, x_step, out, out_base, out_step, row_ok, n_cols, peak, total,
                  LOG, CT, DT, CONTIG, BLOCK)


@cube.kernel
def softmax_scale_kernel(x, xo, xs0, xs1, xs2, xs3, os0, os1, os2, os3, rd1, rd2, rd3, n_rows,
                         x_step, out_step, n_cols, peak, total, out, LOG: cube.Comptime[bool],
                         CT: cube.Comptime[object], DT: cube.Comptime[object],
                         ROW_RANK: cube.Comptime[int], CONTIG: cube.Comptime[bool],
                         ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    # the result from each row's max and sum of exponentials, reduced beforehand
    rows, row_ok, x_base, out_base = cube_rows(ROWS, n_rows, xo, ROW_RANK, rd1, rd2, rd3,
                                               xs0, xs1, xs2, xs3, os0, os1, os2, os3)
    write_softmax(x, x_base, x_step, out, out_base, out_step, row_ok, n_cols,
                  cube.load(peak + rows, mask=row_ok, other=0),
                  cube.load(total + rows, mask=row_ok, other=1), LOG, CT, DT, CONTIG, BLOCK)


def softmax(ctx: Context, x: View, axis: int, log: bool, compute: DType, out_dtype: DType
            ) -> View:
    """``softmax`` (or with ``log`` ``log_softmax``) of ``x`` along ``axis``, computed in
    ``compute`` (float32 or float64), as a contiguous view of ``x``'s shape.

    Example:
        >>> softmax(ctx, x, -1 % x.ndim, False, cube.float32, cube.float32)  # doctest: +SKIP
    """
    out = ctx.new(x.shape, out_dtype)
    if out.numel == 0:
        return out
    n_cols = x.shape[axis]
    if axis == x.ndim - 1 and x.is_contiguous and pow2(n_cols) <= single_pass_limit(ctx):
        # the common case straight to its kernel: no layout analysis on the host path
        block = max(pow2(n_cols), 16)
        tile_rows = rows_per_tile(ctx, block)
        n_rows = out.numel // n_cols
        softmax_dense_kernel[(math.ceil(n_rows / tile_rows),)](
            x.storage, x.offset, out.storage, n_rows, n_cols, LOG=log, CT=compute,
            DT=out_dtype, ROWS=tile_rows, BLOCK=block, target=ctx.target,
            **launch_options(ctx, tile_rows * block))
        return out
    layout = axis_rows(ctx, x, out, (axis,))
    rows, n_cols, x = layout.rows, layout.n_cols, layout.x
    tall = rows.rank == 0 and not layout.contig
    lanes = ctx.target.startswith("cpu")
    if lanes:
        tile_rows, block = lane_tile_shape(rows.numel, n_cols, tall)
    else:
        tile_rows, block = tile_shape(ctx, rows.numel, n_cols, tall)
    single = block >= n_cols
    if not tall and pow2(n_cols) <= single_pass_limit(ctx):
        block = max(pow2(n_cols), 16)
        tile_rows, single = rows_per_tile(ctx, block), True
    kernel, sums = softmax_row_kernel if single else softmax_loop_kernel, []
    if lanes and not single:
        # Rows longer than a tile, and tall tiles (one column a step), reduce their max and
        # exponentials first, as a max and a sum are (a lane of a tall tile adding its row's
        # exponentials in one running sum left float32 softmax over axis 0 10x further off
        # NumPy's; the online max and its rescaling cost a second exp per element)
        sums = [view.storage for view in max_and_exp_sum(ctx, x, (axis,), compute)]
        kernel = softmax_scale_kernel
    kernel[(math.ceil(rows.numel / tile_rows),)](
        x.storage, x.offset, *rows.args(0), *rows.args(1), *rows.dim_args, rows.numel,
        layout.x_step, layout.out_step, n_cols, *sums, out.storage, LOG=log, CT=compute,
        DT=out_dtype, ROW_RANK=rows.rank, CONTIG=layout.contig, ROWS=tile_rows, BLOCK=block,
        target=ctx.target, **launch_options(ctx, tile_rows * block))
    return out
