"""Sorting along one axis: ``sort``, ``argsort`` and ``topk``, by ranking and merging.

Each element's place in a sorted row is its *rank*: how many elements of the row sort before
it. ``rank_kernel`` takes a block of ``BI`` elements of one row and counts, in steps of
``BJ``, the elements that precede each of them (a ``BI x BJ`` tile of comparisons summed
along its second axis), then stores every element at its rank; ``topk`` stores only ranks
below ``k``. That is ``n**2`` comparisons per row, so rows longer than a segment (``SEGMENTS``
per target, a few hundred elements) are ranked in segments and the sorted segments are merged
pairwise by ``merge_kernel``: ``log2(n / segment)`` passes of one binary search per element,
about ``n * (segment + log2(n)**2)`` comparisons in all, and no limit on the row length.

Rows of at most ``TILE_ROW`` elements of a dtype whose order fits 32 bits are sorted in one
tile by ``cube.sort`` instead (``tile_sort_kernel``, one cube per row): each element's key (32
bits that order as the values, NaNs equal, -0.0 equal to 0.0) and its index make one int64,
so one sort of those orders the row stably; the values are then read at the sorted indices.
Targets without int64 keep the two kernels below.

Order (the same as ``np.argsort(kind="stable")``): ties keep their original order, in both
directions; NaN counts as larger than every number, so NaNs come last ascending and first
descending, in their original order; ``-0.0`` equals ``0.0``.

Example:
    >>> values, indices = sort(ctx, x, axis=1, k=x.shape[1], descending=False,  # doctest: +SKIP
    ...                        index_dtype=cube.int64)
"""

from __future__ import annotations

import cubepy as cube
from cubepy.ir.dtypes import DType

from .layout import Context, View, launch_plan
from .strided import element_offset

TILE_ROW = 1024  # rows up to this long sort in one tile (tile_sort_kernel)
SMALL_ROW = 16  # rows up to this long use a 16 x 16 tile
# (BI, BJ) of rows longer than SMALL_ROW, and the segment length (a multiple of BI and BJ):
# longer rows are ranked in segments, then merged
ROW_TILES = {"cpu": (16, 16), "triton": (128, 32), "wgsl": (64, 64)}
SEGMENTS = {"cpu": 16, "triton": 256, "wgsl": 256}
MERGE_BLOCK = 256  # elements per cube of a merge pass


@cube.func
def is_nan(v):
    return v != v


@cube.func
def precedes(a, b, a_first, descending):
    """Where ``a`` sorts before ``b``; ``a_first`` breaks ties (``a``'s index is smaller)."""
    if a.dtype.is_float:
        a_nan = is_nan(a)
        b_nan = is_nan(b)
        equal = (a == b) | (a_nan & b_nan)
        less = (a < b) | (b_nan & ~a_nan)
        greater = (a > b) | (a_nan & ~b_nan)
    else:
        equal = a == b
        less = a < b
        greater = a > b
    return cube.where(descending != 0, greater, less) | (equal & a_first)


@cube.func
def order_key(v):
    """int32 keys that order as ``v`` (int32, uint32 or float32) does: NaNs all equal and
    above every number, -0.0 equal to 0.0."""
    if v.dtype.is_float:
        bits = v.to(cube.int32, bitcast=True)
        magnitude = bits & 0x7FFFFFFF
        bits = cube.where(magnitude > 0x7F800000, 0x7FFFFFFF, cube.where(magnitude == 0, 0, bits))
        return cube.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # negatives: larger magnitude, lower
    if v.dtype == cube.uint32:
        return (v ^ 0x80000000).to(cube.int32, bitcast=True)
    return v


@cube.kernel
def tile_sort_kernel(x, xo, xs0, xs1, xs2, xs3, x_step, values, indices, oo, os0, os1, os2,
                     os3, o_step, n, k, d1, d2, d3, KT: cube.Comptime[object],
                     IT: cube.Comptime[object], N: cube.Comptime[int],
                     DESCENDING: cube.Comptime[bool]):
    # One cube per row: key (high 32 bits) and index (low) as one int64 per element, so a
    # sort orders by key and then by index (stable in both directions: descending flips
    # the keys, not the indices); lanes past n sort last.
    row = cube.cube_pos(0)
    x_row = xo + element_offset(row, 4, d1, d2, d3, xs0, xs1, xs2, xs3)
    o_row = oo + element_offset(row, 4, d1, d2, d3, os0, os1, os2, os3)
    i = cube.arange(0, N)
    valid = i < n
    key = order_key(cube.load(x + x_row + i * x_step, mask=valid, other=0).to(KT))
    if DESCENDING:
        key = ~key
    packed = (key.to(cube.int64) << 32) | i.to(cube.int64)
    ranked = cube.sort(cube.where(valid, packed, 0x7FFFFFFFFFFFFFFF))
    at = (ranked & 0xFFFFFFFF).to(cube.int32)
    keep = valid & (i < k)
    cube.store(values + o_row + i * o_step, cube.load(x + x_row + at * x_step, mask=keep),
               mask=keep)
    cube.store(indices + o_row + i * o_step, at.to(IT), mask=keep)


