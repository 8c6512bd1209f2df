"""The backward pass of ``layer_norm`` and ``rms_norm`` in two or three launches.

With ``n = (x - mean) * rstd`` (``rms_norm``: ``x * rstd``) over the last ``k`` axes, the
output gradient ``g`` and ``gy = g * weight``, the input's gradient is

    dx = rstd * (gy - mean(gy) - n * mean(gy * n))        (rms_norm: no ``mean(gy)`` term)

and the weight's and bias's are ``g * n`` and ``g`` summed over the leading axes. Composed of
tensor ops these take about fifteen launches and as many full-size temporaries.

Rows that fit one tile (``softmax.single_pass_limit``): one kernel reads ``x`` and ``g``
once, recomputes the statistics, writes ``dx`` and adds its rows' ``g * n`` and ``g`` into a
partial row per cube, held in registers. A launch has at most ``grad_cubes`` cubes, each
looping over row tiles, so the partial sums stay small next to ``x``. Longer rows: a kernel
per row tile reads them tile by tile (mean, variance, the row sums of ``gy`` and ``gy * n``,
then ``dx``) and keeps each row's mean and rstd; a second kernel sums ``g * n`` and ``g``
down blocks of columns from those. Either way ``kernels.reduce`` adds the partial sums up.

Example:
    >>> grads = norm_backward(ctx, x, 1, w, g, 1e-5, False, True, cube.float32)  # doctest: +SKIP
"""

from __future__ import annotations

import math

import cubepy as cube
from cubepy.ir.dtypes import DType

from . import creation, elementwise, reduce
from .layout import Context, View, contiguous_strides, scalar
from .norm import centered_tile
from .rows import (
    CPU_LANES,
    CPU_TARGET_CUBES,
    TARGET_CUBES,
    launch_options,
    pow2,
    rows_per_tile,
    tile_elements,
)
from .softmax import single_pass_limit

# Cubes of one launch per multiprocessor of a CUDA GPU or per CPU core (cube.concurrent_cubes):
# enough to keep the device busy, few enough that the partial sums of the weight's and bias's
# gradients ((2, cubes, row length) floats) stay small next to x. wgpu does not tell how many
# compute units its device has: a fixed count there.
CUBES_PER_UNIT = 4
WGSL_GRAD_CUBES = 256
# Columns of one cube of norm_param_grad_kernel (long rows) on the GPU targets: rows of 256
# contiguous values keep its loads coalesced and leave thousands of cubes for wide rows.
PARAM_BLOCK = 256


@cube.func
def weighted(gv, w, wo, cols, cm, HAS_W, CT):
    # g * weight, the weight loaded once per chunk of columns and broadcast over its rows
    if HAS_W:
        gv = gv * cube.load(w + wo + cols, mask=cm, other=0).to(CT)[None, :]
    return gv


@cube.func
def input_grad(gy, n, rstd, n_cols, RMS):
    # rstd * (gy - mean(gy) - n * mean(gy * n)) per row of a tile (masked entries are 0)
    d = gy - n * (cube.sum(gy * n, axis=1) / n_cols)[:, None]
    if not RMS:
        d = d - (cube.sum(gy, axis=1) / n_cols)[:, None]
    return d * rstd[:, None]


