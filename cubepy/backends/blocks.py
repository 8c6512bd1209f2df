"""Dropping what only Triton's GPU code uses: block copies for their fallbacks, and compiler
hints for the values they annotate. The backends without block copies or hints do so."""

from __future__ import annotations

from ..ir import Block, Function, Op, Operation, Value
from ..passes.dce import dce
from ..passes.rewrite import substitute


def drop_gpu_only_ops(fn: Function) -> Function:
    """``fn`` with each ``BLOCK_LOAD`` replaced by its fallback (the masked pointer-tile load
    it was built beside), each ``BLOCK_STORE`` by its masked pointer-tile store and each
    ``HINT`` by the value it annotates, and whatever only those ops read removed."""
    mapping: dict[int, Value] = {}
    stores: list[Operation] = []

    def visit(block: Block) -> None:
        kept = []
        for op in block.ops:
            for region in op.regions:
                visit(region)
            if op.op is Op.BLOCK_LOAD or op.op is Op.HINT:  # a hint of a hint: to the root
                mapping[op.result.id] = mapping.get(op.operands[0].id, op.operands[0])
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
