"""IR values, operations, blocks and functions: typed SSA with structured control flow.

A value is a scalar (shape ``()``), a tile (a static shape, every dimension a power of two) or
a pointer (scalar or tile) whose base is always one kernel argument, recorded in its type.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from .dtypes import DType
from .ops import Op


@dataclass(frozen=True)
class Loc:
    """A place in the user's source: file, 1-based line, 0-based column span."""

    file: str
    line: int
    col: int
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


@dataclass(frozen=True)
class Type:
    """The type of a value: element dtype, static shape, and for pointers the base argument."""

    dtype: DType
    shape: tuple[int, ...] = ()
    ptr_base: int | None = None  # index of the kernel argument a pointer points into

    @property
    def is_ptr(self) -> bool:
        return self.ptr_base is not None

    @property
    def is_scalar(self) -> bool:
        return self.shape == ()

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def with_shape(self, shape: tuple[int, ...]) -> Type:
        return Type(self.dtype, tuple(shape), self.ptr_base)

    def with_dtype(self, dtype: DType) -> Type:
        return Type(dtype, self.shape, self.ptr_base)

    def scalar(self) -> Type:
        return Type(self.dtype, (), self.ptr_base)

    def __str__(self) -> str:
        base = f"ptr<{self.dtype}, arg{self.ptr_base}>" if self.is_ptr else str(self.dtype)
        if not self.shape:
            return base
        return f"tile<{'x'.join(map(str, self.shape))}x{base}>"


_ids = itertools.count()


class Value:
    """An SSA value: the result of an op or an argument of a block."""

    __slots__ = ("type", "owner", "name", "id")

    def __init__(self, type: Type, owner: Operation | None = None, name: str | None = None):
        self.type = type
        self.owner = owner
        self.name = name
        self.id = next(_ids)

    def __repr__(self) -> str:
        return f"%{self.name or ''}{self.id}:{self.type}"


@dataclass(eq=False)
class Block:
    """A list of ops with arguments; every region's block ends with a YIELD."""

    args: list[Value] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops and self.ops[-1].op is Op.YIELD else None


@dataclass(eq=False)
class Operation:
    """One IR operation: ``results = op(operands) {attrs} [regions]``."""

    op: Op
    operands: list[Value]
    results: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list[Block] = field(default_factory=list)
    loc: Loc | None = None

    @property
    def result(self) -> Value:
        (value,) = self.results
        return value


@dataclass(frozen=True)
class Param:
    """A kernel parameter: its name, and for comptime ones the value it was specialized on."""

    name: str
    is_comptime: bool
    comptime_value: Any = None


@dataclass(eq=False)
class Function:
    """A kernel (or a @cube.func before inlining) specialized on argument types.

    ``body.args`` are the runtime arguments in order (``arg_names`` names them); comptime
    parameters have no IR value: they were substituted while building.
    """

    name: str
    arg_names: list[str]
    body: Block
    params: list[Param] = field(default_factory=list)
    loc: Loc | None = None
    returns: list[Type] = field(default_factory=list)

    @property
    def args(self) -> list[Value]:
        return self.body.args


def walk(block: Block):
    """Every op in ``block`` and its regions, outer ops before the ops they contain."""
    for operation in block.ops:
        yield operation
        for region in operation.regions:
            yield from walk(region)
