"""Batch normalization over (N, C, ...) inputs: per-channel statistics, the normalization,
and its fused backward pass.

A channel's values are the (N, positions) elements ``x[n, c, s]`` of a contiguous input seen
as (N, C, S) (S the spatial axes' product, 1 for an (N, C) input): runs of S contiguous
elements, C * S apart. ``channel_sums_kernel`` sums them per channel: a cube takes a block of
channels and a share of their positions, in tiles of positions by channels (channels are the
lanes when S is short, as they are then the nearest in memory), and writes partial sums; a
reduction over the shares adds them up (skipped when one share covers the batch).

- Forward: the sums of x, then of the squared deviations from their mean (two passes over
  x), then one small kernel per channel turns the statistics and parameters into
  ``y = x * a + shift`` (``channel_coefficients_kernel``) and one elementwise kernel applies
  it (``channel_affine_kernel``): x is read three times and y written once.
- Backward, normalized by the batch's statistics: one pass sums ``dy`` and
  ``dy * (x - mean)`` per channel, a small kernel turns them into
  ``dx = x * q + r + dy * p`` and the weight's and bias's gradients, and the elementwise
  kernel writes dx.

Example:
    >>> y, mean, var = batch_norm(ctx, x, None, None, w, b, 1e-5, cube.float32,  # doctest: +SKIP
    ...                           x.dtype)
    >>> dx, dw, db = batch_norm_backward(ctx, x, dy, mean, var, w, 1e-5, True,  # doctest: +SKIP
    ...                                  cube.float32)
"""

from __future__ import annotations

import math

import cubepy as cube
from cubepy.ir.dtypes import DType

from . import creation, elementwise, reduce
from .layout import Context, View, scalar
from .reduce import chunk_end
from .rows import CPU_LANES, CPU_TARGET_CUBES, launch_options, pow2, tile_elements

CUBES_PER_UNIT = 4  # channel-sum cubes per unit of concurrency (SM, core)
WGSL_SUM_CUBES = 256
# below it, a tile spans channels (the contiguous axis when S is 1), and the normalizing
# kernel finds each element's channel by a division instead of one per row of S
SHORT_POSITIONS = 32
SUM_TILE = 1024  # elements of a channel-sum tile on a GPU


@cube.func
def accumulate(first, second, x, xo, d, do, at, m, mu, MODE, CT):
    v = cube.load(x + xo + at, mask=m, other=0).to(CT)
    if MODE == "sum":
        first = first + v
    elif MODE == "sqdev":
        centered = cube.where(m, v - mu[None, :], 0.0)
        first = first + centered * centered
    else:
        g = cube.load(d + do + at, mask=m, other=0).to(CT)
        first = first + g
        second = second + g * (v - mu[None, :])  # masked lanes: g is 0
    return first, second


@cube.kernel
def channel_sums_kernel(x, xo, d, do, center, co, part, C, S, units, per_split, scale,
                        MODE: cube.Comptime[str], PER_ITEM: cube.Comptime[bool],
                        CT: cube.Comptime[object], KB: cube.Comptime[int],
                        CB: cube.Comptime[int]):
    # Cube (i, j): channels [i * CB, (i + 1) * CB), and share j of the units: items with
    # PER_ITEM (each a run of S positions, read KB at a time), else positions k (n = k // S,
    # s = k % S). part is (sums, splits, C). MODE "sum": the sum of x; "sqdev": of
    # (x - mu)**2; "grad": of d, then of d * (x - mu); mu = center * scale.
    c = cube.cube_pos(0) * CB + cube.arange(0, CB)
    cm = c < C
    mu = cube.load(center + co + c, mask=cm, other=0).to(CT) * scale
    begin = cube.cube_pos(1) * per_split
    end = chunk_end(begin, per_split, units)
    first = cube.zeros((KB, CB), CT)
    second = cube.zeros((KB, CB), CT)
    if PER_ITEM:
        for n in range(begin, end):
            for s0 in range(0, S, KB):
                s = s0 + cube.arange(0, KB)
                at = (n * C * S + s)[:, None] + (c * S)[None, :]
                m = (s < S)[:, None] & cm[None, :]
                first, second = accumulate(first, second, x, xo, d, do, at, m, mu, MODE, CT)
    else:
        for k0 in range(begin, end, KB):
            k = k0 + cube.arange(0, KB)
            n_of = k // S
            at = (n_of * C * S + (k - n_of * S))[:, None] + (c * S)[None, :]
            m = (k < end)[:, None] & cm[None, :]
            first, second = accumulate(first, second, x, xo, d, do, at, m, mu, MODE, CT)
    row = part + cube.cube_pos(1) * C + c
    cube.store(row, cube.sum(first, axis=0), mask=cm)
    if MODE == "grad":
        cube.store(row + cube.cube_count(1) * C, cube.sum(second, axis=0), mask=cm)


