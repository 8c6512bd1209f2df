"""Softmax and log-softmax that compute their input's pending elementwise ops in their kernel.

``softmax(scores * scale + mask)`` under ``Fusion`` is one generated kernel:
``kernels.softmax``'s single-pass row kernel (each row in one tile: its max, exponentials,
their sum and the result from registers) with its load replaced by the chain's leaves and
steps, as ``reduction`` does for the reductions. The scores before the softmax are never
written to memory and read back, and the chain and the softmax cost one launch.

The value is seen as ``reduction.value_rows`` sees it, with the result's (contiguous)
strides grouped with the leaves' so each row's base in the result comes from the same
collapsed axes. The softmax is fused where its rows are contiguous in the result (the axis
is the last one of size above 1, as an attention's or a classifier's is) and hold one tile
(``kernels.softmax.single_pass_limit``); otherwise ``Fusion`` computes the value and runs
the plain softmax, whose kernels read a strided axis in tall tiles and long rows in passes.

Example:
    >>> fusion = burn.Fusion(burn.Cpu())
    >>> x = burn.tensor([[0.0, 1.0], [2.0, 2.0]], backend=fusion)
    >>> [round(v, 4) for v in (x * 2 - 1).softmax(axis=1).numpy().ravel().tolist()]
    [0.1192, 0.8808, 0.5, 0.5]
    >>> fusion.stats.launches, fusion.stats.softmaxes
    (1, 1)
"""

from __future__ import annotations

import math
from typing import Any

import cubepy as cube
from cubepy.backends.wgsl.codegen_dot import workgroup_room
from cubepy.ir.dtypes import DType
from kernels import softmax as plain
from kernels.layout import Context, View
from kernels.rows import launch_options, pow2, rows_per_tile

from . import codegen
from .graph import Lazy
from .reduction import Rows, chain_lines, chain_params, layout_params, row_bases, value_rows


def softmax_source(name: str, key: tuple[Any, ...]) -> str:
    """The cubepy source of the fused softmax ``name`` for ``key``: ``("softmax", steps,
    leaf dtypes, constant dtypes)``, the steps as ``codegen.trace`` writes them."""
    steps, leaf_dtypes = key[1:3]
    count = len(leaf_dtypes)
    params = [*chain_params(key), "out", "or0", "or1", "or2", "or3", "rd1", "rd2", "rd3",
              "n_rows", "cd1", "cd2", "cd3", "n_cols", "LOG: cube.Comptime[bool]",
              "CT: cube.Comptime[object]", "DT: cube.Comptime[object]", *layout_params(count)]
    lines = ["@cube.kernel", f"def {name}({', '.join(params)}):", *row_bases(count),
             "    ob = element_offset(rows, ROW_RANK, rd1, rd2, rd3, or0, or1, or2, or3)",
             "    cols = cube.arange(0, BLOCK)",
             "    m = row_ok[:, None] & (cols < n_cols)[None, :]",
             *chain_lines(steps, count, "    "),
             # the result's rows are contiguous (see `softmax_rows`)
             f"    r = softmax_tile(t{len(steps) - 1}.to(CT), m, LOG)",
             "    cube.store(out + ob[:, None] + cols[None, :], r.to(DT), mask=m)"]
    return "\n".join(lines) + "\n"


def softmax_rows(ctx: Context, root: Lazy, shape: tuple[int, ...], axis: int,
                 max_leaves: int) -> Rows | None:
    """``root`` read as ``shape`` as rows along ``axis``, where a fused softmax can take it:
    rows contiguous in the result and held by one tile, leaves a kernel can address (see
    ``reduction.value_rows``); else None."""
    if any(n != 1 for n in shape[axis + 1:]):
        return None  # a strided axis: the plain kernels read it in tall tiles
    if pow2(shape[axis]) > plain.single_pass_limit(ctx):
        return None  # longer rows take two passes
    value = value_rows(ctx, root, shape, (axis,), max_leaves, with_result=True)
    if value is None or not tile_rows(ctx, value.count, len(value.traced.leaves)):
        return None
    return value


def tile_rows(ctx: Context, n_cols: int, leaves: int) -> int:
    """The rows of the fused kernel's tile for rows of ``n_cols`` reading ``leaves`` leaves:
    the plain single-pass kernel's, except on WGSL, whose row reductions read each loaded
    tile through workgroup memory (4 bytes an element, and a few a row for the partial
    results): there, the rows that adapter's workgroup memory holds; 0 if not one row."""
    block = max(pow2(n_cols), 16)
    rows = rows_per_tile(ctx, block)
    if ctx.target != "wgsl":
        return rows
    room = workgroup_room(cube.target_info("wgsl").limits)
    fit = room // (4 * block * leaves + 16)
    return min(rows, 1 << (fit.bit_length() - 1)) if fit else 0


def fused_softmax(ctx: Context, value: Rows, shape: tuple[int, ...], log: bool,
                  compute: DType, out_dtype: DType) -> View:
    """``softmax`` (``log``: ``log_softmax``) of ``value`` (of ``shape``, from
    ``softmax_rows``) along its rows, computed in ``compute``, as a contiguous view of
    ``out_dtype``."""
    out = ctx.new(shape, out_dtype)
    traced, layout = value.traced, value.layout
    rows, cols = layout.rows, layout.cols
    kernel = codegen.kernel_for(("softmax", *traced.key[:2], traced.key[3]), "fused_softmax",
                                softmax_source)
    args: list[Any] = []
    for leaf, strides in zip(traced.leaves, layout.leaf_args):
        args += [leaf.storage, leaf.offset, *strides]
    block = max(pow2(value.count), 16)  # as the plain single-pass kernels' tiles
    rows_each = tile_rows(ctx, value.count, len(traced.leaves))
    kernel[(math.ceil(rows.numel / rows_each),)](
        *args, *traced.constants, *traced.scalars, out.storage, *rows.args(len(traced.leaves)),
        *rows.dim_args, rows.numel, *cols.dim_args, cols.numel, LOG=log, CT=compute,
        DT=out_dtype, target=ctx.target, **layout.comptimes(len(traced.leaves), rows_each, block),
        **launch_options(ctx, rows_each * block))
    return out
