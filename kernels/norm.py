"""``layer_norm`` and ``rms_norm`` over the last ``k`` axes, with optional weight and bias.

The normalized axes collapse into one row per index of the leading axes (a layout where they
do not collapse is copied first). A row that fits one tile (``softmax.single_pass_limit``) is
read once: its statistics and the result come from registers, several short rows per cube.
Longer rows are read tile by tile: the sum (layer norm: then the sum of squared deviations
from the mean, two-pass for accuracy), then the result.

Statistics are computed in ``compute`` (float32 for 16-bit floats); weight and bias may be
any float dtype and are read as ``compute``.

Example:
    >>> y = layer_norm(ctx, x, 1, w, b, 1e-5, cube.float32, cube.float32)  # doctest: +SKIP
"""

from __future__ import annotations

import math

import cubepy as cube
from cubepy.ir.dtypes import DType

from . import elementwise
from .layout import Context, View, scalar
from .rows import axis_rows, launch_options, pow2, rows_per_tile, tile_elements
from .softmax import row_offsets, single_pass_limit
from .strided import cube_rows


@cube.func
def affine(y, w, wo, b, bo, cols, cm, HAS_W, HAS_B, CT):
    # y * weight + bias, each loaded once per tile and broadcast over its rows
    if HAS_W:
        y = y * cube.load(w + wo + cols, mask=cm, other=0).to(CT)[None, :]
    if HAS_B:
        y = y + cube.load(b + bo + cols, mask=cm, other=0).to(CT)[None, :]
    return y


@cube.func
def centered_tile(v, m, n_cols, RMS):
    # each row of a (ROWS, BLOCK) tile minus its mean (rms_norm: as it is), masked entries 0
    if RMS:
        d = v
    else:
        d = cube.where(m, v - (cube.sum(v, axis=1) / n_cols)[:, None], 0.0)
    return d


@cube.func
def normalize_tile(v, m, n_cols, eps, RMS):
    # each row of a (ROWS, BLOCK) tile over its statistics (masked entries left out)
    d = centered_tile(v, m, n_cols, RMS)
    rstd = cube.rsqrt(cube.sum(d * d, axis=1) / n_cols + eps)
    return d * rstd[:, None]


