"""Common-subexpression elimination of pure ops, scoped by the structured regions."""

from __future__ import annotations

from ..ir import Block, Function, Value
from ..ir.ops import NOT_PURE
from .rewrite import substitute


def _attr_key(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, float):  # 0.0 and -0.0 differ; so do NaNs of any payload
        return ("float", repr(value))
    return value


def _cse_block(block: Block, seen: dict, mapping: dict[int, Value]) -> None:
    ops = []
    for op in block.ops:
        op.operands = [mapping.get(v.id, v) for v in op.operands]
        for region in op.regions:
            _cse_block(region, dict(seen), mapping)
        # an op with a region (a reduction by a combine function) is kept: its key would
        # have to compare the regions' ops
        if op.op in NOT_PURE or len(op.results) != 1 or op.regions:
            ops.append(op)
            continue
        key = (op.op, tuple(v.id for v in op.operands),
               tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items())),
               op.results[0].type)
        if key in seen:
            mapping[op.results[0].id] = seen[key]
            continue
        seen[key] = op.results[0]
        ops.append(op)
    block.ops = ops


def cse(fn: Function) -> None:
    """Merge pure ops that compute the same thing from the same operands."""
    mapping: dict[int, Value] = {}
    _cse_block(fn.body, {}, mapping)
    substitute(fn.body, mapping)