@cube.kernel
def rank_kernel(x, xo, xs0, xs1, xs2, xs3, x_step, values, indices, oo, os0, os1, os2, os3,
                o_step, n, k, seg, blocks, d1, d2, d3, descending, KT: cube.Comptime[object],
                IT: cube.Comptime[object], BI: cube.Comptime[int], BJ: cube.Comptime[int]):
    # One flat grid axis of rows x blocks (axis 0 is the one without a 65535 limit). Row r
    # of the collapsed outer axes starts at element_offset(r) in x and in the outputs (the
    # 4-axis formula: a few scalar divisions per cube). Elements are ranked within their
    # segment of `seg` elements (a multiple of BI, or the whole row).
    row = cube.cube_pos(0) // blocks
    block = cube.cube_pos(0) % blocks
    x_row = xo + element_offset(row, 4, d1, d2, d3, xs0, xs1, xs2, xs3)
    o_row = oo + element_offset(row, 4, d1, d2, d3, os0, os1, os2, os3)
    seg_start = (block * BI // seg) * seg
    i = block * BI + cube.arange(0, BI)
    valid = i < n
    vi = cube.load(x + x_row + i * x_step, mask=valid, other=0)
    ki = vi.to(KT)
    rank = cube.zeros((BI,), cube.int32)
    for start in range(seg_start, seg_start + seg, BJ):
        j = start + cube.arange(0, BJ)
        in_segment = (j < n) & (j < seg_start + seg)
        kj = cube.load(x + x_row + j * x_step, mask=in_segment, other=0).to(KT)
        before = precedes(kj[None, :], ki[:, None], j[None, :] < i[:, None], descending)
        rank = rank + cube.sum((before & in_segment[None, :]).to(cube.int32), 1)
    place = seg_start + rank
    keep = valid & (place < k)
    cube.store(values + o_row + place * o_step, vi, mask=keep)
    cube.store(indices + o_row + place * o_step, i.to(IT), mask=keep)


@cube.kernel
def merge_kernel(vin, iin, io, is0, is1, is2, is3, values, indices, oo, os0, os1, os2, os3,
                 o_step, n, k, run, steps, blocks, d1, d2, d3, descending,
                 KT: cube.Comptime[object],
                 IT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    # Rows of sorted runs of `run` elements (dense, in vin/iin) -> runs of 2 * run: each
    # element's place is its place in its run plus the number of elements of the partner run
    # that precede it, found by a binary search of `steps` halvings.
    row = cube.cube_pos(0) // blocks
    in_row = io + element_offset(row, 4, d1, d2, d3, is0, is1, is2, is3)
    o_row = oo + element_offset(row, 4, d1, d2, d3, os0, os1, os2, os3)
    p = (cube.cube_pos(0) % blocks) * BLOCK + cube.arange(0, BLOCK)
    valid = p < n
    va = cube.load(vin + in_row + p, mask=valid, other=0)
    ka = va.to(KT)
    r = p // run
    is_right = (r & 1) == 1  # the right run's elements come later in the row: ties go after
    partner = (r ^ 1) * run
    lo = cube.zeros((BLOCK,), cube.int32)
    hi = cube.minimum(cube.maximum(n - partner, 0), run)
    for _ in range(steps):
        active = valid & (lo < hi)
        mid = (lo + hi) // 2
        kb = cube.load(vin + in_row + partner + mid, mask=active, other=0).to(KT)
        goes_before = precedes(kb, ka, is_right, descending)
        lo = cube.where(active & goes_before, mid + 1, lo)
        hi = cube.where(active & ~goes_before, mid, hi)
    place = (r // 2) * (2 * run) + (p - r * run) + lo
    keep = valid & (place < k)
    cube.store(values + o_row + place * o_step, va, mask=keep)
    ia = cube.load(iin + in_row + p, mask=valid, other=0)
    cube.store(indices + o_row + place * o_step, ia.to(IT), mask=keep)


def key_dtype(dtype: DType) -> DType:
    """The dtype rows are compared in: 16-bit floats as float32, bools and narrow integers as
    int32 (every one of them exactly)."""
    if dtype.name in ("float16", "bfloat16"):
        return cube.float32
    if dtype.is_bool or (not dtype.is_float and dtype.bits < 32):
        return cube.int32
    return dtype


def _tiles(ctx: Context, n: int) -> tuple[int, int]:
    if n <= SMALL_ROW:
        return SMALL_ROW, SMALL_ROW
    return ROW_TILES[ctx.target.partition(":")[0]]


def _drop(seq: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return seq[:axis] + seq[axis + 1:]


def _row_launches(a: View, a_axis: int, b: View, b_axis: int):
    """Per launch over the rows of ``a`` and ``b`` (views whose other axes agree): the number
    of rows, each one's row-start arguments (offset and 4 strides) and the 3 inner sizes."""
    outer = _drop(a.shape, a_axis)
    a_rows = a.with_layout(a.offset, outer, _drop(a.strides, a_axis))
    b_rows = b.with_layout(b.offset, outer, _drop(b.strides, b_axis))
    for part in launch_plan(outer, [a_rows, b_rows]):
        # the kernels always use the 4-axis formula; a dense layout (rank 0) is one axis
        dims = part.layout.dims if part.layout.rank else (1, 1, part.numel)
        yield (part.numel, [part.offsets[0], *part.layout.strides[0]],
               [part.offsets[1], *part.layout.strides[1]], dims)


def _rank(ctx: Context, x: View, axis: int, dst: tuple[View, View, int], k: int, seg: int,
          descending: bool) -> None:
    """Rank ``x``'s rows (within segments of ``seg``) into ``dst = (values, indices, axis)``."""
    values, indices, dst_axis = dst
    n = x.shape[axis]
    bi, bj = _tiles(ctx, n)
    for rows, x_args, o_args, dims in _row_launches(x, axis, values, dst_axis):
        blocks = cube.cdiv(n, bi)
        rank_kernel[(rows * blocks,)](
            x.storage, *x_args, x.strides[axis], values.storage, indices.storage, *o_args,
            values.strides[dst_axis], n, k, seg, blocks, *dims, int(descending),
            KT=key_dtype(x.dtype), IT=indices.dtype, BI=bi, BJ=bj, target=ctx.target)


def _tile_sortable(ctx: Context, x: View, n: int) -> bool:
    """Whether ``x``'s rows sort in one tile: short enough, keys of 32 bits, int64 there."""
    return n <= TILE_ROW and key_dtype(x.dtype).bits <= 32 and \
        "int64" in cube.target_info(ctx.target).dtypes


def _tile_sort(ctx: Context, x: View, axis: int, dst: tuple[View, View, int], k: int,
               descending: bool) -> None:
    values, indices, dst_axis = dst
    n = x.shape[axis]
    for rows, x_args, o_args, dims in _row_launches(x, axis, values, dst_axis):
        tile_sort_kernel[(rows,)](
            x.storage, *x_args, x.strides[axis], values.storage, indices.storage, *o_args,
            values.strides[dst_axis], n, k, *dims, KT=key_dtype(x.dtype), IT=indices.dtype,
            N=max(2, 1 << (n - 1).bit_length()), DESCENDING=descending, target=ctx.target)


def _merge(ctx: Context, src: tuple[View, View], dst: tuple[View, View, int], k: int, run: int,
           descending: bool) -> None:
    """Merge the sorted runs of ``run`` elements of the dense rows ``src`` pairwise into
    ``dst``."""
    (src_values, src_indices), (values, indices, dst_axis) = src, dst
    last = src_values.ndim - 1
    n = src_values.shape[last]
    for rows, in_args, o_args, dims in _row_launches(src_values, last, values, dst_axis):
        blocks = cube.cdiv(n, MERGE_BLOCK)
        merge_kernel[(rows * blocks,)](
            src_values.storage, src_indices.storage, *in_args, values.storage, indices.storage,
            *o_args, values.strides[dst_axis], n, k, run, run.bit_length(), blocks, *dims,
            int(descending), KT=key_dtype(src_values.dtype), IT=indices.dtype,
            BLOCK=MERGE_BLOCK, target=ctx.target)


def sort(ctx: Context, x: View, axis: int, k: int, descending: bool,
         index_dtype: DType) -> tuple[View, View]:
    """The first ``k`` elements of ``x`` sorted along ``axis``, and their indices along it.

    Results are contiguous, of ``x``'s shape with ``k`` elements along ``axis``;
    ``k = x.shape[axis]`` is a full sort, a smaller ``k`` is ``topk``. Rows longer than the
    target's segment are ranked in segments, then merged in ``log2(n / segment)`` passes
    through scratch rows.
    """
    n = x.shape[axis]
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    values, indices = ctx.new(shape, x.dtype), ctx.new(shape, index_dtype)
    if values.numel == 0:
        return values, indices
    out = (values, indices, axis)
    if _tile_sortable(ctx, x, n):
        _tile_sort(ctx, x, axis, out, k, descending)
        return values, indices
    segment = SEGMENTS[ctx.target.partition(":")[0]]
    if n <= segment:
        _rank(ctx, x, axis, out, k, n, descending)
        return values, indices
    rows_shape = _drop(x.shape, axis) + (n,)
    scratch = [(ctx.new(rows_shape, x.dtype), ctx.new(rows_shape, cube.int32))
               for _ in range(2 if n > 2 * segment else 1)]
    _rank(ctx, x, axis, (*scratch[0], len(rows_shape) - 1), n, segment, descending)
    run, turn = segment, 0
    while run < n:
        final = 2 * run >= n
        dst = out if final else (*scratch[1 - turn], len(rows_shape) - 1)
        _merge(ctx, scratch[turn], dst, k if final else n, run, descending)
        run, turn = 2 * run, 1 - turn
    return values, indices