@cube.kernel
def norm_row_kernel(x, xo, xs0, xs1, xs2, xs3, os0, os1, os2, os3, rd1, rd2, rd3, n_rows,
                    x_step, n_cols, w, wo, b, bo, out, eps, RMS: cube.Comptime[bool],
                    HAS_W: cube.Comptime[bool], HAS_B: cube.Comptime[bool],
                    CT: cube.Comptime[object], DT: cube.Comptime[object],
                    ROW_RANK: cube.Comptime[int], CONTIG: cube.Comptime[bool],
                    ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    rows, row_ok, x_base, out_base = cube_rows(ROWS, n_rows, xo, ROW_RANK, rd1, rd2, rd3,
                                               xs0, xs1, xs2, xs3, os0, os1, os2, os3)
    cols = cube.arange(0, BLOCK)
    cm = cols < n_cols
    m = row_ok[:, None] & cm[None, :]
    v = cube.load(x + x_base[:, None] + row_offsets(cols, x_step, CONTIG)[None, :], mask=m,
                  other=0).to(CT)
    y = affine(normalize_tile(v, m, n_cols, eps, RMS), w, wo, b, bo, cols, cm, HAS_W, HAS_B,
               CT)
    cube.store(out + out_base[:, None] + cols[None, :], y.to(DT), mask=m)


@cube.kernel
def norm_dense_kernel(x, xo, out, n_rows, n_cols, w, wo, b, bo, eps, RMS: cube.Comptime[bool],
                      HAS_W: cube.Comptime[bool], HAS_B: cube.Comptime[bool],
                      CT: cube.Comptime[object], DT: cube.Comptime[object],
                      ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    # rows stored one after the other: half the arguments of norm_row_kernel (on a GPU the
    # host cost of a launch grows with them)
    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)
    cols = cube.arange(0, BLOCK)
    cm = cols < n_cols
    m = (rows < n_rows)[:, None] & cm[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    v = cube.load(x + xo + offs, mask=m, other=0).to(CT)
    y = affine(normalize_tile(v, m, n_cols, eps, RMS), w, wo, b, bo, cols, cm, HAS_W, HAS_B,
               CT)
    cube.store(out + offs, y.to(DT), mask=m)


@cube.kernel
def norm_loop_kernel(x, xo, xs0, xs1, xs2, xs3, os0, os1, os2, os3, rd1, rd2, rd3, n_rows,
                     x_step, n_cols, w, wo, b, bo, out, eps, RMS: cube.Comptime[bool],
                     HAS_W: cube.Comptime[bool], HAS_B: cube.Comptime[bool],
                     CT: cube.Comptime[object], DT: cube.Comptime[object],
                     ROW_RANK: cube.Comptime[int], CONTIG: cube.Comptime[bool],
                     ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    rows, row_ok, x_base, out_base = cube_rows(ROWS, n_rows, xo, ROW_RANK, rd1, rd2, rd3,
                                               xs0, xs1, xs2, xs3, os0, os1, os2, os3)
    center = cube.zeros((ROWS,), CT)
    if not RMS:  # pass 1 of the layer norm: the mean
        acc = cube.zeros((ROWS, BLOCK), CT)
        for start in range(0, n_cols, BLOCK):
            cols = start + cube.arange(0, BLOCK)
            m = row_ok[:, None] & (cols < n_cols)[None, :]
            offs = x_base[:, None] + row_offsets(cols, x_step, CONTIG)[None, :]
            acc = acc + cube.load(x + offs, mask=m, other=0).to(CT)
        center = cube.sum(acc, axis=1) / n_cols
    squares = cube.zeros((ROWS, BLOCK), CT)
    for start in range(0, n_cols, BLOCK):
        cols = start + cube.arange(0, BLOCK)
        m = row_ok[:, None] & (cols < n_cols)[None, :]
        v = cube.load(x + x_base[:, None] + row_offsets(cols, x_step, CONTIG)[None, :], mask=m,
                      other=0).to(CT)
        d = cube.where(m, v - center[:, None], 0.0)
        squares = squares + d * d
    rstd = cube.rsqrt(cube.sum(squares, axis=1) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + cube.arange(0, BLOCK)
        cm = cols < n_cols
        m = row_ok[:, None] & cm[None, :]
        v = cube.load(x + x_base[:, None] + row_offsets(cols, x_step, CONTIG)[None, :], mask=m,
                      other=0).to(CT)
        y = affine((v - center[:, None]) * rstd[:, None], w, wo, b, bo, cols, cm, HAS_W, HAS_B,
                   CT)
        cube.store(out + out_base[:, None] + cols[None, :], y.to(DT), mask=m)


def _normalize(ctx: Context, rms: bool, x: View, k: int, weight: View | None,
               bias: View | None, eps: float, compute: DType, out_dtype: DType) -> View:
    out = ctx.new(x.shape, out_dtype)
    if out.numel == 0:
        return out
    weight, bias = elementwise.contiguous(ctx, weight), elementwise.contiguous(ctx, bias)
    w = x if weight is None else weight  # an unused argument still needs an array
    b = x if bias is None else bias
    flags = {"RMS": rms, "HAS_W": weight is not None, "HAS_B": bias is not None, "CT": compute,
             "DT": out_dtype, "target": ctx.target}
    n_cols = math.prod(x.shape[x.ndim - k:])
    if x.is_contiguous and pow2(n_cols) <= single_pass_limit(ctx):
        # the common case straight to its kernel: no layout analysis on the host path
        block = max(pow2(n_cols), 16)
        tile_rows = rows_per_tile(ctx, block)
        n_rows = out.numel // n_cols
        norm_dense_kernel[(math.ceil(n_rows / tile_rows),)](
            x.storage, x.offset, out.storage, n_rows, n_cols, w.storage, w.offset,
            b.storage, b.offset, scalar(eps, compute), ROWS=tile_rows, BLOCK=block, **flags,
            **launch_options(ctx, tile_rows * block))
        return out
    layout = axis_rows(ctx, x, out, tuple(range(x.ndim - k, x.ndim)))
    x, rows, n_cols = layout.x, layout.rows, layout.n_cols
    if pow2(n_cols) <= single_pass_limit(ctx):
        kernel, block = norm_row_kernel, max(pow2(n_cols), 16)
    else:
        kernel, block = norm_loop_kernel, tile_elements(ctx)
    tile_rows = rows_per_tile(ctx, block)
    kernel[(math.ceil(rows.numel / tile_rows),)](
        x.storage, x.offset, *rows.args(0), *rows.args(1), *rows.dim_args, rows.numel,
        layout.x_step, n_cols, w.storage, w.offset, b.storage, b.offset, out.storage,
        scalar(eps, compute), ROW_RANK=rows.rank, CONTIG=layout.contig, ROWS=tile_rows,
        BLOCK=block, **flags, **launch_options(ctx, tile_rows * block))
    return out


def layer_norm(ctx: Context, x: View, k: int, weight: View | None, bias: View | None,
               eps: float, compute: DType, out_dtype: DType) -> View:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last ``k`` axes (biased
    variance); ``weight`` and ``bias`` have those axes' shape, or are None.

    Example:
        >>> layer_norm(ctx, x, 1, None, None, 1e-5, cube.float32, cube.float32)  # doctest: +SKIP
    """
    return _normalize(ctx, False, x, k, weight, bias, eps, compute, out_dtype)


def rms_norm(ctx: Context, x: View, k: int, weight: View | None, eps: float, compute: DType,
             out_dtype: DType) -> View:
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last ``k`` axes.

    Example:
        >>> rms_norm(ctx, x, 1, w, 1e-6, cube.float32, cube.float16)  # doctest: +SKIP
    """
    return _normalize(ctx, True, x, k, weight, None, eps, compute, out_dtype)
