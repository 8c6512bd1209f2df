"""Checks the IR's invariants: defined-before-use, types by the op rules, region shapes."""

from __future__ import annotations

from . import rules
from .core import Block, Function, Operation, Type
from .ops import Op


class VerifyError(Exception):
    """The IR broke an invariant: a compiler bug, never the user's mistake."""


def _check_op(operation: Operation, defined: set[int]) -> None:
    for operand in operation.operands:
        if operand.id not in defined:
            raise VerifyError(f"{operation.op.value} uses {operand!r} before its definition")
    if operation.op is Op.CALL:
        raise VerifyError("a call survived inlining")
    if operation.op in (Op.FOR, Op.WHILE, Op.IF):
        _check_control(operation, defined)
        return
    expected = rules.infer(operation.op, [v.type for v in operation.operands], operation.attrs)
    got = [r.type for r in operation.results]
    if expected != got:
        raise VerifyError(f"{operation.op.value}: results typed {got}, rules say {expected}")
    if operation.op in (Op.REDUCE_FN, Op.SCAN_FN):
        (combine,) = operation.regions
        scalars = [Type(v.type.dtype) for v in operation.operands]
        if [a.type for a in combine.args] != scalars * 2:
            raise VerifyError(f"{operation.op.value}: combine takes {scalars * 2}")
        _check_region(combine, defined, scalars)


def _check_region(block: Block, defined: set[int], yields: list) -> None:
    inner = set(defined) | {a.id for a in block.args}
    _check_block(block, inner)
    term = block.terminator
    if term is None:
        raise VerifyError("region does not end with yield")
    got = [v.type for v in term.operands]
    if got != yields:
        raise VerifyError(f"region yields {got}, expected {yields}")


def _check_control(operation: Operation, defined: set[int]) -> None:
    results = [r.type for r in operation.results]
    if operation.op is Op.FOR:
        (body,) = operation.regions
        inits = [v.type for v in operation.operands[3:]]
        if inits != results or [a.type for a in body.args[1:]] != results:
            raise VerifyError("for: carried types disagree")
        _check_region(body, defined, results)
    elif operation.op is Op.WHILE:
        cond, body = operation.regions
        _check_region(cond, defined, [cond.terminator.operands[0].type] if cond.ops else [])
        if cond.terminator.operands[0].type.shape != ():
            raise VerifyError("while: condition is not a scalar")
        _check_region(body, defined, results)
    else:
        for region in operation.regions:
            _check_region(region, defined, results)


def _check_block(block: Block, defined: set[int]) -> None:
    for i, operation in enumerate(block.ops):
        if operation.op is Op.YIELD and i != len(block.ops) - 1:
            raise VerifyError("yield is not the last op of its block")
        _check_op(operation, defined)
        defined.update(r.id for r in operation.results)


def verify(fn: Function) -> None:
    """Raise VerifyError if ``fn`` breaks an IR invariant."""
    _check_block(fn.body, {a.id for a in fn.args})
