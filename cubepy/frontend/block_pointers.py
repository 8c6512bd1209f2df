"""``cube.make_block_ptr`` and ``cube.advance``: Triton's block pointers.

A block pointer exists only while the kernel is being built: an array argument (plus a scalar
offset), the shape and strides of a view of it, the corner of a block in that view and the
block's shape. ``cube.load(block_ptr, ...)`` and ``cube.store(block_ptr, ...)`` become the
masked pointer-tile load and store every target runs; ``cube.advance`` gives a new block
pointer with the corner moved. A loop may carry a block pointer (``control.py`` carries its
corner's coordinates).

Every access is bounds-checked on every axis: Triton checks only ``boundary_check``'s axes
and leaves the others undefined, which this is one way of being.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Op, Value
from ..ir.rules import RuleError, check_tile_shape
from .builtins import _reshape, call_builtin, lowering, store_operands
from .pycalls import describe
from .semantics import binary, is_value, plain_int


class BlockPointer:
    """What ``cube.make_block_ptr`` returns inside a kernel (not a runtime value)."""

    is_block_pointer = True  # how cube.load and cube.store tell it apart from a pointer tile

    def __init__(self, base: Value, shape: tuple, strides: tuple, offsets: tuple,
                 block: tuple[int, ...]):
        self.base, self.shape, self.strides = base, shape, strides
        self.offsets, self.block = offsets, block

    def carried(self) -> list[Any]:
        """What a loop carries of it: the corner's coordinates."""
        return list(self.offsets)

    def rebuild(self, offsets: list[Any]) -> BlockPointer:
        return BlockPointer(self.base, self.shape, self.strides, tuple(offsets), self.block)

    def same_view(self, other: Any) -> bool:
        """Whether ``other`` is a block pointer into the same view with the same block."""
        return getattr(other, "is_block_pointer", False) and other.base is self.base and \
            other.shape == self.shape and other.strides == self.strides and \
            other.block == self.block

    def moved(self, ctx: Any, deltas: Any) -> BlockPointer:
        deltas = _coordinates(deltas, len(self.block), "cube.advance()", "offsets")
        return self.rebuild([binary(ctx.b, Op.ADD, o, d) for o, d in zip(self.offsets, deltas)])

    def addresses(self, ctx: Any) -> tuple[Value, Value]:
        """The pointer tile of the block and the mask of its elements inside the view."""
        b, rank = ctx.b, len(self.block)
        pointers, inside = self.base, None
        for axis, (size, offset, extent, stride) in enumerate(
                zip(self.block, self.offsets, self.shape, self.strides)):
            index = binary(b, Op.ADD, b.emit(Op.ARANGE, start=0, end=size), offset)
            if rank > 1:
                index = _reshape(ctx, index, tuple(size if d == axis else 1
                                                   for d in range(rank)))
            pointers = binary(b, Op.ADD, pointers, binary(b, Op.MUL, index, stride))
            ok = binary(b, Op.AND, binary(b, Op.GE, index, 0), binary(b, Op.LT, index, extent))
            inside = ok if inside is None else binary(b, Op.AND, inside, ok)
        return pointers, inside

    def load(self, ctx: Any, boundary_check: Any, padding_option: Any) -> Value:
        self._axes(boundary_check, "load")
        dtype = self.base.type.dtype
        if padding_option not in ("", "zero", "nan"):
            raise RuleError(f"cube.load(): padding_option {padding_option!r} is not one of "
                            '"", "zero", "nan"', 'write padding_option="zero"')
        if padding_option == "nan" and not dtype.is_float:
            raise RuleError(f'cube.load(): padding_option="nan" for {dtype.name} elements',
                            'write padding_option="zero"')
        pointers, inside = self.addresses(ctx)
        other = float("nan") if padding_option == "nan" else 0
        return call_builtin(ctx, "load", [pointers, inside, other], {})

    def store(self, ctx: Any, value: Any, boundary_check: Any) -> None:
        self._axes(boundary_check, "store")
        if is_value(value) and value.type.shape not in ((), self.block):
            raise RuleError(f"cube.store(): the value is a {value.type.shape} tile; the block "
                            f"is {self.block}", "store a tile of the block's shape")
        pointers, inside = self.addresses(ctx)
        ctx.b.create(Op.STORE, store_operands(ctx, pointers, value, inside))

    def _axes(self, boundary_check: Any, what: str) -> None:
        axes = boundary_check if isinstance(boundary_check, (tuple, list)) else (boundary_check,)
        rank = len(self.block)
        if not all(isinstance(plain_int(a), int) and 0 <= plain_int(a) < rank for a in axes):
            raise RuleError(f"cube.{what}(): boundary_check {boundary_check!r} names no axes of "
                            f"a {rank}-D block", f"list axes from 0 to {rank - 1}, e.g. "
                            f"boundary_check=({', '.join(map(str, range(rank)))})")


def _coordinates(values: Any, rank: int, what: str, name: str) -> tuple:
    if not isinstance(values, (tuple, list)) or len(values) != rank:
        raise RuleError(f"{what}: {name} must list {rank} values, one per axis of the block, "
                        f"got {describe(values) if is_value(values) else repr(values)}",
                        f"write {name}=({', '.join(['...'] * rank)})")
    out = []
    for v in values:
        v = plain_int(v)
        if is_value(v) and (v.type.shape or not v.type.dtype.is_int):
            raise RuleError(f"{what}: {name} must be integer scalars, got {describe(v)}",
                            "convert with `.to(cube.int32)`")
        if not is_value(v) and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)):
            raise RuleError(f"{what}: {name} must be integers, got {v!r}", None)
        out.append(v)
    return tuple(out)


@lowering("make_block_ptr")
def _make_block_ptr(ctx: Any, base: Any, shape: Any, strides: Any, offsets: Any,
                    block_shape: Any, order: Any) -> BlockPointer:
    if not is_value(base) or not base.type.is_ptr or base.type.shape:
        raise RuleError("cube.make_block_ptr() needs the base as an array argument (plus a "
                        "scalar offset)", "write cube.make_block_ptr(x + batch * stride, ...)")
    block = tuple(plain_int(s) for s in block_shape) if isinstance(
        block_shape, (tuple, list)) else None
    if block is None or not block or not all(isinstance(s, int) for s in block):
        raise RuleError(f"cube.make_block_ptr(): block_shape must be compile-time ints, got "
                        f"{block_shape!r}", "write block_shape=(BLOCK_M, BLOCK_K)")
    check_tile_shape(block)
    rank = len(block)
    if order is not None and (not isinstance(order, (tuple, list)) or
                              sorted(plain_int(o) for o in order) != list(range(rank))):
        row_major = ", ".join(map(str, reversed(range(rank))))
        raise RuleError(f"cube.make_block_ptr(): order {order!r} is not an order of the "
                        f"{rank} axes", f"write order=({row_major})")
    what = "cube.make_block_ptr()"
    return BlockPointer(base, _coordinates(shape, rank, what, "shape"),
                        _coordinates(strides, rank, what, "strides"),
                        _coordinates(offsets, rank, what, "offsets"), block)


@lowering("advance")
def _advance(ctx: Any, base: Any, offsets: Any) -> BlockPointer:
    if not getattr(base, "is_block_pointer", False):
        raise RuleError(f"cube.advance() moves a block pointer, got {describe(base)}",
                        "make one with cube.make_block_ptr(...); move a pointer tile with +")
    return base.moved(ctx, offsets)
