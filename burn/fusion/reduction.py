"""Reductions that compute their input's pending elementwise ops in the same kernel.

``x.sum()``, ``mean``, ``prod``, ``max``, ``min``, ``any`` and ``all`` over axes of a value
``Fusion`` has recorded but not computed (``((pred - y) ** 2).mean()``) run as one generated
kernel: ``kernels.reduce``'s row kernel with its load replaced by the DAG's leaves and
steps. The elementwise result is never written to memory and read back, and the chain and
the reduction cost one launch. ``var``/``std`` and ``logsumexp`` take two, as their
unfused kernels do (the mean or the max, then the deviations or exponentials around it),
each computing the chain.

The kernel sees the value as ``kernels.reduce`` sees a view: rows over the kept axes, each
reducing the reduced ones, both groups collapsed on the host (``kernels.rows.row_groups``)
over every leaf's strides at once, so a broadcast leaf (a bias, a mean) is read through its
stride-0 axes. Each step rounds to its dtype as the unfused op stores it, so the reduction
adds the same values the unfused one would read. Few long rows are split over cubes, as
``kernels.reduce`` splits them: the fused kernel writes the partial results and the plain
reduction kernel combines them. A reshape of the value (``logits.reshape(-1, vocab)``) is
read through each leaf's strides for the new shape, where its layout has them (a broadcast
bias does along the merged leading axes; a transposed leaf does not: the value is then
computed first).

Example:
    >>> fusion = burn.Fusion(burn.Cpu())
    >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], backend=fusion)
    >>> ((x * 2 - 1) ** 2).sum(axis=1).tolist()   # one kernel: mul, sub, square, the sum
    [10.0, 74.0]
    >>> fusion.stats.reductions
    1
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cubepy.ir.dtypes import DType
from kernels import reduce
from kernels.layout import Context, View, contiguous_strides, scalar, view_strides
from kernels.rows import Group, identity, launch_options, row_groups
from kernels.strided import known_step

from . import codegen
from .graph import Lazy


def leaf_params(count: int) -> list[str]:
    """A generated row kernel's parameters for ``count`` leaves: each leaf's storage, offset,
    and strides over the rows and the columns."""
    params = []
    for i in range(count):
        params += [f"x{i}", f"x{i}o", *(f"x{i}r{j}" for j in range(4)),
                   *(f"x{i}c{j}" for j in range(4))]
    return params


def chain_params(key: tuple[Any, ...]) -> list[str]:
    """The parameters of a row kernel computing the chain of ``key`` (``(kind, steps, leaf
    dtypes, constant dtypes, ...)``): its leaves', constants' and clamp bounds'."""
    steps, leaf_dtypes, constant_dtypes = key[1:4]
    return [*leaf_params(len(leaf_dtypes)), *(f"c{i}" for i in range(len(constant_dtypes))),
            *(f"s{j}" for j in range(sum(codegen.scalar_count(step) for step in steps)))]


def layout_params(count: int) -> list[str]:
    """A generated row kernel's last parameters, the comptimes of its ``Layout``
    (``Layout.comptimes``): the row and column ranks, the tile, and each of ``count`` leaves'
    column step."""
    return ["ROW_RANK: cube.Comptime[int]", "COL_RANK: cube.Comptime[int]",
            "ROWS: cube.Comptime[int]", "BLOCK: cube.Comptime[int]",
            *(f"X{i}CS: cube.Comptime[int]" for i in range(count))]


def row_bases(count: int) -> list[str]:
    """Lines of a row kernel: ``rows`` (this cube's), ``row_ok`` and each leaf's row bases."""
    return ["    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)",
            "    row_ok = rows < n_rows",
            *(f"    b{i} = x{i}o + element_offset(rows, ROW_RANK, rd1, rd2, rd3, "
              f"x{i}r0, x{i}r1, x{i}r2, x{i}r3)" for i in range(count))]


def chain_lines(steps: tuple[Any, ...], count: int, indent: str) -> list[str]:
    """Lines loading ``count`` leaves at the tile ``cols`` of every row (under the mask ``m``)
    and computing ``steps`` on them: ``t{len(steps) - 1}`` is the value."""
    # masked lanes read 1: defined for every op (log, 1/x, ...), as in the unfused kernels
    lines = [f"{indent}x{i}v = cube.load(x{i} + b{i}[:, None] + stepped_offset(cols, X{i}CS, "
             f"COL_RANK, cd1, cd2, cd3, x{i}c0, x{i}c1, x{i}c2, x{i}c3)[None, :], mask=m, "
             "other=1)" for i in range(count)]
    return lines + [f"{indent}t{j} = {codegen.expression(step)}" for j, step in enumerate(steps)]


