"""Reductions that compute their input's pending elementwise ops in the same kernel.

``x.sum()``, ``mean``, ``prod``, ``max``, ``min``, ``any`` and ``all`` over axes of a value
``Fusion`` has recorded but not computed (``((pred - y) ** 2).mean()``) run as one generated
kernel: ``kernels.reduce``'s row kernel with its load replaced by the DAG's leaves and
steps. The elementwise result is never written to memory and read back, and the chain and
the reduction cost one launch.

The kernel sees the value as ``kernels.reduce`` sees a view: rows over the kept axes, each
reducing the reduced ones, both groups collapsed on the host (``kernels.rows.group``) over
every leaf's strides at once, so a broadcast leaf (a bias, a mean) is read through its
stride-0 axes. Each step rounds to its dtype as the unfused op stores it, so the reduction
adds the same values the unfused one would read. Few long rows are split over cubes, as
``kernels.reduce`` splits them: the fused kernel writes the partial results and the plain
reduction kernel combines them.

Example:
    >>> fusion = burn.Fusion(burn.Cpu())
    >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], backend=fusion)
    >>> ((x * 2 - 1) ** 2).sum(axis=1).tolist()   # one kernel: mul, sub, square, the sum
    [10.0, 74.0]
    >>> fusion.stats.reductions
    1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cubepy.ir.dtypes import DType
from kernels import reduce
from kernels.layout import Context, View, scalar
from kernels.rows import Group, group, identity, launch_options, single_row_axis

from . import codegen
from .graph import Lazy


def reduction_source(name: str, key: tuple[Any, ...]) -> str:
    """The cubepy source of the fused reduction ``name`` for ``key``: ``("reduce", steps,
    leaf dtypes, constant dtypes)`` (the steps as ``codegen.trace`` writes them)."""
    _, steps, leaf_dtypes, constant_dtypes = key
    leaves = range(len(leaf_dtypes))
    params = []
    for i in leaves:  # a leaf's storage, offset, and strides over the rows and the columns
        params += [f"x{i}", f"x{i}o", *(f"x{i}r{j}" for j in range(4)),
                   *(f"x{i}c{j}" for j in range(4))]
    params += [f"c{i}" for i in range(len(constant_dtypes))]
    params += [f"s{j}" for j in range(sum(codegen.scalar_count(step) for step in steps))]
    params += ["rd1", "rd2", "rd3", "n_rows", "cd1", "cd2", "cd3", "n_cols", "chunk", "out",
               "ident", "divisor", "OP: cube.Comptime[str]", "AT: cube.Comptime[object]",
               "DT: cube.Comptime[object]", "ROW_RANK: cube.Comptime[int]",
               "COL_RANK: cube.Comptime[int]", "ROWS: cube.Comptime[int]",
               "BLOCK: cube.Comptime[int]"]
    lines = ["@cube.kernel", f"def {name}({', '.join(params)}):",
             "    rows = cube.cube_pos(0) * ROWS + cube.arange(0, ROWS)",
             "    row_ok = rows < n_rows"]
    lines += [f"    b{i} = x{i}o + element_offset(rows, ROW_RANK, rd1, rd2, rd3, "
              f"x{i}r0, x{i}r1, x{i}r2, x{i}r3)" for i in leaves]
    lines += ["    begin = cube.cube_pos(1) * chunk",
              "    end = chunk_end(begin, chunk, n_cols)",
              "    acc = cube.zeros((ROWS, BLOCK), AT) + ident",
              "    for start in range(begin, end, BLOCK):",
              "        cols = start + cube.arange(0, BLOCK)",
              "        m = row_ok[:, None] & (cols < end)[None, :]"]
    # masked lanes read 1 (defined for every op) and become the op's identity in `prepare`
    lines += [f"        x{i}v = cube.load(x{i} + b{i}[:, None] + element_offset(cols, COL_RANK, "
              f"cd1, cd2, cd3, x{i}c0, x{i}c1, x{i}c2, x{i}c3)[None, :], mask=m, other=1)"
              for i in leaves]
    lines += [f"        t{j} = {codegen.expression(step)}" for j, step in enumerate(steps)]
    lines += [f"        acc = combine(acc, prepare(t{len(steps) - 1}, m, ident, ident, OP, AT), "
              "OP)",
              "    r = finish(acc, OP, ROWS, BLOCK)",
              "    if r.dtype.is_float:",
              "        r = r / divisor",
              "    cube.store(out + rows * cube.cube_count(1) + cube.cube_pos(1), r.to(DT), "
              "mask=row_ok)"]
    return "\n".join(lines) + "\n"


def _groups(ctx: Context, leaves: Sequence[View], shape: tuple[int, ...],
            axes: tuple[int, ...]) -> tuple[Group, Group] | None:
    """The kept and the reduced axes of ``shape``, each collapsed over every leaf's strides;
    None when either group needs more axes than a kernel addresses."""
    kept = [a for a in range(len(shape)) if a not in axes]
    rows = group([shape[a] for a in kept], [[v.strides[a] for a in kept] for v in leaves],
                 single=single_row_axis(ctx))
    cols = group([shape[a] for a in axes], [[v.strides[a] for a in axes] for v in leaves])
    if rows is None or cols is None:
        return None
    return rows, cols


def fused_reduce(ctx: Context, op: str, root: Lazy, axes: Sequence[int], compute: DType,
                 out_dtype: DType) -> tuple[View, codegen.Trace] | None:
    """``op`` (one of ``kernels.reduce.REDUCE_OPS``) over ``axes`` of the pending value
    ``root``, its elementwise ops computed in the reduction's kernel: the result and the
    trace it ran, or None when the leaves' layouts do not collapse to the axes a kernel
    addresses (the caller then computes ``root`` and reduces it)."""
    shape = root.shape
    axes = reduce.check_axes(View(root, 0, shape, root.strides, root.dtype), axes)
    op, compute, divisor = reduce.kernel_op(op, shape, axes, compute)
    traced = codegen.trace(root)
    groups = _groups(ctx, traced.leaves, shape, axes) if traced.leaves else None
    if groups is None:  # (a value of constants alone is computed first: it has no layout)
        return None
    rows, cols = groups
    out = ctx.new(tuple(n for a, n in enumerate(shape) if a not in axes), out_dtype)
    if not out.numel:
        return out, traced
    key = ("reduce", traced.key[0], traced.key[1], traced.key[3])
    kernel = codegen.kernel_for(key, "fused_reduce", reduction_source)
    how = reduce.tile_plan(ctx, rows, cols)
    target = out if how.splits == 1 else ctx.new((rows.numel, how.splits), compute)
    args: list[Any] = []
    for i, leaf in enumerate(traced.leaves):
        args += [leaf.storage, leaf.offset, *rows.args(i), *cols.args(i)]
    kernel[how.grid](
        *args, *traced.constants, *traced.scalars, *rows.dim_args, rows.numel,
        *cols.dim_args, cols.numel, how.chunk, target.storage,
        scalar(identity(op, compute), compute),
        scalar(divisor if how.splits == 1 else 1.0, compute),
        OP=op, AT=compute, DT=target.dtype, ROW_RANK=rows.rank, COL_RANK=cols.rank,
        ROWS=how.tile_rows, BLOCK=how.block, target=ctx.target,
        **launch_options(ctx, how.tile_rows * how.block))
    if how.splits > 1:
        reduce.reduce_partials(ctx, op, "scale", target, compute, out, divisor=divisor)
    return out, traced