@cube.kernel
def norm_grad_tile_kernel(x, xo, g, go, dx, part, n_rows, n_cols, n_tiles, w, wo, eps,
                          RMS: cube.Comptime[bool], HAS_W: cube.Comptime[bool],
                          PARAMS: cube.Comptime[bool], CT: cube.Comptime[object],
                          DT: cube.Comptime[object], ROWS: cube.Comptime[int],
                          BLOCK: cube.Comptime[int]):
    # rows that fit one tile: statistics and gradients from registers; the cube's share of
    # the parameters' gradients accumulates in registers across its row tiles
    cols = cube.arange(0, BLOCK)
    cm = cols < n_cols
    # the weight, read once for all the cube's tiles (its loads could alias dx's stores, so
    # a compiler may not hoist them itself)
    scale = cube.zeros((BLOCK,), CT) + 1.0
    if HAS_W:
        scale = cube.load(w + wo + cols, mask=cm, other=0).to(CT)
    sum_gn = cube.zeros((BLOCK,), CT)
    sum_g = cube.zeros((BLOCK,), CT)
    for tile in range(cube.cube_pos(0), n_tiles, cube.cube_count(0)):
        rows = tile * ROWS + cube.arange(0, ROWS)
        m = (rows < n_rows)[:, None] & cm[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        v = cube.load(x + xo + offs, mask=m, other=0).to(CT)
        gv = cube.load(g + go + offs, mask=m, other=0).to(CT)
        d = centered_tile(v, m, n_cols, RMS)
        rstd = cube.rsqrt(cube.sum(d * d, axis=1) / n_cols + eps)
        n = d * rstd[:, None]
        gy = gv * scale[None, :]
        cube.store(dx + offs, input_grad(gy, n, rstd, n_cols, RMS).to(DT), mask=m)
        if PARAMS:
            sum_gn = sum_gn + cube.sum(gv * n, axis=0)
            sum_g = sum_g + cube.sum(gv, axis=0)
    if PARAMS:
        pid = cube.cube_pos(0)
        cube.store(part + pid * n_cols + cols, sum_gn, mask=cm)
        if not RMS:
            cube.store(part + (cube.cube_count(0) + pid) * n_cols + cols, sum_g, mask=cm)


@cube.func
def row_center(x, xo, rows, row_ok, n_cols, CT, ROWS, BLOCK, RMS):
    # the mean of each row, read tile by tile (rms_norm: 0)
    center = cube.zeros((ROWS,), CT)
    if not RMS:
        acc = cube.zeros((ROWS, BLOCK), CT)
        for start in range(0, n_cols, BLOCK):
            cols = start + cube.arange(0, BLOCK)
            m = row_ok[:, None] & (cols < n_cols)[None, :]
            acc = acc + cube.load(x + xo + rows[:, None] * n_cols + cols[None, :], mask=m,
                                  other=0).to(CT)
        center = cube.sum(acc, axis=1) / n_cols
    return center


@cube.kernel
def norm_grad_loop_kernel(x, xo, g, go, dx, stats, n_rows, n_cols, w, wo, eps,
                          RMS: cube.Comptime[bool], HAS_W: cube.Comptime[bool],
                          PARAMS: cube.Comptime[bool], CT: cube.Comptime[object],
                          DT: cube.Comptime[object], ROWS: cube.Comptime[int],
                          BLOCK: cube.Comptime[int]):
    # rows longer than a tile: the mean, the variance (two passes, for accuracy), the row
    # sums of gy and gy * n, then dx; with PARAMS each row's mean and rstd for
    # norm_param_grad_kernel
    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)
    row_ok = rows < n_rows
    base = rows[:, None] * n_cols
    center = row_center(x, xo, rows, row_ok, n_cols, CT, ROWS, BLOCK, RMS)
    squares = cube.zeros((ROWS, BLOCK), CT)
    for start in range(0, n_cols, BLOCK):
        cols = start + cube.arange(0, BLOCK)
        m = row_ok[:, None] & (cols < n_cols)[None, :]
        v = cube.load(x + xo + base + cols[None, :], mask=m, other=0).to(CT)
        d = cube.where(m, v - center[:, None], 0.0)
        squares = squares + d * d
    rstd = cube.rsqrt(cube.sum(squares, axis=1) / n_cols + eps)
    if PARAMS:
        cube.store(stats + rows, center, mask=row_ok)
        cube.store(stats + n_rows + rows, rstd, mask=row_ok)
    dot = cube.zeros((ROWS, BLOCK), CT)
    total = cube.zeros((ROWS, BLOCK), CT)
    for start in range(0, n_cols, BLOCK):
        _, _, n, gy = normalized_chunk(x, xo, g, go, base, start, row_ok, center, rstd, w, wo,
                                       n_cols, HAS_W, CT, BLOCK)
        dot = dot + gy * n
        total = total + gy
    mean_dot = cube.sum(dot, axis=1) / n_cols
    mean_gy = cube.sum(total, axis=1) / n_cols
    for start in range(0, n_cols, BLOCK):
        cols, m, n, gy = normalized_chunk(x, xo, g, go, base, start, row_ok, center, rstd, w,
                                          wo, n_cols, HAS_W, CT, BLOCK)
        d = gy - n * mean_dot[:, None]
        if not RMS:
            d = d - mean_gy[:, None]
        cube.store(dx + base + cols[None, :], (d * rstd[:, None]).to(DT), mask=m)


