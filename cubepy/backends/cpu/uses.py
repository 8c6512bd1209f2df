"""Which IR values the cpu emitter must compute, and which it may inline: what the kernel's
effects, control flow and row-wise accesses read (``needed_values``), and values used once in
the block that defines them (``single_uses``).

Example:
    >>> needed = needed_values(fn, AffineAnalysis(fn))  # doctest: +SKIP
"""

from __future__ import annotations

import math

from ...ir import Block, Function, Op, Operation, Value, walk
from ...ir.ops import NOT_PURE
from .affine import AffineAnalysis, row_access


def is_zero(value: Value) -> bool:
    """Whether ``value`` is the constant +0 (not -0.0)."""
    owner = value.owner
    return owner is not None and owner.op is Op.CONST and owner.attrs["value"] == 0 \
        and not (isinstance(owner.attrs["value"], float)
                 and math.copysign(1.0, owner.attrs["value"]) < 0)


def _rowwise_operands(op: Operation, affine: AffineAnalysis) -> list[Value] | None:
    """The operands a row-wise load/store still reads (None: not row-wise)."""
    if op.op not in (Op.LOAD, Op.STORE) or op.operands[0].type.is_scalar:
        return None
    if row_access(affine, op.operands[0]) is None:
        return None
    if op.op is Op.LOAD and len(op.operands) == 3 and is_zero(op.operands[2]):
        return op.operands[1:2]  # the row load already gives 0 off the mask
    return op.operands[1:]


def needed_values(fn: Function, affine: AffineAnalysis) -> set[int]:
    """Values the generated code must compute: what effects, control flow and row-wise
    accesses (through their mask, value and the scalars of their affine form) read."""
    ops = list(walk(fn.body))
    producers = {r.id: op for op in ops for r in op.results}
    values = {v.id: v for op in ops for v in op.results}

    def reads(op: Operation) -> list[Value]:
        rowwise = _rowwise_operands(op, affine)
        if rowwise is None:
            return op.operands
        form = affine.forms[op.operands[0].id]
        ids = set(form.base[1])
        for stride in form.strides:
            if not isinstance(stride, int):
                ids |= stride[1]
        return rowwise + [values[i] for i in ids if i in values]

    needed: set[int] = set()
    work = [v for op in ops if op.op in NOT_PURE for v in reads(op)]
    while work:
        value = work.pop()
        if value.id in needed:
            continue
        needed.add(value.id)
        producer = producers.get(value.id)
        if producer is not None:
            work.extend(reads(producer))
    return needed


def single_uses(fn: Function) -> set[int]:
    """Values used exactly once, by an op of the block that defines them."""
    uses: dict[int, int] = {}
    same_block: set[int] = set()

    def visit(block: Block) -> None:
        defined = {r.id for op in block.ops for r in op.results}
        for op in block.ops:
            for v in op.operands:
                uses[v.id] = uses.get(v.id, 0) + 1
                if v.id in defined:
                    same_block.add(v.id)
            for region in op.regions:
                visit(region)

    visit(fn.body)
    return {i for i in same_block if uses[i] == 1}
