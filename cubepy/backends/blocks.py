"""Dropping block copies for their fallbacks: what backends without block copies do."""

from __future__ import annotations

from ..ir import Block, Function, Op, Operation, Value
from ..passes.dce import dce
from ..passes.rewrite import substitute


def drop_block_ops(fn: Function) -> Function:
    """``fn`` with each ``BLOCK_LOAD`` replaced by its fallback (the masked pointer-tile load
    it was built beside) and each ``BLOCK_STORE`` by its masked pointer-tile store, and
    whatever only the block ops read removed."""
    mapping: dict[int, Value] = {}
    stores: list[Operation] = []

    def visit(block: Block) -> None:
        kept = []
        for op in block.ops:
            for region in op.regions:
                visit(region)
            if op.op is Op.BLOCK_LOAD:
                mapping[op.result.id] = op.operands[0]
            elif op.op is Op.BLOCK_STORE:
                stores.append(Operation(Op.STORE, op.operands[:3], [], {}, [], op.loc))
                kept.append(stores[-1])
            else:
                kept.append(op)
        block.ops = kept

    visit(fn.body)
    if mapping:
        substitute(fn.body, mapping)
    if mapping or stores:
        dce(fn)
    return fn
