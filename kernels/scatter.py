"""Scatters that reduce: ``scatter_add`` and ``scatter_reduce`` (add, mul, max, min).

Element ``e`` of the index writes ``src[e]`` into the slot ``acc[e with its axis coordinate
replaced by index[e]]`` (torch's ``scatter_add``/``scatter_reduce``). The launcher describes
the slots by a view of the index's shape whose indexed axis has stride 0, plus that axis's
real stride, as ``kernels.index``'s gathers do on the read side. Many elements may land on one
slot, so every write is an atomic: ``atomic_add``, ``atomic_max``, ``atomic_min``; a product
has no atomic on any target, so ``mul`` is a compare-and-swap loop per lane (each round, one
of the lanes that share a slot wins; the others read its product and try again).

Each op accumulates in a dtype the target has atomics for (``accumulator_dtype``): 16-bit
floats in float32 (a product is rounded once at the end, not after every factor), 8/16-bit
integers in int32 (sums and products wrap like the narrow ones when cast back). Without
``include_self`` the slots that some index names are first set to the op's identity, so they
reduce ``src`` alone.

Example:
    >>> out = scatter_reduce(ctx, x, index, src, axis=0, op="max")  # doctest: +SKIP
"""

from __future__ import annotations

import cubepy as cube
from cubepy.ir.dtypes import DType

from .elementwise import cast, copy
from .layout import Context, View, launch_plan, scalar
from .rows import identity
from .strided import element_offset, layout_args, operand_args, without_axis

SCATTER_OPS = ("add", "mul", "max", "min")
REDUCTION_OF = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}  # rows.identity's
SMALL_INTS = ("int8", "int16", "uint8")
# the bits a float product's compare-and-swap tests: NaN slots compare equal to themselves
_BITS = {"float32": cube.int32, "float64": cube.int64}


@cube.func
def multiply_in(acc, dst, v, m, AT, BITS):
    # A compare-and-swap loop over the tile: a lane is done once its CAS found the value it
    # multiplied. Lanes that are done (or masked; `dst` is a valid slot for every lane) swap
    # a value for itself, which changes nothing whether or not it matches.
    old = cube.load(acc + dst)
    pending = m
    while cube.max(pending.to(cube.int32), axis=0) > 0:
        got = cube.atomic_cas(acc + dst, old, cube.where(pending, old * v, old).to(AT))
        if BITS is None:
            missed = got != old
        else:  # the bits: a value compare never matches a NaN, and -0.0 matches +0.0
            missed = got.to(BITS, bitcast=True) != old.to(BITS, bitcast=True)
        pending = pending & missed
        old = got


