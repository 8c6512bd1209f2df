"""Creates typed operations at an insertion point; types come from ``rules.infer``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import rules
from .core import Block, Loc, Operation, Type, Value
from .dtypes import DType
from .ops import Op


class Builder:
    """Appends ops to the current block. ``loc`` is stamped on every op created.

    Example:
        >>> from cubepy.ir import Builder, Block, dtypes
        >>> b = Builder(Block())
        >>> b.const(3, dtypes.int32).type.dtype.name
        'int32'
    """

    def __init__(self, block: Block):
        self.block = block
        self.loc: Loc | None = None

    @contextmanager
    def at(self, block: Block) -> Iterator[Block]:
        saved = self.block
        self.block = block
        try:
            yield block
        finally:
            self.block = saved

    def create(self, op: Op, operands: list[Value], attrs: dict[str, Any] | None = None,
               result_types: list[Type] | None = None, regions: list[Block] | None = None,
               name: str | None = None) -> Operation:
        attrs = attrs or {}
        if result_types is None:
            result_types = rules.infer(op, [v.type for v in operands], attrs)
        operation = Operation(op, list(operands), [], attrs, regions or [], self.loc)
        operation.results = [Value(t, operation, name) for t in result_types]
        self.block.ops.append(operation)
        return operation

    def emit(self, op: Op, *operands: Value, name: str | None = None, **attrs: Any) -> Value:
        """Create a one-result op and return its result."""
        return self.create(op, list(operands), attrs, name=name).result

    def const(self, value: Any, dtype: DType) -> Value:
        value = _normalize(value, dtype)
        return self.create(Op.CONST, [], {"value": value, "dtype": dtype}).result

    def cast(self, value: Value, dtype: DType) -> Value:
        if value.type.dtype == dtype:
            return value
        return self.emit(Op.CAST, value, dtype=dtype)

    def bitcast(self, value: Value, dtype: DType) -> Value:
        if value.type.dtype == dtype and not value.type.is_ptr:
            return value
        return self.emit(Op.BITCAST, value, dtype=dtype)

    def broadcast(self, value: Value, shape: tuple[int, ...]) -> Value:
        """Broadcast a tile to ``shape`` (scalars stay scalars: elementwise ops accept them)."""
        if value.type.shape == shape or not value.type.shape:
            return value
        if len(value.type.shape) < len(shape):
            missing = len(shape) - len(value.type.shape)
            value = self.emit(Op.RESHAPE, value, shape=(1,) * missing + value.type.shape)
        return self.emit(Op.BROADCAST, value, shape=tuple(shape))

    def yield_(self, values: list[Value]) -> Operation:
        return self.create(Op.YIELD, values, result_types=[])


def _normalize(value: Any, dtype: DType) -> Any:
    if dtype.is_bool:
        return bool(value)
    if dtype.is_int:
        value = int(value)
        bits = dtype.bits
        value &= (1 << bits) - 1
        if dtype.is_signed and value >= 1 << (bits - 1):
            value -= 1 << bits
        return value
    return float(value)