@cube.kernel
def channel_coefficients_kernel(mean, mo, var, vo, w, wo, b, bo, coef, C, eps, scale,
                                HAS_W: cube.Comptime[bool], HAS_B: cube.Comptime[bool],
                                CT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    # coef is (4, C): the normalization as y = x * a + shift, then the mean and variance it
    # used (mean * scale, var * scale: sums become means with scale = 1 / count)
    c = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = c < C
    mu = cube.load(mean + mo + c, mask=m, other=0).to(CT) * scale
    sigma2 = cube.load(var + vo + c, mask=m, other=1).to(CT) * scale
    a = cube.rsqrt(sigma2 + eps)
    if HAS_W:
        a = a * cube.load(w + wo + c, mask=m, other=1).to(CT)
    shift = -mu * a
    if HAS_B:
        shift = shift + cube.load(b + bo + c, mask=m, other=0).to(CT)
    cube.store(coef + c, a, mask=m)
    cube.store(coef + C + c, shift, mask=m)
    cube.store(coef + 2 * C + c, mu, mask=m)
    cube.store(coef + 3 * C + c, sigma2, mask=m)


@cube.kernel
def channel_backward_coefficients_kernel(sums, so, mean, mo, var, vo, w, wo, coef, C, eps,
                                         inv_count, HAS_W: cube.Comptime[bool],
                                         CT: cube.Comptime[object],
                                         BLOCK: cube.Comptime[int]):
    # From each channel's sums of dy and of dy * (x - mean): coef is (5, C), dx as
    # x * q + r + dy * p (rows q, r, p: channel_affine_kernel's order), then the weight's and
    # the bias's gradients
    c = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = c < C
    mu = cube.load(mean + mo + c, mask=m, other=0).to(CT)
    rstd = cube.rsqrt(cube.load(var + vo + c, mask=m, other=1).to(CT) + eps)
    sum_g = cube.load(sums + so + c, mask=m, other=0)
    sum_gx = cube.load(sums + so + C + c, mask=m, other=0)
    p = rstd
    if HAS_W:
        p = p * cube.load(w + wo + c, mask=m, other=1).to(CT)
    slope = rstd * rstd * sum_gx * inv_count  # of dx's part along the centered x
    cube.store(coef + c, -p * slope, mask=m)
    cube.store(coef + C + c, p * (slope * mu - sum_g * inv_count), mask=m)
    cube.store(coef + 2 * C + c, p, mask=m)
    cube.store(coef + 3 * C + c, sum_gx * rstd, mask=m)
    cube.store(coef + 4 * C + c, sum_g, mask=m)


@cube.func
def channel_coefficient(coef, row, c, m, C):
    return cube.load(coef + row * C + c, mask=m, other=0)


@cube.kernel
def channel_affine_kernel(x, xo, d, do, coef, out, L, C, S, PER_ROW: cube.Comptime[bool],
                          UNIT: cube.Comptime[bool], HAS_D: cube.Comptime[bool],
                          CT: cube.Comptime[object], DT: cube.Comptime[object],
                          BLOCK: cube.Comptime[int]):
    # out = x * coef[0, c] + coef[1, c], plus d * coef[2, c] with HAS_D (dx: coef's rows are
    # then q, r, p), over a contiguous x seen as rows of L: with PER_ROW a row is one
    # channel of one item (L = S: its channel is a scalar of the cube), else one item
    # (L = C * S: each element's channel is its column // S, the column itself when UNIT)
    row = cube.cube_pos(0)
    e = cube.cube_pos(1) * BLOCK + cube.arange(0, BLOCK)
    m = e < L
    at = row * L + e
    if PER_ROW:
        c = row % C
        ok = c < C
    elif UNIT:
        c = e
        ok = m
    else:
        c = e // S
        ok = m
    v = cube.load(x + xo + at, mask=m, other=0).to(CT)
    y = v * channel_coefficient(coef, 0, c, ok, C) + channel_coefficient(coef, 1, c, ok, C)
    if HAS_D:
        g = cube.load(d + do + at, mask=m, other=0).to(CT)
        y = y + g * channel_coefficient(coef, 2, c, ok, C)
    cube.store(out + at, y.to(DT), mask=m)


def _channel_layout(x: View) -> tuple[int, int, int]:
    """(N, C, S) of an (N, C, ...) view."""
    return x.shape[0], x.shape[1], math.prod(x.shape[2:])


def sum_tile(ctx: Context, channels: int, positions: int) -> tuple[int, int]:
    """``(KB, CB)``: positions by channels of a channel-sum tile on ``ctx``'s target; the
    channels are the lanes when positions are few (they are then the nearest in memory).

    Example:
        >>> sum_tile(Context("triton", None), 64, 1), sum_tile(Context("triton", None), 64, 49)
        ((32, 32), (1024, 1))
        >>> sum_tile(Context("cpu", None), 64, 1), sum_tile(Context("cpu", None), 64, 49)
        ((1, 64), (64, 1))
    """
    if ctx.target.startswith("cpu"):  # one lane axis: the cpu runs it as a fused loop
        if positions >= SHORT_POSITIONS:
            return min(CPU_LANES, pow2(positions)), 1
        return 1, min(CPU_LANES, pow2(channels))
    elements = min(SUM_TILE, tile_elements(ctx))
    across = 1 if positions >= SHORT_POSITIONS else min(SHORT_POSITIONS, pow2(channels))
    return elements // across, across


def sum_splits(ctx: Context, storage: object, channel_blocks: int, units: int,
               unit_tiles: float) -> int:
    """How many shares of a channel's ``units`` (items or positions, ``unit_tiles`` tiles
    each) a channel-sum launch takes: enough cubes to fill the device, each at least four
    tiles long."""
    if ctx.target.startswith("cpu"):
        target = CPU_TARGET_CUBES
    elif ctx.target == "wgsl":
        target = WGSL_SUM_CUBES
    else:
        target = CUBES_PER_UNIT * cube.concurrent_cubes(storage)
    return max(1, min(math.ceil(target / channel_blocks), units,
                      math.ceil(units * unit_tiles / 4)))


def channel_sums(ctx: Context, mode: str, x: View, d_out: View | None, center: View | None,
                 scale: float, compute: DType) -> View:
    """Per-channel sums of a non-empty contiguous (N, C, ...) ``x``, a contiguous (rows, C)
    view in ``compute``: ``"sum"`` of x; ``"sqdev"`` of ``(x - center * scale)**2``;
    ``"grad"`` of ``d_out``, then of ``d_out * (x - center * scale)``."""
    count, channels, positions = _channel_layout(x)
    kb, cb = sum_tile(ctx, channels, positions)
    per_item = cb == 1  # runs of positions long enough for a tile's lanes
    units, unit_tiles = (count, math.ceil(positions / kb)) if per_item else \
        (count * positions, 1 / kb)
    channel_blocks = math.ceil(channels / cb)
    per_split = math.ceil(units / sum_splits(ctx, x.storage, channel_blocks, units, unit_tiles))
    splits = math.ceil(units / per_split)
    rows = 2 if mode == "grad" else 1
    part = ctx.new((rows, splits, channels), compute)
    d, mu = (x if v is None else v for v in (d_out, center))  # unused ones still need arrays
    channel_sums_kernel[(channel_blocks, splits)](
        x.storage, x.offset, d.storage, d.offset, mu.storage, mu.offset, part.storage,
        channels, positions, units, per_split, scalar(scale, compute), MODE=mode,
        PER_ITEM=per_item, CT=compute, KB=kb, CB=cb, target=ctx.target,
        **launch_options(ctx, kb * cb))
    if splits == 1:
        return part.with_layout(part.offset, (rows, channels), (channels, 1))
    return reduce.reduce(ctx, "sum", part, (1,), compute, compute)


def _row(matrix: View, i: int) -> View:
    """Row ``i`` of a contiguous 2-D view."""
    width = matrix.shape[1]
    return matrix.with_layout(matrix.offset + i * width, (width,), (1,))


def _affine(ctx: Context, x: View, d_out: View | None, coef: View, out: View) -> None:
    count, channels, positions = _channel_layout(x)
    per_row = positions >= SHORT_POSITIONS
    rows, length = (count * channels, positions) if per_row else (count, channels * positions)
    d = x if d_out is None else d_out
    block = ctx.block(length)
    channel_affine_kernel[(rows, cube.cdiv(length, block))](
        x.storage, x.offset, d.storage, d.offset, coef.storage, out.storage, length, channels,
        positions, PER_ROW=per_row, UNIT=positions == 1, HAS_D=d_out is not None,
        CT=coef.dtype, DT=out.dtype, BLOCK=block, target=ctx.target)


def batch_norm(ctx: Context, x: View, mean: View | None, var: View | None,
               weight: View | None, bias: View | None, eps: float, compute: DType,
               out_dtype: DType) -> tuple[View, View, View]:
    """``(x - mean) * rsqrt(var + eps) * weight + bias`` with (C,) statistics and parameters
    broadcast along axis 1 of the (N, C, ...) ``x``, computed in ``compute``; without
    ``mean`` and ``var`` the batch's own (the biased variance; NaN for an empty batch).
    Returns the result and the statistics, in ``compute``."""
    count, channels, positions = _channel_layout(x)
    out = ctx.new(x.shape, out_dtype)
    x, mean, var, weight, bias = (elementwise.contiguous(ctx, v)
                                  for v in (x, mean, var, weight, bias))
    scale = 1.0
    if mean is None or var is None:
        if x.numel == 0:
            nan = creation.full(ctx, (channels,), float("nan"), compute)
            return out, nan, nan
        scale = 1.0 / (count * positions)  # the sums become means
        mean = channel_sums(ctx, "sum", x, None, None, 1.0, compute)
        var = channel_sums(ctx, "sqdev", x, None, mean, scale, compute)
    coef = ctx.new((4, channels), compute)
    w, b = (mean if p is None else p for p in (weight, bias))  # unused ones still need arrays
    block = ctx.block(channels)
    channel_coefficients_kernel[(cube.cdiv(channels, block),)](
        mean.storage, mean.offset, var.storage, var.offset, w.storage, w.offset, b.storage,
        b.offset, coef.storage, channels, scalar(eps, compute), scalar(scale, compute),
        HAS_W=weight is not None, HAS_B=bias is not None, CT=compute, BLOCK=block,
        target=ctx.target)
    if x.numel:
        _affine(ctx, x, None, coef, out)
    return out, _row(coef, 2), _row(coef, 3)


def batch_norm_backward(ctx: Context, x: View, d_out: View, mean: View, var: View,
                        weight: View | None, eps: float, params: bool, compute: DType
                        ) -> tuple[View, View | None, View | None]:
    """The gradients of ``batch_norm`` with the batch's own statistics (``mean``, ``var``
    of ``x``, as ``batch_norm`` gives them) for the output gradient ``d_out``: ``dx`` in
    ``x``'s dtype and, with ``params``, the weight's and the bias's (C,) gradients in
    ``compute``."""
    count, channels, positions = _channel_layout(x)
    dx = ctx.new(x.shape, x.dtype)
    if x.numel == 0:
        zero = creation.full(ctx, (2, channels), 0, compute)
        return (dx, _row(zero, 0), _row(zero, 1)) if params else (dx, None, None)
    x, d_out, mean, var, weight = (elementwise.contiguous(ctx, v)
                                   for v in (x, d_out, mean, var, weight))
    sums = channel_sums(ctx, "grad", x, d_out, mean, 1.0, compute)
    coef = ctx.new((5, channels), compute)
    w = mean if weight is None else weight
    block = ctx.block(channels)
    channel_backward_coefficients_kernel[(cube.cdiv(channels, block),)](
        sums.storage, sums.offset, mean.storage, mean.offset, var.storage, var.offset,
        w.storage, w.offset, coef.storage, channels, scalar(eps, compute),
        scalar(1 / (count * positions), compute), HAS_W=weight is not None, CT=compute,
        BLOCK=block, target=ctx.target)
    _affine(ctx, x, d_out, coef, dx)
    return (dx, _row(coef, 3), _row(coef, 4)) if params else (dx, None, None)