@cube.func
def normalized_chunk(x, xo, g, go, base, start, row_ok, center, rstd, w, wo, n_cols, HAS_W, CT,
                     BLOCK):
    # BLOCK columns from start of a tile of long rows: their columns, mask, n and g * weight
    cols = start + cube.arange(0, BLOCK)
    cm = cols < n_cols
    m = row_ok[:, None] & cm[None, :]
    v = cube.load(x + xo + base + cols[None, :], mask=m, other=0).to(CT)
    gv = cube.load(g + go + base + cols[None, :], mask=m, other=0).to(CT)
    n = cube.where(m, (v - center[:, None]) * rstd[:, None], 0.0)
    return cols, m, n, weighted(gv, w, wo, cols, cm, HAS_W, CT)


@cube.kernel
def norm_param_grad_kernel(x, xo, g, go, stats, part, n_rows, n_cols, split_rows,
                           RMS: cube.Comptime[bool], CT: cube.Comptime[object],
                           ROWS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    # after norm_grad_loop_kernel: cube (i, j) sums g * n and g over the j-th slice of
    # split_rows rows in the i-th block of columns, into part[:, j, columns]
    cols = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cm = cols < n_cols
    begin = cube.cube_pos(1) * split_rows
    end = cube.minimum(begin + split_rows, n_rows)
    sum_gn = cube.zeros((ROWS, BLOCK), CT)
    sum_g = cube.zeros((ROWS, BLOCK), CT)
    for start in range(begin, end, ROWS):
        rows = start + cube.arange(0, ROWS)
        row_ok = rows < end
        m = row_ok[:, None] & cm[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        v = cube.load(x + xo + offs, mask=m, other=0).to(CT)
        gv = cube.load(g + go + offs, mask=m, other=0).to(CT)
        center = cube.load(stats + rows, mask=row_ok, other=0).to(CT)
        rstd = cube.load(stats + n_rows + rows, mask=row_ok, other=0).to(CT)
        sum_gn = sum_gn + cube.where(m, gv * (v - center[:, None]) * rstd[:, None], 0.0)
        sum_g = sum_g + gv
    at = part + cube.cube_pos(1) * n_cols + cols
    cube.store(at, cube.sum(sum_gn, axis=0), mask=cm)
    if not RMS:
        cube.store(at + cube.cube_count(1) * n_cols, cube.sum(sum_g, axis=0), mask=cm)


def grad_cubes(ctx: Context, storage: object, n_tiles: int) -> int:
    """The cubes of one backward launch over ``n_tiles`` row tiles of ``storage`` on
    ``ctx``'s target.

    Example:
        >>> grad_cubes(Context("wgsl", None), None, 10_000)
        256
        >>> grad_cubes(Context("cpu", None), np.zeros(1), 3)
        3
    """
    if ctx.target == "wgsl":
        return max(1, min(n_tiles, WGSL_GRAD_CUBES))
    return max(1, min(n_tiles, CUBES_PER_UNIT * cube.concurrent_cubes(storage)))


def norm_backward(ctx: Context, x: View, k: int, weight: View | None, d_out: View, eps: float,
                  rms: bool, params: bool, compute: DType
                  ) -> tuple[View, View | None, View | None]:
    """The gradients of ``layer_norm`` (``rms_norm`` with ``rms``) over the last ``k`` axes of
    ``x`` for the output's gradient ``d_out``: ``dx`` (``x``'s dtype) and, with ``params``,
    the weight's (``d_out * normalized`` summed over the leading axes) and the bias's
    (``d_out`` summed; None for ``rms``), in ``compute``. Statistics are recomputed in
    ``compute``, as the forward kernels compute them.

    Example:
        >>> dx, dw, db = norm_backward(  # doctest: +SKIP
        ...     ctx, x, 1, w, g, 1e-5, False, True, cube.float32)
    """
    shape = x.shape[x.ndim - k:]
    n_cols = math.prod(shape)
    n_rows = x.numel // n_cols if n_cols else 0
    dx = ctx.new(x.shape, x.dtype)
    sums = 1 if rms else 2
    if x.numel == 0:
        if not params:
            return dx, None, None
        zero = creation.full(ctx, (sums, n_cols), 0, compute)
        return dx, _row(zero, 0, shape), None if rms else _row(zero, 1, shape)
    x, d_out, weight = (elementwise.contiguous(ctx, v) for v in (x, d_out, weight))
    operands = (x, d_out, dx, weight)
    if pow2(n_cols) <= single_pass_limit(ctx):
        part = _tile_pass(ctx, operands, n_rows, n_cols, eps, rms, params, compute)
    else:
        part = _loop_passes(ctx, operands, n_rows, n_cols, eps, rms, params, compute)
    if part is None:
        return dx, None, None
    summed = reduce.reduce(ctx, "sum", part, (1,), compute, compute)
    return dx, _row(summed, 0, shape), None if rms else _row(summed, 1, shape)


def _tile_pass(ctx: Context, operands: tuple, n_rows: int, n_cols: int, eps: float,
               rms: bool, params: bool, compute: DType) -> View | None:
    """dx by ``norm_grad_tile_kernel``; with ``params`` the partial sums it leaves."""
    x, d_out, dx, weight = operands
    w = x if weight is None else weight  # an unused argument still needs an array
    block = max(pow2(n_cols), 16)
    tile_rows = rows_per_tile(ctx, block)
    n_tiles = math.ceil(n_rows / tile_rows)
    cubes = grad_cubes(ctx, x.storage, n_tiles)
    part = ctx.new((1 if rms else 2, cubes, n_cols), compute) if params else None
    norm_grad_tile_kernel[(cubes,)](
        x.storage, x.offset, d_out.storage, d_out.offset, dx.storage,
        (dx if part is None else part).storage, n_rows, n_cols, n_tiles, w.storage, w.offset,
        scalar(eps, compute), RMS=rms, HAS_W=weight is not None, PARAMS=params, CT=compute,
        DT=x.dtype, ROWS=tile_rows, BLOCK=block, target=ctx.target,
        **launch_options(ctx, tile_rows * block))
    return part


def _loop_passes(ctx: Context, operands: tuple, n_rows: int, n_cols: int, eps: float,
                 rms: bool, params: bool, compute: DType) -> View | None:
    """dx by ``norm_grad_loop_kernel``; with ``params`` the partial sums of
    ``norm_param_grad_kernel`` over the rows' statistics that it leaves."""
    x, d_out, dx, weight = operands
    w = x if weight is None else weight
    block = tile_elements(ctx)
    tile_rows = rows_per_tile(ctx, block)
    stats = ctx.new((2, n_rows), compute) if params else None
    norm_grad_loop_kernel[(math.ceil(n_rows / tile_rows),)](
        x.storage, x.offset, d_out.storage, d_out.offset, dx.storage,
        (dx if stats is None else stats).storage, n_rows, n_cols, w.storage, w.offset,
        scalar(eps, compute), RMS=rms, HAS_W=weight is not None, PARAMS=params, CT=compute,
        DT=x.dtype, ROWS=tile_rows, BLOCK=block, target=ctx.target,
        **launch_options(ctx, tile_rows * block))
    if stats is None:
        return None
    block = min(PARAM_BLOCK, tile_elements(ctx)) if not ctx.target.startswith("cpu") \
        else CPU_LANES
    tile_rows = rows_per_tile(ctx, block)
    col_blocks = math.ceil(n_cols / block)
    split_rows = param_split_rows(ctx, n_rows, col_blocks, tile_rows)
    splits = math.ceil(n_rows / split_rows)
    part = ctx.new((1 if rms else 2, splits, n_cols), compute)
    norm_param_grad_kernel[(col_blocks, splits)](
        x.storage, x.offset, d_out.storage, d_out.offset, stats.storage, part.storage, n_rows,
        n_cols, split_rows, RMS=rms, CT=compute, ROWS=tile_rows, BLOCK=block,
        target=ctx.target, **launch_options(ctx, tile_rows * block))
    return part


def param_split_rows(ctx: Context, n_rows: int, col_blocks: int, tile_rows: int) -> int:
    """The rows each cube of ``norm_param_grad_kernel`` sums: all of them when the blocks of
    columns alone fill the device, else fewer (at least four tiles' worth).

    Example:
        >>> param_split_rows(Context("triton", None), 512, 64, 16)
        64
    """
    target = CPU_TARGET_CUBES if ctx.target.startswith("cpu") else TARGET_CUBES
    splits = max(1, min(math.ceil(target / col_blocks), math.ceil(n_rows / (4 * tile_rows))))
    return math.ceil(n_rows / splits)


def _row(matrix: View, i: int, shape: tuple[int, ...]) -> View:
    """Row ``i`` of a contiguous 2-D view, seen with ``shape`` (the normalized axes')."""
    return matrix.with_layout(matrix.offset + i * matrix.shape[1], shape,
                              contiguous_strides(shape))
