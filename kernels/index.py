"""Indexing kernels: gathers, ``one_hot``, triangles, copies into regions and
the range of an index tensor.

Gathers are elementwise over the result. A launcher describes the gathered operand by a view
*of the result's shape* whose indexed axis has stride 0, plus that axis's real stride: element
``e`` reads ``x[element_offset(e) + index[e] * axis_stride]``. torch's ``gather`` and NumPy's
``take`` (``index_select``, ``embedding``) differ only in how those two views are laid out, so
they share one kernel. ``kernels.scatter`` is the same addressing on the write side, with atomics.

Indices are not checked in the kernels: burn checks them first with ``index_range`` (a
two-pass min/max reduction whose two numbers the host reads back), so an out-of-range index is
a clear error instead of a wild read.

Example:
    >>> lo_hi = index_range(ctx, idx)                           # doctest: +SKIP
    >>> out = take(ctx, x, idx, axis=0)                         # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

import cubepy as cube
from cubepy.ir.dtypes import DType

from .creation import full
from .elementwise import copy
from .layout import Context, View, launch_plan
from .strided import element_offset, layout_args, operand_args, without_axis

BOUNDS_BLOCK = 256  # elements per step of the index-range reduction
MAX_BOUNDS_CUBES = 512  # partial results of its first pass (read back by one cube)


@cube.kernel
def gather_kernel(x, xo, xs0, xs1, xs2, xs3, idx, io, is0, is1, is2, is3, out, oo, n, d1, d2,
                  d3, axis_stride, RANK: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    e = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = e < n
    k = cube.load(idx + io + element_offset(e, RANK, d1, d2, d3, is0, is1, is2, is3), mask=m,
                  other=0).to(cube.int32)
    src = xo + element_offset(e, RANK, d1, d2, d3, xs0, xs1, xs2, xs3) + k * axis_stride
    cube.store(out + oo + e, cube.load(x + src, mask=m, other=0), mask=m)


@cube.kernel
def one_hot_kernel(idx, io, is0, is1, is2, is3, out, oo, n, d1, d2, d3, classes,
                   DT: cube.Comptime[object], RANK: cube.Comptime[int],
                   BLOCK: cube.Comptime[int]):
    # n counts result elements: index element e // classes, class e % classes
    e = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = e < n
    cell = e // classes
    k = cube.load(idx + io + element_offset(cell, RANK, d1, d2, d3, is0, is1, is2, is3), mask=m,
                  other=0).to(cube.int32)
    cube.store(out + oo + e, cube.where(k == e % classes, 1, 0).to(DT), mask=m)


@cube.kernel
def triangle_kernel(x, xo, xs0, xs1, xs2, xs3, out, oo, n, d1, d2, d3, rows, cols, diagonal,
                    UPPER: cube.Comptime[bool], RANK: cube.Comptime[int],
                    BLOCK: cube.Comptime[int]):
    e = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = e < n
    flat = oo + e  # the result is contiguous: its linear index gives row and column
    offset = (flat % cols) - ((flat // cols) % rows)
    if UPPER:
        keep = offset >= diagonal
    else:
        keep = offset <= diagonal
    v = cube.load(x + xo + element_offset(e, RANK, d1, d2, d3, xs0, xs1, xs2, xs3), mask=m,
                  other=0)
    cube.store(out + flat, cube.where(keep, v, 0).to(v.dtype), mask=m)


@cube.kernel
def copy_into_kernel(x, xo, xs0, xs1, xs2, xs3, dst, do, ds0, ds1, ds2, ds3, n, d1, d2, d3,
                     DT: cube.Comptime[object], RANK: cube.Comptime[int],
                     BLOCK: cube.Comptime[int]):
    e = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = e < n
    v = cube.load(x + xo + element_offset(e, RANK, d1, d2, d3, xs0, xs1, xs2, xs3), mask=m,
                  other=0)
    cube.store(dst + do + element_offset(e, RANK, d1, d2, d3, ds0, ds1, ds2, ds3), v.to(DT),
               mask=m)


@cube.kernel
def bounds_kernel(a, ao, as0, as1, as2, as3, b, bo, bs0, bs1, bs2, bs3, res, count, n, d1, d2,
                  d3, per_cube, RANK: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    # Cube p reduces elements [p * per_cube, (p + 1) * per_cube): min of `a` into res[p], max
    # of `b` into res[count + p]. The first pass reads the index through both; the second
    # reads the partial minima and maxima.
    p = cube.cube_pos(0)
    first = p * per_cube
    seed_lo = cube.load(a + ao + element_offset(first, RANK, d1, d2, d3, as0, as1, as2, as3))
    seed_hi = cube.load(b + bo + element_offset(first, RANK, d1, d2, d3, bs0, bs1, bs2, bs3))
    lo = cube.zeros((BLOCK,), seed_lo.dtype) + seed_lo
    hi = cube.zeros((BLOCK,), seed_hi.dtype) + seed_hi
    for start in range(first, first + per_cube, BLOCK):
        e = start + cube.arange(0, BLOCK)
        m = (e < n) & (e < first + per_cube)
        va = cube.load(a + ao + element_offset(e, RANK, d1, d2, d3, as0, as1, as2, as3), mask=m,
                       other=0)
        vb = cube.load(b + bo + element_offset(e, RANK, d1, d2, d3, bs0, bs1, bs2, bs3), mask=m,
                       other=0)
        lo = cube.minimum(lo, cube.where(m, va, seed_lo))
        hi = cube.maximum(hi, cube.where(m, vb, seed_hi))
    cube.store(res + p, cube.min(lo))
    cube.store(res + count + p, cube.max(hi))


def index_range(ctx: Context, index: View) -> View:
    """``[min, max]`` of a non-empty integer view, as a 2-element view of its dtype."""
    parts = launch_plan(index.shape, [index])
    if len(parts) > 1:  # more than 4 non-mergeable axes: reduce a contiguous copy
        index = copy(ctx, index)
        parts = launch_plan(index.shape, [index])
    part, n = parts[0], index.numel
    cubes = min(cube.cdiv(n, BOUNDS_BLOCK), MAX_BOUNDS_CUBES)
    per_cube = cube.cdiv(cube.cdiv(n, cubes), BOUNDS_BLOCK) * BOUNDS_BLOCK
    cubes = cube.cdiv(n, per_cube)
    partial = ctx.new((2 * cubes,), index.dtype)
    args = operand_args(part, 0)
    bounds_kernel[(cubes,)](index.storage, *args, index.storage, *args, partial.storage, cubes,
                            *layout_args(part), per_cube, RANK=part.layout.rank,
                            BLOCK=BOUNDS_BLOCK, target=ctx.target)
    if cubes == 1:
        return partial
    result = ctx.new((2,), index.dtype)
    dense = (0, 0, 0, 1)
    bounds_kernel[(1,)](partial.storage, 0, *dense, partial.storage, cubes, *dense,
                        result.storage, 1, cubes, 1, 1, 1, cubes, RANK=0, BLOCK=BOUNDS_BLOCK,
                        target=ctx.target)
    return result


def _gather(ctx: Context, x: View, index: View, axis_stride: int) -> View:
    # x and index are views of the result's shape; x's indexed axis has stride 0
    out = ctx.new(index.shape, x.dtype)
    for part in launch_plan(out.shape, [x, index]):
        block = ctx.block(part.numel)
        gather_kernel[(cube.cdiv(part.numel, block),)](
            x.storage, *operand_args(part, 0), index.storage, *operand_args(part, 1),
            out.storage, part.out_offset, *layout_args(part), axis_stride,
            RANK=part.layout.rank, BLOCK=block, target=ctx.target)
    return out


def gather(ctx: Context, x: View, index: View, axis: int) -> View:
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis`` (torch's gather);
    ``index`` has ``x``'s rank and fits inside ``x`` on every other axis."""
    x_view = x.with_layout(x.offset, index.shape, without_axis(x.strides, axis))
    return _gather(ctx, x_view, index, x.strides[axis])


