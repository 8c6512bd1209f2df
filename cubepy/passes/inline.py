"""Inlines every @cube.func call: the callee's body replaces the CALL op."""

from __future__ import annotations

from ..ir import Block, Function, Op, Value
from .rewrite import clone_ops, substitute


def _inline_block(block: Block, renamed: dict[int, Value]) -> None:
    ops = []
    for op in block.ops:
        op.operands = [renamed.get(v.id, v) for v in op.operands]
        for region in op.regions:
            _inline_block(region, renamed)
        if op.op is not Op.CALL:
            ops.append(op)
            continue
        callee: Function = op.attrs["callee"]
        mapping = {a.id: v for a, v in zip(callee.args, op.operands)}
        body = clone_ops(callee.body.ops, mapping)
        *inner, ret = body
        spliced = Block([], inner)
        _inline_block(spliced, renamed)  # the callee may call other helpers
        ops.extend(spliced.ops)
        for result, value in zip(op.results, ret.operands):
            renamed[result.id] = renamed.get(value.id, value)
    block.ops = ops


def inline(fn: Function) -> None:
    """Replace each CALL by a copy of its callee's body."""
    renamed: dict[int, Value] = {}
    _inline_block(fn.body, renamed)
    substitute(fn.body, renamed)
