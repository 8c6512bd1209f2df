"""Reductions' host side: rows of a strided view, tile shapes and launch options.

A reduction, scan, softmax or norm sees its input as *rows*: the kept axes index the rows and
the reduced axes (in their order) form each row. ``group`` collapses both groups of axes;
``row_problem`` and ``axis_rows`` describe the rows of one view for a kernel (see
``kernels/reduce.py``); the rest pick tile shapes and Triton launch options per target.

Example:
    >>> pow2(37)
    64
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubepy.ir.dtypes import DType

from . import elementwise
from .layout import MAX_RANK, Context, View, collapse

# A cube's tile holds this many elements (WGSL keeps tiles in workgroup memory: smaller).
TILE_ELEMENTS = {"wgsl": 1024}
DEFAULT_TILE_ELEMENTS = 4096
# Enough cubes to fill a large GPU: when rows give far fewer, each is split over cubes.
TARGET_CUBES = 1024
# The cpu target runs a tile of one lane axis, (1, B) or (B, 1), as fused loops over its lanes
# (cubepy/backends/cpu/loops.py); any other tile shape as NumPy operations on whole tiles,
# ~10x slower per element. Rows are split until each lane adds at most CPU_LANE_DEPTH values
# before the lanes are added as a tree (the rounding of the GPU-sized tiles), and until there
# are CPU_TARGET_CUBES cubes to share among the cores.
CPU_LANES = 1024
CPU_LANE_DEPTH = 32
CPU_TARGET_CUBES = 16




@dataclass(frozen=True)
class Group:
    """Some axes of one or more operands, addressed in a kernel by one linear index.

    ``rank`` is 0 when the axes collapse to one axis of stride 1 in every operand (plain
    ``index`` addressing), 1 when they collapse to one axis (``index * stride``), else 4
    (``element_offset``'s general case). ``strides[k]`` are operand ``k``'s four strides.
    """

    numel: int
    rank: int
    dims: tuple[int, int, int]
    strides: tuple[tuple[int, int, int, int], ...]

    def args(self, operand: int) -> list[int]:
        """Operand ``operand``'s four strides, as kernel arguments."""
        return list(self.strides[operand])

    @property
    def dim_args(self) -> list[int]:
        return list(self.dims)


def group(shape: Sequence[int], strides: Sequence[Sequence[int]], single: bool = True
          ) -> Group | None:
    """The ``Group`` of axes of ``shape`` with each operand's ``strides``; None when they do
    not collapse to ``MAX_RANK`` axes. ``single=False`` uses the general rank for any layout
    that is not dense (rows: their offsets are computed once per row, so generality is free).

    Example:
        >>> group((4, 8), [(8, 1)]).rank, group((4, 8), [(1, 4)]).rank
        (0, 4)
    """
    numel = math.prod(shape)
    dims, collapsed = collapse(shape, *strides)
    if len(dims) > MAX_RANK:
        return None
    if len(dims) <= 1 and all(not s or s[0] == 1 for s in collapsed):
        return Group(numel, 0, (1, 1, 1), tuple((0, 0, 0, 1) for _ in strides))
    if len(dims) == 1 and single:
        return Group(numel, 1, (1, 1, 1), tuple((0, 0, 0, s[0]) for s in collapsed))
    pad = MAX_RANK - len(dims)
    padded = [1] * pad + dims
    return Group(numel, 4, (padded[1], padded[2], padded[3]),
                 tuple(tuple([0] * pad + s) for s in collapsed))  # type: ignore[misc]


def single_row_axis(ctx: Context) -> bool:
    """Whether rows that collapse to one strided axis are addressed as ``index * stride``
    (rank 1) rather than by the general rank: on the cpu, where a wide tile holds one row
    (``lane_tile_shape``), the row's offset is computed once per cube, and the general
    rank's six divisions cost as much as reducing a row of 64 values."""
    return ctx.target.startswith("cpu")


@dataclass(frozen=True)
class RowProblem:
    """``x`` seen as rows: the kept axes (``rows``) and the reduced ones (``cols``)."""

    x: View
    rows: Group
    cols: Group


def row_groups(ctx: Context, shape: Sequence[int], strides: Sequence[Sequence[int]],
               axes: Sequence[int]) -> tuple[Group, Group] | None:
    """The kept axes of ``shape`` (the rows) and ``axes`` (each row's columns) as ``Group``s
    over every operand's ``strides``; None when either needs more than ``MAX_RANK`` axes.

    Example:
        >>> rows, cols = row_groups(Context("cpu", None), (4, 8), [(8, 1)], (1,))
        >>> (rows.numel, rows.rank), (cols.numel, cols.rank)
        ((4, 1), (8, 0))
    """
    return _row_groups(single_row_axis(ctx), tuple(shape), tuple(map(tuple, strides)),
                       tuple(axes))


@functools.lru_cache(maxsize=4096)  # a training step reduces the same layouts every step
def _row_groups(single: bool, shape: tuple[int, ...], strides: tuple[tuple[int, ...], ...],
                axes: tuple[int, ...]) -> tuple[Group, Group] | None:
    kept = [a for a in range(len(shape)) if a not in axes]
    rows = group([shape[a] for a in kept], [[s[a] for a in kept] for s in strides],
                 single=single)
    cols = group([shape[a] for a in axes], [[s[a] for a in axes] for s in strides])
    return None if rows is None or cols is None else (rows, cols)


def row_problem(ctx: Context, x: View, axes: Sequence[int]) -> RowProblem:
    """``x`` as rows over the kept axes, each reducing ``axes``. A layout whose groups do not
    collapse to ``MAX_RANK`` axes is first copied with the reduced axes moved last."""
    groups = row_groups(ctx, x.shape, [x.strides], axes)
    if groups is not None:
        return RowProblem(x, *groups)
    kept = [a for a in range(x.ndim) if a not in axes]
    order = kept + list(axes)
    moved = elementwise.copy(ctx, x.with_layout(x.offset, [x.shape[a] for a in order],
                                                [x.strides[a] for a in order]))
    return row_problem(ctx, moved, list(range(len(kept), x.ndim)))


@dataclass(frozen=True)
class AxisRows:
    """``x`` and a result ``out`` of its shape as rows along one (collapsed) group of axes:
    ``rows`` addresses the other axes in both (operands 0 and 1); along a row, element ``j``
    is at ``j * x_step`` and ``j * out_step`` (``contig``: both steps are 1)."""

    x: View
    rows: Group
    n_cols: int
    x_step: int
    out_step: int

    @property
    def contig(self) -> bool:
        return (self.x_step == 1 and self.out_step == 1) or self.n_cols == 1


def axis_rows(ctx: Context, x: View, out: View, axes: Sequence[int]) -> AxisRows:
    """The rows of ``x`` and ``out`` along ``axes`` (one axis, or axes that collapse into
    one in ``out``); ``x`` is copied first when its layout does not collapse."""
    kept = [a for a in range(x.ndim) if a not in axes]
    rows = group([x.shape[a] for a in kept], [[v.strides[a] for a in kept] for v in (x, out)],
                 single=single_row_axis(ctx))
    cols = group([x.shape[a] for a in axes], [[v.strides[a] for a in axes] for v in (x, out)])
    if rows is None or cols is None or cols.rank == 4:
        if x.is_contiguous:
            raise ValueError(f"axes {tuple(axes)} of {out.shape} do not collapse into one")
        return axis_rows(ctx, elementwise.copy(ctx, x), out, axes)
    return AxisRows(x, rows, cols.numel, cols.strides[0][3], cols.strides[1][3])


def pow2(n: int) -> int:
    return 1 << max(0, (max(int(n), 1) - 1).bit_length())


def tile_elements(ctx: Context) -> int:
    return TILE_ELEMENTS.get(ctx.target, DEFAULT_TILE_ELEMENTS)


def tile_shape(ctx: Context, n_rows: int, n_cols: int, tall: bool) -> tuple[int, int]:
    """``(ROWS, BLOCK)`` of a cube's tile, always ``tile_elements`` large. Wide (whole rows,
    or long pieces of them, and as many rows as fit) unless ``tall``: when the rows are the
    contiguous axis, 32 to 256 rows share the tile so that loads stay coalesced, fewer when
    that leaves under about 128 cubes. A wide tile depends only on the row length, which keeps
    the number of kernel specializations small."""
    limit = tile_elements(ctx)
    if tall:
        rows = min(limit // 16, pow2(n_rows), max(32, pow2(n_rows) // 128))
        return rows, limit // rows
    block = min(max(pow2(n_cols), 16), limit)
    return limit // block, block


def lane_tile_shape(n_rows: int, n_cols: int, tall: bool) -> tuple[int, int]:
    """``(ROWS, BLOCK)`` of a cpu tile: one row of up to ``CPU_LANES`` columns, or when
    ``tall`` (the rows are the contiguous axis) up to ``CPU_LANES`` rows, one column at a time.

    Example:
        >>> lane_tile_shape(4096, 4096, False), lane_tile_shape(4096, 4096, True)
        ((1, 1024), (1024, 1))
    """
    if tall:
        return min(pow2(n_rows), CPU_LANES), 1
    return 1, min(max(pow2(n_cols), 16), CPU_LANES)


def rows_per_tile(ctx: Context, block: int) -> int:
    """The rows of a ``(ROWS, block)`` tile of ``tile_elements``; one on the cpu, whose tiles
    of one lane axis run as fused loops (``CPU_LANES``).

    Example:
        >>> rows_per_tile(Context("triton", None), 256), rows_per_tile(Context("cpu", None), 256)
        (16, 1)
    """
    if ctx.target.startswith("cpu"):
        return 1
    return max(1, tile_elements(ctx) // block)


def lane_splits(row_tiles: int, n_cols: int, block: int) -> tuple[int, int]:
    """``split_columns`` for the cpu's lane tiles: every lane adds at most ``CPU_LANE_DEPTH``
    values, and rows are split further while there are under ``CPU_TARGET_CUBES`` cubes."""
    splits = math.ceil(n_cols / (CPU_LANE_DEPTH * block))
    if row_tiles * splits < CPU_TARGET_CUBES:
        splits = max(splits, min(math.ceil(CPU_TARGET_CUBES / row_tiles), n_cols // block))
    if splits <= 1:
        return 1, max(n_cols, 1)
    chunk = math.ceil(math.ceil(n_cols / splits) / block) * block
    return math.ceil(n_cols / chunk), chunk


def split_columns(row_tiles: int, n_cols: int, block: int) -> tuple[int, int]:
    """``(splits, chunk)``: how many cubes share each row and the columns each one reduces.
    Rows are split only when there are too few row tiles to fill the device, each cube
    keeping at least four tiles of work."""
    if row_tiles * 4 >= TARGET_CUBES or n_cols < 8 * block:
        return 1, max(n_cols, 1)
    splits = min(math.ceil(TARGET_CUBES / row_tiles), n_cols // (4 * block))
    chunk = math.ceil(math.ceil(n_cols / splits) / block) * block
    return math.ceil(n_cols / chunk), chunk


def launch_options(ctx: Context, elements: int) -> dict[str, Any]:
    """Triton launch options for a tile of ``elements``: more warps for wider tiles."""
    if ctx.target != "triton":
        return {}
    return {"num_warps": 4 if elements <= 2048 else 8 if elements <= 4096 else 16}


def identity(op: str, dtype: DType) -> Any:
    """The value ``op`` starts from (and fills masked lanes with) in ``dtype``."""
    if op in ("sum", "any", "sqdev", "sumexp"):
        return 0
    if op in ("prod", "all"):
        return 1
    high = op in ("min", "argmin")
    if dtype.is_float:
        return math.inf if high else -math.inf
    info = np.iinfo(dtype.numpy)
    return info.max if high else info.min