def take(ctx: Context, x: View, index: View, axis: int) -> View:
    """``x`` indexed along ``axis`` by an index of any shape (NumPy's ``take``): the result's
    shape is ``x.shape[:axis] + index.shape + x.shape[axis + 1:]``. ``index_select`` is the
    1-D case and ``embedding`` the ``axis=0`` case."""
    before, after = x.shape[:axis], x.shape[axis + 1:]
    shape = before + index.shape + after
    x_view = x.with_layout(x.offset, shape, x.strides[:axis] + (0,) * index.ndim
                           + x.strides[axis + 1:])
    index_view = index.with_layout(index.offset, shape, (0,) * len(before) + index.strides
                                   + (0,) * len(after))
    return _gather(ctx, x_view, index_view, x.strides[axis])


def one_hot(ctx: Context, index: View, classes: int, dtype: DType) -> View:
    """``index.shape + (classes,)``: 1 where the last coordinate equals the index, else 0."""
    out = ctx.new(index.shape + (classes,), dtype)
    for part in launch_plan(index.shape, [index]):
        n = part.numel * classes
        block = ctx.block(n)
        one_hot_kernel[(cube.cdiv(n, block),)](
            index.storage, *operand_args(part, 0), out.storage, part.out_offset * classes, n,
            *part.layout.dims, classes, DT=dtype, RANK=part.layout.rank, BLOCK=block,
            target=ctx.target)
    return out


