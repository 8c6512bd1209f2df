"""Lowering of ``reduce`` and ``associative_scan`` with a combine function, as Triton's
``tl.reduce`` and ``tl.associative_scan``.

The ``@cube.func`` is built once for scalars of the inputs' dtypes (the earlier elements'
values first, then the later ones'), into the region of a ``REDUCE_FN`` or ``SCAN_FN`` op.
Each backend runs that region its own way: as a Triton combine function, as a loop over each
line on the CPU and on WGSL. Like Triton, cubepy may combine in any grouping that keeps the
order of the elements, so the function should be associative.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..ir import Block, Op, Type, Value
from ..ir.ops import SIDE_EFFECTS
from ..ir.rules import RuleError
from ..lang import builtins as B
from . import control
from .builtins import _tile, comptime_flag, lowering, tile_axis
from .pycalls import describe
from .reductions import _kept_dims
from .semantics import is_value, materialize

# what a combine function may not do: it runs any number of times, in any grouping
_EFFECTS = (SIDE_EFFECTS | {Op.LOAD, Op.BLOCK_LOAD}) - {Op.YIELD, Op.CALL}


def _inputs(x: Any, what: str) -> tuple[list[Value], bool]:
    """The input tiles, and whether there is one (not a tuple of them)."""
    single = not isinstance(x, (tuple, list))
    tiles = [_tile(t, what) for t in ([x] if single else list(x))]
    if not tiles:
        raise RuleError(f"cube.{what}() of an empty tuple", "pass a tile or a tuple of tiles")
    if any(t.type.is_ptr for t in tiles):
        raise RuleError(f"cube.{what}() of a pointer tile", "combine the loaded values")
    shapes = [t.type.shape for t in tiles]
    if len(set(shapes)) > 1:
        raise RuleError(f"cube.{what}(): the input tiles have shapes "
                        f"{', '.join(map(str, shapes))}", "give them one shape first "
                        "(cube.broadcast_to)")
    return tiles, single


def _has_effects(block: Block) -> bool:
    for op in block.ops:
        if op.op in _EFFECTS or any(_has_effects(region) for region in op.regions):
            return True
        if op.op is Op.CALL and _has_effects(op.attrs["callee"].body):
            return True
    return False


def combine_region(ctx: Any, fn: Any, dtypes: list, what: str) -> Block:
    """``fn`` built for scalars ``a_1..a_n, b_1..b_n`` of ``dtypes``, yielding n scalars."""
    if not isinstance(fn, B.Func):
        raise RuleError(f"cube.{what}(): combine_fn must be a @cube.func, got {describe(fn)}",
                        "decorate it with @cube.func, e.g. `def add(a, b): return a + b`")
    name = fn.fn.__name__
    want = 2 * len(dtypes)
    try:
        inspect.signature(fn.fn).bind(*range(want))
    except TypeError:
        raise RuleError(f"cube.{what}(): {name}{inspect.signature(fn.fn)} cannot take the "
                        f"{want} values it combines for {len(dtypes)} input tile(s)",
                        f"give it {want} parameters: the earlier elements' {len(dtypes)} "
                        f"values, then the later ones'") from None
    args = [Value(Type(d), None, f"{side}{i}") for side in "ab" for i, d in enumerate(dtypes)]
    block = Block(list(args))
    with ctx.b.at(block):
        out = control.call_func(ctx, ctx.node, fn, args, {})
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != len(dtypes):
            raise RuleError(f"cube.{what}(): {name} returns {len(outs)} value(s) for "
                            f"{len(dtypes)} input tile(s)",
                            "return one value per input tile, in their order")
        for got, dtype in zip(outs, dtypes):
            if is_value(got) and got.type != Type(dtype):
                raise RuleError(f"cube.{what}(): {name} returns {describe(got)} where the "
                                f"input is {dtype.name}", f"cast it: .to(cube.{dtype.name})")
        ctx.b.yield_([materialize(ctx.b, got, dtype) for got, dtype in zip(outs, dtypes)])
    if _has_effects(block):
        raise RuleError(f"cube.{what}(): {name} loads, stores, prints or asserts; a combine "
                        "function runs any number of times, in any grouping",
                        "make it a pure function of its arguments")
    return block


@lowering("reduce")
def _reduce(ctx: Any, input: Any, axis: Any, combine_fn: Any, keep_dims: Any) -> Any:  # noqa: A002
    tiles, single = _inputs(input, "reduce")
    shape = tiles[0].type.shape
    if axis is None:  # every element: the tiles flattened
        if len(shape) > 1:
            tiles = [ctx.b.emit(Op.RESHAPE, t, shape=(t.type.numel,)) for t in tiles]
        ax = 0
    else:
        ax = tile_axis(tiles[0], axis, "reduce", "axis")
    region = combine_region(ctx, combine_fn, [t.type.dtype for t in tiles], "reduce")
    op = ctx.b.create(Op.REDUCE_FN, tiles, {"axis": ax}, regions=[region])
    kept = None if axis is None else ax
    results = [_kept_dims(ctx, r, shape, kept, keep_dims) for r in op.results]
    return results[0] if single else tuple(results)


@lowering("associative_scan")
def _associative_scan(ctx: Any, input: Any, axis: Any, combine_fn: Any,  # noqa: A002
                      reverse: Any) -> Any:
    tiles, single = _inputs(input, "associative_scan")
    ax = tile_axis(tiles[0], axis, "associative_scan", "axis")
    backwards = comptime_flag(reverse, "reverse")
    region = combine_region(ctx, combine_fn, [t.type.dtype for t in tiles], "associative_scan")
    op = ctx.b.create(Op.SCAN_FN, tiles, {"axis": ax, "reverse": backwards},
                      regions=[region])
    return op.results[0] if single else tuple(op.results)
