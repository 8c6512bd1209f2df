"""``cube.make_tensor_descriptor``: 2-D block reads and writes, as Triton spells them.

A descriptor exists only while the kernel is being built: ``desc.load(offsets)`` becomes the
masked pointer-tile load every target can run, followed by a ``BLOCK_LOAD`` op that names the
block (base, view shape, row stride, corner) so that a backend with block copies (Triton's
TMA on sm_90+) can read it that way instead; the others drop it for its fallback.
``desc.store`` of a tile is a ``BLOCK_STORE``: a masked pointer-tile store that names the
block too, which Triton may write as a TMA copy; a scalar is stored through pointers.
"""

from __future__ import annotations

from typing import Any

from ..ir import Op, Value
from ..ir import dtypes as dt
from ..ir.rules import RuleError, check_tile_shape
from .builtins import call_builtin, lowering, store_operands
from .semantics import binary, is_value, materialize


class TensorDescriptor:
    """What ``cube.make_tensor_descriptor`` returns inside a kernel (not a runtime value)."""

    def __init__(self, base: Value, rows: Value, cols: Value, row_stride: Value,
                 block: tuple[int, int]):
        self.base, self.rows, self.cols, self.row_stride = base, rows, cols, row_stride
        self.block = block

    def load(self, ctx: Any, offsets: Any) -> Value:
        """The block at ``offsets`` (elements outside the view read 0)."""
        row0, col0 = self._corner(ctx, offsets, "load")
        pointers, mask = self._addresses(ctx, row0, col0)
        fallback = call_builtin(ctx, "load", [pointers, mask, 0], {})
        return ctx.b.emit(Op.BLOCK_LOAD, fallback, self.base, self.rows, self.cols,
                          self.row_stride, row0, col0, block=self.block)

    def store(self, ctx: Any, offsets: Any, value: Any) -> None:
        """Write ``value`` (a tile of the block's shape) where the block lies inside the view."""
        row0, col0 = self._corner(ctx, offsets, "store")
        if is_value(value) and value.type.shape not in ((), self.block):
            raise RuleError(f"desc.store(): the value is a {value.type.shape} tile; the block "
                            f"is {self.block}", "store a tile of the block's shape")
        pointers, mask = self._addresses(ctx, row0, col0)
        operands = store_operands(ctx, pointers, value, mask)
        if operands[1].type.shape != self.block:  # a scalar: stored through pointers
            ctx.b.create(Op.STORE, operands)
            return
        ctx.b.create(Op.BLOCK_STORE, operands + [self.base, self.rows, self.cols,
                                                 self.row_stride, row0, col0],
                     {"block": self.block})

    def _corner(self, ctx: Any, offsets: Any, what: str) -> tuple[Value, Value]:
        if not isinstance(offsets, (list, tuple)) or len(offsets) != 2:
            raise RuleError(f"desc.{what}() takes the block's corner as [row, col]",
                            f"write desc.{what}([row0, col0]{', tile' if what == 'store' else ''})")
        return tuple(_integer(ctx, v, f"desc.{what}() offset") for v in offsets)  # type: ignore

    def _addresses(self, ctx: Any, row0: Value, col0: Value) -> tuple[Value, Value]:
        b = ctx.b
        rows = call_builtin(ctx, "expand_dims", [binary(b, Op.ADD, row0, call_builtin(
            ctx, "arange", [0, self.block[0]], {})), 1], {})
        cols = call_builtin(ctx, "expand_dims", [binary(b, Op.ADD, col0, call_builtin(
            ctx, "arange", [0, self.block[1]], {})), 0], {})
        offsets = binary(b, Op.ADD, binary(b, Op.MUL, rows, self.row_stride), cols)
        inside = [binary(b, Op.GE, rows, 0), binary(b, Op.LT, rows, self.rows),
                  binary(b, Op.GE, cols, 0), binary(b, Op.LT, cols, self.cols)]
        mask = inside[0]
        for test in inside[1:]:
            mask = binary(b, Op.AND, mask, test)
        return binary(b, Op.ADD, self.base, offsets), mask


def _integer(ctx: Any, value: Any, what: str) -> Value:
    if isinstance(value, bool) or not (isinstance(value, int) or (
            is_value(value) and not value.type.is_ptr and value.type.dtype.is_int)):
        raise RuleError(f"{what} must be an integer scalar, got {value!r}")
    if is_value(value) and value.type.shape:
        raise RuleError(f"{what} must be a scalar, got a {value.type.shape} tile")
    return materialize(ctx.b, value, None if is_value(value) else dt.int32)


@lowering("make_tensor_descriptor")
def _make(ctx: Any, base: Any, shape: Any, strides: Any, block_shape: Any) -> TensorDescriptor:
    if not is_value(base) or not base.type.is_ptr or base.type.shape:
        raise RuleError("cube.make_tensor_descriptor() needs an array argument as its base",
                        "pass the array itself: make_tensor_descriptor(a, [M, K], [K, 1], ...)")
    for name, entry in (("shape", shape), ("strides", strides), ("block_shape", block_shape)):
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise RuleError(f"cube.make_tensor_descriptor(): {name} needs two entries; "
                            "descriptors are 2-D", "use pointer tiles for other ranks")
    if isinstance(strides[1], bool) or strides[1] != 1 or is_value(strides[1]):
        raise RuleError("cube.make_tensor_descriptor(): the last stride must be the literal 1 "
                        "(rows are contiguous)", "use pointer tiles for other layouts")
    block = tuple(block_shape)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in block):
        raise RuleError(f"cube.make_tensor_descriptor(): block_shape {block_shape!r} must be "
                        "comptime ints", "pass cube.Comptime parameters or literals")
    check_tile_shape(block)
    rows, cols = (_integer(ctx, v, "a descriptor's shape") for v in shape)
    row_stride = _integer(ctx, strides[0], "a descriptor's row stride")
    return TensorDescriptor(base, rows, cols, row_stride, block)  # type: ignore[arg-type]
