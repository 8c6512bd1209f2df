"""Reading strided views inside kernels: the element offset of a linear index.

Launchers collapse every operand's layout with ``layout.launch_plan`` and pass, per operand,
its offset and four strides, and once the three inner sizes ``d1, d2, d3``. In the kernel,
``element_offset`` turns the linear index of a result element (row-major over the collapsed
shape) into the operand's element offset. ``RANK`` is comptime: 0 (dense) costs nothing,
and only the axes a layout has are computed.

Example (inside a kernel):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    v = cube.load(x + xo + element_offset(idx, RANK, d1, d2, d3, xs0, xs1, xs2, xs3), idx < n)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cubepy as cube

from .layout import Context, LaunchPart

#: the shortest innermost axis a cpu strided kernel reads row by row (``by_rows``), in cubes
#: of the row's length rounded up to a power of two (at most the cpu's block): shorter rows
#: would make cubes too small to pay for their loop (BENCHMARKS.md, "Strided elementwise
#: ops on the cpu target" and "The host path of small elementwise ops")
CPU_ROW_LANES = 64


@cube.func
def element_offset(idx, RANK, d1, d2, d3, s0, s1, s2, s3):
    # Folded at compile time: RANK picks the arithmetic; 0 is the dense case.
    if RANK == 0:
        offset = idx
    elif RANK == 1:
        offset = idx * s3
    elif RANK == 2:
        offset = (idx // d3) * s2 + (idx % d3) * s3
    elif RANK == 3:
        inner = idx % (d2 * d3)
        offset = (idx // (d2 * d3)) * s1 + (inner // d3) * s2 + (inner % d3) * s3
    else:
        plane = d1 * d2 * d3
        rest = idx % plane
        inner = rest % (d2 * d3)
        offset = ((idx // plane) * s0 + (rest // (d2 * d3)) * s1 + (inner // d3) * s2
                  + (inner % d3) * s3)
    return offset


@cube.func
def dense_offset(idx, STEP):
    # an operand in order (STEP 1), or one element broadcast over all (STEP 0: a number
    # made a tensor, or a row's one value, read by every lane)
    if STEP == 1:
        offset = idx
    else:
        offset = idx * 0
    return offset


@cube.func
def stepped_offset(idx, STEP, RANK, d1, d2, d3, s0, s1, s2, s3):
    # element_offset when the layout's step along idx is known at compile time (`known_step`:
    # 0 or 1, so the cpu's loop loads one value, or a vector); else (-1) from the strides
    if STEP == -1:
        offset = element_offset(idx, RANK, d1, d2, d3, s0, s1, s2, s3)
    else:
        offset = dense_offset(idx, STEP)
    return offset


def known_step(target: str, rank: int, strides: Sequence[int]) -> int:
    """``stepped_offset``'s STEP for an operand of ``element_offset`` layout ``rank`` and
    four ``strides``: on the cpu target 1 (in order), 0 (one element broadcast) or -1 (any
    other); GPU targets always take -1 and compile one specialization, the division hiding
    behind memory there.

    Example:
        >>> known_step("cpu", 1, (0, 0, 0, 1)), known_step("cpu", 4, (0, 0, 0, 0))
        (1, 0)
        >>> known_step("cpu", 1, (0, 0, 0, 3)), known_step("triton", 1, (0, 0, 0, 1))
        (-1, -1)
    """
    if not target.startswith("cpu"):
        return -1
    if rank == 0 or (rank == 1 and strides[3] == 1):
        return 1
    return -1 if any(strides) else 0


@cube.func
def lanes(n, d3, BLOCK, BY_ROW):
    # This cube's elements: their linear indices in the result, their columns (indices along
    # the innermost axis, d3 long) and which exist. BY_ROW: cube (i, r) takes columns
    # [i * BLOCK, (i + 1) * BLOCK) of row r (the grid of `strided_launch`); else BLOCK elements
    # in order.
    if BY_ROW:
        cols = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
        idx = cube.cube_pos(1) * d3 + cols
        m = cols < d3
    else:
        idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
        cols = idx
        m = idx < n
    return idx, cols, m


@cube.func
def strided_offset(idx, cols, BY_ROW, STEP, RANK, d1, d2, d3, s0, s1, s2, s3):
    # element_offset of `lanes`' elements; BY_ROW, the row's offset once per cube (the outer
    # axes as a layout of one rank less) plus a step along the row: no division per element.
    # STEP, the step when known at compile time (`StridedLaunch.steps`): a broadcast's 0
    # lets the cpu's loop load one value per row, 1 lets it load the row as a vector.
    if BY_ROW:
        row = element_offset(cube.cube_pos(1), RANK - 1, 1, d1, d2, 0, s0, s1, s2)
        if STEP == 0:
            offset = row + cols * 0
        elif STEP == 1:
            offset = row + cols
        else:
            offset = row + cols * s3
    else:
        offset = element_offset(idx, RANK, d1, d2, d3, s0, s1, s2, s3)
    return offset


@cube.func
def cube_rows(ROWS, n_rows, xo, RANK, d1, d2, d3, xs0, xs1, xs2, xs3, os0, os1, os2, os3):
    # The ROWS rows of this cube: their indices, which exist, and where each starts in x
    # (from xo, with strides xs) and in out (strides os), through element_offset.
    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)
    x_base = xo + element_offset(rows, RANK, d1, d2, d3, xs0, xs1, xs2, xs3)
    return rows, rows < n_rows, x_base, element_offset(rows, RANK, d1, d2, d3, os0, os1, os2,
                                                       os3)


def by_rows(ctx: Context, part: LaunchPart) -> bool:
    """Whether ``part``'s strided kernel reads row by row (``lanes``' BY_ROW): on the cpu
    target, where a division per element is most of a strided op's time, for layouts of two
    axes or more whose rows are at least ``CPU_ROW_LANES`` long."""
    return (ctx.target.startswith("cpu") and part.layout.rank >= 2
            and part.layout.dims[2] >= CPU_ROW_LANES)


@dataclass(frozen=True)
class StridedLaunch:
    """How a strided kernel (``lanes``, ``strided_offset``) is launched over one part: its
    grid, its elements per cube, whether it reads row by row and, per operand, the step
    along the row when known (0 or 1; else -1: the stride argument; GPU targets always take
    -1, so they compile one specialization)."""

    grid: tuple[int, ...]
    block: int
    by_row: bool
    steps: tuple[int, ...]
    rank: int

    def comptimes(self, *step_names: str | None) -> dict[str, Any]:
        """The kernel's BY_ROW, RANK, BLOCK and each operand's step under its name in
        ``step_names`` (one per operand; None: the operand takes none)."""
        steps = {name: step for name, step in zip(step_names, self.steps) if name}
        return {"BY_ROW": self.by_row, **steps, "RANK": self.rank, "BLOCK": self.block}


def strided_launch(ctx: Context, part: LaunchPart) -> StridedLaunch:
    """The ``StridedLaunch`` of ``part`` on ``ctx``'s target."""
    block, by_row = ctx.block(part.numel), by_rows(ctx, part)
    if by_row:
        d3 = part.layout.dims[2]
        # a row of 128 in a cube of 128, not 1024 lanes mostly masked (a bias add's rows)
        block = min(block, 1 << (d3 - 1).bit_length())
        grid: tuple[int, ...] = (cube.cdiv(d3, block), part.numel // d3)
    else:
        grid = (cube.cdiv(part.numel, block),)
    steps = tuple(s[3] if by_row and s[3] in (0, 1) else -1 for s in part.layout.strides)
    return StridedLaunch(grid, block, by_row, steps, part.layout.rank)


def operand_args(part: LaunchPart, index: int) -> list[Any]:
    """Operand ``index``'s kernel arguments for ``part``: its offset and four strides."""
    return [part.offsets[index], *part.layout.strides[index]]


def layout_args(part: LaunchPart) -> list[int]:
    """The shared kernel arguments of ``part``: the element count and ``d1, d2, d3``."""
    return [part.numel, *part.layout.dims]


def without_axis(strides: Sequence[int], axis: int) -> tuple[int, ...]:
    """``strides`` with ``axis``'s set to 0: a view that reads one slice along it, for the
    gathers and scatters, which add the index's own offset along ``axis``."""
    return tuple(0 if d == axis else s for d, s in enumerate(strides))
