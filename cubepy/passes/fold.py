"""Constant folding: scalar ops on constants become constants, and an ``if`` whose condition
became constant is replaced by the branch it takes. (Comptime ``if`` is already folded by the
frontend, which never builds the dead branch; this pass folds what optimisation exposes.)"""

from __future__ import annotations

import numpy as np

from ..ir import Block, Builder, Function, Op, Operation, Value
from ..ir.ops import BINARY, COMPARE
from .rewrite import substitute

_NUMPY_BINARY = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.true_divide,
    Op.FLOORDIV: np.floor_divide, Op.MOD: np.mod, Op.MAXIMUM: np.maximum,
    Op.MINIMUM: np.minimum, Op.AND: np.bitwise_and, Op.OR: np.bitwise_or,
    Op.XOR: np.bitwise_xor, Op.EQ: np.equal, Op.NE: np.not_equal, Op.LT: np.less,
    Op.LE: np.less_equal, Op.GT: np.greater, Op.GE: np.greater_equal,
}
# f16/bf16 rounding differs per target; leave those to the backends.
_FOLDABLE = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "float32", "float64")


def _const(value: Value) -> object | None:
    owner = value.owner
    if owner is None or owner.op is not Op.CONST or value.type.dtype.name not in _FOLDABLE:
        return None
    return np.array(owner.attrs["value"], dtype=value.type.dtype.numpy)


def _fold_scalar(op: Operation) -> object | None:
    if op.results[0].type.shape or op.results[0].type.dtype.name not in _FOLDABLE:
        return None
    args = [_const(v) for v in op.operands]
    if any(a is None for a in args):
        return None
    with np.errstate(all="ignore"):
        if op.op in _NUMPY_BINARY and (op.op in BINARY or op.op in COMPARE):
            if op.op in (Op.FLOORDIV, Op.MOD) and not op.operands[1].type.dtype.is_float \
                    and args[1] == 0:
                return None
            return _NUMPY_BINARY[op.op](args[0], args[1])
        if op.op is Op.CAST:
            return args[0].astype(op.attrs["dtype"].numpy)
        if op.op is Op.BITCAST and not op.attrs["dtype"].is_float:
            # (to a float, a constant would go through a Python float: NaN payloads lost)
            return args[0].view(op.attrs["dtype"].numpy)
        if op.op is Op.NEG:
            return np.negative(args[0])
        if op.op is Op.NOT:
            return np.logical_not(args[0]) if op.operands[0].type.dtype.is_bool \
                else np.invert(args[0])
    return None


def _fold_block(block: Block, mapping: dict[int, Value]) -> None:
    ops: list[Operation] = []
    for op in block.ops:
        op.operands = [mapping.get(v.id, v) for v in op.operands]
        for region in op.regions:
            _fold_block(region, mapping)
        folded = _fold_scalar(op) if op.results and op.op is not Op.CONST else None
        if folded is not None:
            b = Builder(Block())
            b.loc = op.loc
            new = b.const(folded.item(), op.results[0].type.dtype)
            ops.extend(b.block.ops)
            mapping[op.results[0].id] = new
            continue
        if op.op is Op.IF and _const(op.operands[0]) is not None:
            taken = op.regions[0] if bool(_const(op.operands[0])) else op.regions[1]
            *inner, term = taken.ops
            ops.extend(inner)
            for result, value in zip(op.results, term.operands):
                mapping[result.id] = mapping.get(value.id, value)
            continue
        ops.append(op)
    block.ops = ops


def fold(fn: Function) -> None:
    """Fold constants and constant branches in place."""
    mapping: dict[int, Value] = {}
    _fold_block(fn.body, mapping)
    substitute(fn.body, mapping)
