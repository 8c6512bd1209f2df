"""Dead-code elimination: pure ops (and effect-free control flow) whose results are unused."""

from __future__ import annotations

from ..ir import Block, Function, Operation, walk
from ..ir.ops import CONTROL, SIDE_EFFECTS


def _has_effects(op: Operation) -> bool:
    if op.op in SIDE_EFFECTS:
        return True
    if op.op in CONTROL:
        return any(inner.op in SIDE_EFFECTS and inner.op.value != "yield"
                   for region in op.regions for inner in walk(region))
    return False


def _used_ids(block: Block) -> set[int]:
    return {v.id for op in walk(block) for v in op.operands}


def _sweep(block: Block, used: set[int]) -> bool:
    changed = False
    kept = []
    for op in block.ops:
        for region in op.regions:
            changed |= _sweep(region, used)
        if not _has_effects(op) and not any(r.id in used for r in op.results):
            changed = True
            continue
        kept.append(op)
    block.ops = kept
    return changed


def dce(fn: Function) -> None:
    """Remove dead ops until none is left."""
    while _sweep(fn.body, _used_ids(fn.body)):
        pass