def triangle(ctx: Context, x: View, diagonal: int, upper: bool) -> View:
    """``x`` with the elements below (``upper``) or above the ``diagonal``-th diagonal of its
    last two axes zeroed (torch's ``triu``/``tril``)."""
    out = ctx.new(x.shape, x.dtype)
    rows, cols = x.shape[-2], x.shape[-1]
    for part in launch_plan(x.shape, [x]):
        block = ctx.block(part.numel)
        triangle_kernel[(cube.cdiv(part.numel, block),)](
            x.storage, *operand_args(part, 0), out.storage, part.out_offset, *layout_args(part),
            rows, cols, diagonal, UPPER=upper, RANK=part.layout.rank, BLOCK=block,
            target=ctx.target)
    return out


def copy_into(ctx: Context, x: View, dst: View) -> None:
    """Write ``x`` (converted to ``dst``'s dtype) into the region ``dst`` of fresh storage
    (``dst`` has ``x``'s shape)."""
    for part in launch_plan(x.shape, [x, dst]):
        block = ctx.block(part.numel)
        copy_into_kernel[(cube.cdiv(part.numel, block),)](
            x.storage, *operand_args(part, 0), dst.storage, *operand_args(part, 1),
            *layout_args(part), DT=dst.dtype, RANK=part.layout.rank, BLOCK=block,
            target=ctx.target)


def cat(ctx: Context, xs: Sequence[View], axis: int, dtype: DType) -> View:
    """``xs`` joined along ``axis`` (equal shapes elsewhere), converted to ``dtype``."""
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = ctx.new(shape, dtype)
    start = 0
    for x in xs:
        if x.numel:
            copy_into(ctx, x, out.with_layout(start * out.strides[axis], x.shape, out.strides))
        start += x.shape[axis]
    return out


def pad(ctx: Context, x: View, pads: Sequence[tuple[int, int]], value: object) -> View:
    """``x`` with ``pads[d] = (before, after)`` elements of ``value`` around axis ``d``."""
    shape = [n + lo + hi for n, (lo, hi) in zip(x.shape, pads)]
    out = full(ctx, shape, value, x.dtype)
    if x.numel:
        start = sum(lo * s for (lo, _), s in zip(pads, out.strides))
        copy_into(ctx, x, out.with_layout(start, x.shape, out.strides))
    return out