def reduction_source(name: str, key: tuple[Any, ...]) -> str:
    """The cubepy source of the fused reduction ``name`` for ``key``: ``("reduce", steps,
    leaf dtypes, constant dtypes, centered)`` (the steps as ``codegen.trace`` writes them;
    ``centered``: the kernel reads a center per row, a variance's mean or a logsumexp's max)."""
    _, steps, leaf_dtypes, _, centered = key
    count = len(leaf_dtypes)
    params = [*chain_params(key), "rd1", "rd2", "rd3", "n_rows", "cd1", "cd2", "cd3", "n_cols",
              "chunk", *(["center"] if centered else []), "out", "ident", "divisor",
              "OP: cube.Comptime[str]", "POST: cube.Comptime[str]",
              "AT: cube.Comptime[object]", "DT: cube.Comptime[object]", *layout_params(count)]
    lines = ["@cube.kernel", f"def {name}({', '.join(params)}):", *row_bases(count),
             "    begin = cube.cube_pos(1) * chunk",
             "    end = chunk_end(begin, chunk, n_cols)",
             # without a center, the row's center is unused: zeros (any pointer would do)
             f"    c, shift = row_center({'center' if centered else 'out'}, rows, row_ok, OP, "
             "POST, ROWS, AT)",
             "    acc = cube.zeros((ROWS, BLOCK), AT) + ident",
             "    for start in range(begin, end, BLOCK):",
             "        cols = start + cube.arange(0, BLOCK)",
             "        m = row_ok[:, None] & (cols < end)[None, :]",
             *chain_lines(steps, count, "        "),
             # masked lanes become the op's identity in `prepare`
             f"        acc = combine(acc, prepare(t{len(steps) - 1}, m, shift, ident, OP, AT), "
             "OP)",
             "    r = finish_rows(acc, c, divisor, OP, POST, ROWS, BLOCK)",
             "    cube.store(out + rows * cube.cube_count(1) + cube.cube_pos(1), r.to(DT), "
             "mask=row_ok)"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Layout:
    """How a reduction kernel addresses a value's leaves: the kept and the reduced axes
    collapsed over every leaf's strides, each leaf's stride arguments and step along the
    columns (``strided.known_step``: a comptime, so the cpu's loop loads a leaf in order as a
    vector and a leaf broadcast along the row once), and the launch."""

    rows: Group
    cols: Group
    leaf_args: tuple[tuple[int, ...], ...]
    col_steps: tuple[int, ...]
    how: reduce.Plan

    def comptimes(self, count: int, rows: int, block: int) -> dict[str, int]:
        """``layout_params`` as keyword arguments of a launch in tiles of ``rows`` x ``block``
        reading ``count`` leaves."""
        return {"ROW_RANK": self.rows.rank, "COL_RANK": self.cols.rank, "ROWS": rows,
                "BLOCK": block,
                **{f"X{i}CS": step for i, step in enumerate(self.col_steps[:count])}}


@dataclass
class Rows:
    """A pending value seen as rows: its trace, its ``Layout``, the reduced axes' element
    count and the result's shape."""

    traced: codegen.Trace
    layout: Layout
    count: int
    shape: tuple[int, ...]


# A training step reduces the same layouts again and again, and collapsing and planning
# them took about 15 µs of a small fused reduction's 113 on the cpu (BENCHMARKS.md, "Fusion
# into reductions"): hence the cache. The plans read only the context's target.
@functools.lru_cache(maxsize=4096)
def _layout(target: str, shape: tuple[int, ...], axes: tuple[int, ...],
            strides: tuple[tuple[int, ...], ...]) -> Layout | None:
    ctx = Context(target, None)
    groups = row_groups(ctx, shape, strides, axes)
    if groups is None:
        return None
    rows, cols = groups
    return Layout(rows, cols, tuple((*rows.args(i), *cols.args(i)) for i in range(len(strides))),
                  tuple(known_step(target, cols.rank, cols.strides[i])
                        for i in range(len(strides))),
                  reduce.tile_plan(ctx, rows, cols))


def value_rows(ctx: Context, root: Lazy, shape: tuple[int, ...], axes: Sequence[int],
               max_leaves: int, with_result: bool = False) -> Rows | None:
    """``root`` read as ``shape`` (its own or a reshape of it) as rows reducing ``axes``;
    None when its leaves' layouts do not take the reshape or do not collapse to the axes a
    kernel addresses, or when it loads more than ``max_leaves`` buffers (one fewer than
    elementwise kernels for a reduction that reads a center): the caller then computes
    ``root`` and reduces it. ``with_result``: the kernel also writes a contiguous result of
    ``shape`` (a softmax), addressed through the same groups: its stride arguments are the
    last of ``layout.leaf_args``."""
    axes = reduce.check_axes(View(root, 0, shape, contiguous_strides(shape), root.dtype), axes)
    traced = codegen.trace(root)
    if not traced.leaves or len(traced.leaves) > max_leaves:
        return None  # (a value of constants alone is computed first: it has no layout)
    strides = [tuple(v.strides) if shape == root.shape
               else view_strides(root.shape, v.strides, shape) for v in traced.leaves]
    if any(s is None for s in strides):
        return None  # a leaf whose layout a reshape would copy (a transposed one)
    if with_result:
        strides.append(contiguous_strides(shape))
    layout = _layout(ctx.target, shape, axes, tuple(map(tuple, strides)))
    if layout is None:
        return None
    return Rows(traced, layout, math.prod(shape[a] for a in axes),
                tuple(n for a, n in enumerate(shape) if a not in axes))


def run(ctx: Context, value: Rows, op: str, post: str, compute: DType, out_dtype: DType,
        center: View | None = None, divisor: float = 1.0) -> View:
    """``op`` in ``kernels.reduce``'s kernel terms (``sum``, ``sqdev`` around ``center``...)
    over every row of ``value`` with its chain computed in the kernel, finished by ``post``
    (``scale``: divided by ``divisor``; ``sqrt``; ``lse``) into a new view of ``out_dtype``."""
    out = ctx.new(value.shape, out_dtype)
    if not out.numel:
        return out
    traced, layout = value.traced, value.layout
    rows, cols, how = layout.rows, layout.cols, layout.how
    key = ("reduce", traced.key[0], traced.key[1], traced.key[3], center is not None)
    kernel = codegen.kernel_for(key, "fused_reduce", reduction_source)
    split = how.splits > 1  # partial results per cube first, combined by a second launch
    target = ctx.new((rows.numel, how.splits), compute) if split else out
    args: list[Any] = []
    for leaf, strides in zip(traced.leaves, layout.leaf_args):
        args += [leaf.storage, leaf.offset, *strides]
    kernel[how.grid](
        *args, *traced.constants, *traced.scalars, *rows.dim_args, rows.numel,
        *cols.dim_args, cols.numel, how.chunk, *([] if center is None else [center.storage]),
        target.storage, scalar(identity(op, compute), compute),
        scalar(1.0 if split else divisor, compute), OP=op, POST="scale" if split else post,
        AT=compute, DT=target.dtype, target=ctx.target,
        **layout.comptimes(len(traced.leaves), how.tile_rows, how.block),
        **launch_options(ctx, how.tile_rows * how.block))
    if split:
        reduce.reduce_partials(ctx, op, post, target, compute, out, center, divisor)
    return out


def fused_reduce(ctx: Context, value: Rows, op: str, compute: DType, out_dtype: DType
                 ) -> View:
    """``op`` (one of ``kernels.reduce.REDUCE_OPS``) of ``value``'s rows."""
    op, compute, divisor = reduce.kernel_op(op, value.count, compute)
    return run(ctx, value, op, "scale", compute, out_dtype, divisor=divisor)


def fused_variance(ctx: Context, value: Rows, correction: float, sqrt: bool, compute: DType,
                   out_dtype: DType) -> View:
    """The variance (``sqrt``: the standard deviation) of ``value``'s rows: two passes, each
    computing the chain, as ``kernels.reduce.variance`` makes two over a stored value."""
    mean = run(ctx, value, "sum", "scale", compute, compute, divisor=value.count)
    return run(ctx, value, "sqdev", "sqrt" if sqrt else "scale", compute, out_dtype, mean,
               max(value.count - correction, 0))


def fused_logsumexp(ctx: Context, value: Rows, compute: DType, out_dtype: DType) -> View:
    """``logsumexp`` of ``value``'s rows: the max, then the sum of exponentials around it."""
    peak = run(ctx, value, "max", "scale", compute, compute)
    return run(ctx, value, "sumexp", "lse", compute, out_dtype, peak)