@cube.kernel
def scatter_kernel(src, so, ss0, ss1, ss2, ss3, idx, io, is0, is1, is2, is3, acc, ao, as0, as1,
                   as2, as3, n, d1, d2, d3, axis_stride, OP: cube.Comptime[str],
                   AT: cube.Comptime[object], BITS: cube.Comptime[object],
                   RANK: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    e = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = e < n
    k = cube.load(idx + io + element_offset(e, RANK, d1, d2, d3, is0, is1, is2, is3), mask=m,
                  other=0).to(cube.int32)
    v = cube.load(src + so + element_offset(e, RANK, d1, d2, d3, ss0, ss1, ss2, ss3), mask=m,
                  other=0).to(AT)
    dst = ao + element_offset(e, RANK, d1, d2, d3, as0, as1, as2, as3) + k * axis_stride
    if OP == "add":
        cube.atomic_add(acc + dst, v, mask=m)
    elif OP == "max":
        cube.atomic_max(acc + dst, v, mask=m)
    elif OP == "min":
        cube.atomic_min(acc + dst, v, mask=m)
    else:
        multiply_in(acc, cube.where(m, dst, ao), v, m, AT, BITS)


@cube.kernel
def scatter_fill_kernel(idx, io, is0, is1, is2, is3, acc, ao, as0, as1, as2, as3, n, d1, d2, d3,
                        axis_stride, value, RANK: cube.Comptime[int],
                        BLOCK: cube.Comptime[int]):
    # every slot an index names gets `value` (elements naming one slot store the same value)
    e = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = e < n
    k = cube.load(idx + io + element_offset(e, RANK, d1, d2, d3, is0, is1, is2, is3), mask=m,
                  other=0).to(cube.int32)
    dst = ao + element_offset(e, RANK, d1, d2, d3, as0, as1, as2, as3) + k * axis_stride
    cube.store(acc + dst, cube.zeros((BLOCK,), value.dtype) + value, mask=m)


def accumulator_dtype(target: str, dtype: DType, op: str = "add") -> DType:
    """The dtype a scatter with ``op`` accumulates ``dtype`` in on ``target``: its own where
    the target has atomics for it, else 32-bit (16-bit floats in float32, 8/16-bit integers
    in int32, which wraps around like the narrow sum or product when cast back)."""
    atomics = cube.target_info(target.partition(":")[0]).atomic_dtypes
    if dtype.name in atomics:
        return dtype
    if dtype.name in ("float16", "bfloat16") and "float32" in atomics:
        return cube.float32
    if dtype.name in SMALL_INTS and "int32" in atomics:
        return cube.int32
    name = "scatter_add" if op == "add" else f"scatter_reduce({op!r})"
    what = "atomic add" if op == "add" else "atomics"
    raise cube.UnsupportedError(
        f"{name}: the {target} target has no {what} for {dtype.name} (it has "
        f"{', '.join(sorted(atomics))})")


def _slot_launches(ctx: Context, index: View, others: list[View], acc: View, axis: int):
    """Each launch's part of the index's shape and its block: operands ``others``, the index
    and the slots of ``acc`` (the axis's coordinate comes from the index)."""
    slots = acc.with_layout(acc.offset, index.shape, without_axis(acc.strides, axis))
    for part in launch_plan(index.shape, [*others, index, slots]):
        yield part, ctx.block(part.numel)


def _fill_slots(ctx: Context, acc: View, index: View, axis: int, value: int | float) -> None:
    for part, block in _slot_launches(ctx, index, [], acc, axis):
        scatter_fill_kernel[(cube.cdiv(part.numel, block),)](
            index.storage, *operand_args(part, 0), acc.storage, *operand_args(part, 1),
            *layout_args(part), acc.strides[axis], scalar(value, acc.dtype),
            RANK=part.layout.rank, BLOCK=block, target=ctx.target)


def scatter_reduce(ctx: Context, x: View, index: View, src: View, axis: int, op: str,
                   include_self: bool = True) -> View:
    """A fresh copy of ``x`` with every ``src[i]`` combined by ``op`` (``add``, ``mul``,
    ``max``, ``min``) into the slot ``i`` with its axis coordinate replaced by ``index[i]``;
    without ``include_self`` the slots an index names start from ``op``'s identity instead
    of ``x``. ``index`` fits inside ``src``, and inside ``x`` off ``axis``."""
    if op not in SCATTER_OPS:
        raise ValueError(f"unknown scatter op {op!r}; ops: {', '.join(SCATTER_OPS)}")
    acc_dtype = accumulator_dtype(ctx.target, x.dtype, op)
    acc = cast(ctx, x, acc_dtype) if acc_dtype != x.dtype else copy(ctx, x)
    if not include_self:
        _fill_slots(ctx, acc, index, axis, identity(REDUCTION_OF[op], acc_dtype))
    src_view = src.with_layout(src.offset, index.shape, src.strides)
    bits = _BITS.get(acc_dtype.name) if op == "mul" else None
    for part, block in _slot_launches(ctx, index, [src_view], acc, axis):
        scatter_kernel[(cube.cdiv(part.numel, block),)](
            src.storage, *operand_args(part, 0), index.storage, *operand_args(part, 1),
            acc.storage, *operand_args(part, 2), *layout_args(part), acc.strides[axis],
            OP=op, AT=acc_dtype, BITS=bits, RANK=part.layout.rank, BLOCK=block,
            target=ctx.target)
    return acc if acc_dtype == x.dtype else cast(ctx, acc, x.dtype)


def scatter_add(ctx: Context, x: View, index: View, src: View, axis: int) -> View:
    """``x`` plus ``src[i]`` added at ``index[i]`` along ``axis`` (torch's ``scatter_add``):
    a fresh tensor; ``index`` fits inside ``src``, and inside ``x`` off ``axis``."""
    return scatter_reduce(ctx, x, index, src, axis, "add")
