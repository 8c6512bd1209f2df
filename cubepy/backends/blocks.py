"""Dropping ``BLOCK_LOAD`` ops for their fallback: what backends without block copies do."""

from __future__ import annotations

from ..ir import Block, Function, Op, Value
from ..passes.dce import dce
from ..passes.rewrite import substitute


def drop_block_loads(fn: Function) -> Function:
    """``fn`` with each ``BLOCK_LOAD`` replaced by its fallback (the masked pointer-tile load
    it was built beside), and whatever only the block load read removed."""
    mapping: dict[int, Value] = {}

    def visit(block: Block) -> None:
        kept = []
        for op in block.ops:
            for region in op.regions:
                visit(region)
            if op.op is Op.BLOCK_LOAD:
                mapping[op.result.id] = op.operands[0]
            else:
                kept.append(op)
        block.ops = kept

    visit(fn.body)
    if mapping:
        substitute(fn.body, mapping)
        dce(fn)
    return fn
