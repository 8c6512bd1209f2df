"""Shared mechanics of the transforms: cloning ops and substituting values."""

from __future__ import annotations

from ..ir import Block, Operation, Value


def clone_ops(ops: list[Operation], mapping: dict[int, Value]) -> list[Operation]:
    """Copies of ``ops`` with operands renamed through ``mapping`` (which gains the results)."""
    out = []
    for op in ops:
        operands = [mapping.get(v.id, v) for v in op.operands]
        regions = []
        for region in op.regions:
            args = [Value(a.type, None, a.name) for a in region.args]
            mapping.update({a.id: n for a, n in zip(region.args, args)})
            regions.append(Block(args, clone_ops(region.ops, mapping)))
        new = Operation(op.op, operands, [], dict(op.attrs), regions, op.loc)
        new.results = [Value(r.type, new, r.name) for r in op.results]
        mapping.update({r.id: n for r, n in zip(op.results, new.results)})
        out.append(new)
    return out


def substitute(block: Block, mapping: dict[int, Value]) -> None:
    """Rename operands through ``mapping`` everywhere below ``block``."""
    if not mapping:
        return
    for op in block.ops:
        op.operands = [mapping.get(v.id, v) for v in op.operands]
        for region in op.regions:
            substitute(region, mapping)
