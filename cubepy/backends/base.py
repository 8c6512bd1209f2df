"""The protocol every backend implements, and what a target says it supports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import UnsupportedError
from ..ir import Function, Loc, Op, Operation, Value, walk


@dataclass(frozen=True)
class TargetInfo:
    """What a target can run: dtype names, feature names and limits.

    Example:
        >>> cube.target_info("cpu").dtypes >= {"float32", "bfloat16"}  # doctest: +SKIP
        True
    """

    name: str
    dtypes: frozenset[str]
    features: frozenset[str] = frozenset()
    limits: dict[str, int] = field(default_factory=dict)
    device: str = ""
    atomic_dtypes: frozenset[str] = frozenset()


class Compiled(Protocol):
    """A kernel compiled for one target and one specialization."""

    source: str

    def launch(self, grid: tuple[int, int, int], args: list[Any]) -> None: ...


class Backend(Protocol):
    name: str

    def info(self) -> TargetInfo: ...

    def compile(self, fn: Function, options: dict[str, Any]) -> Compiled: ...


def check_supported(fn: Function, info: TargetInfo) -> None:
    """UnsupportedError at the first value whose dtype (or atomic) the target lacks."""
    for arg, name in zip(fn.args, fn.arg_names):
        if arg.type.dtype.name not in info.dtypes:
            _refuse(info, arg.type.dtype.name, fn.loc, f"argument '{name}'")
    for op in walk(fn.body):
        for value in [*op.results, *op.operands]:
            if value.type.dtype.name not in info.dtypes:
                _refuse(info, value.type.dtype.name, op.loc or fn.loc, "this expression")
        if op.attrs.get("rounding") and "correct_rounding" not in info.features:
            what = "division (cube.div_rn, cube.fdiv(..., ieee_rounding=True))" \
                if op.op is Op.DIV else "square root (cube.sqrt_rn)"
            raise UnsupportedError(
                f"target '{info.name}' does not promise a correctly rounded {what}", op.loc,
                "use `/` or cube.sqrt there (WGSL's are within 2.5 ulp), or run on 'cpu' or "
                "'triton'")
        if op.op.value in ("atomic", "atomic_cas"):
            dtype = op.operands[0].type.dtype.name
            if dtype not in info.atomic_dtypes:
                raise UnsupportedError(
                    f"target '{info.name}' has no atomic operations on {dtype}"
                    f"{f' ({info.device})' if info.device else ''}",
                    op.loc, "use atomics on " + ", ".join(sorted(info.atomic_dtypes)))


def _refuse(info: TargetInfo, dtype: str, loc: Loc | None, what: str) -> None:
    device = f" ({info.device})" if info.device else ""
    raise UnsupportedError(
        f"target '{info.name}'{device} does not support {dtype} ({what})", loc,
        f"use one of {', '.join(sorted(info.dtypes))}, or run on another target")


def constant_value(value: Value) -> float | None:
    """The number an operand holds when it is a constant, else None (backends pick cheaper
    forms for constant divisors and exponents)."""
    owner = value.owner
    if owner is None or owner.op is not Op.CONST:
        return None
    return owner.attrs["value"]


def nonzero_constant(value: Value) -> bool:
    """Whether ``value`` is a constant other than 0: an integer division by it needs no guard
    (cubepy divides by zero as NumPy does, giving 0; GPUs leave it undefined, WGSL gives the
    dividend)."""
    number = constant_value(value)
    return number is not None and number != 0


def shift_in_range(op: Operation) -> bool:
    """Whether a shift's amount is a constant from 0 to below the width: the one case every
    target's own shift gets right. Other amounts need a guard: cubepy shifts as NumPy does
    (by the width or more, or by a negative amount, ``<<`` gives 0 and ``>>`` 0 or -1), but
    WGSL takes the amount modulo the width and LLVM's shifts give poison."""
    amount = op.operands[1].owner
    if amount is None or amount.op is not Op.CONST:
        return False
    return 0 <= int(amount.attrs["value"]) < op.operands[0].type.dtype.bits


# ops whose result is a 16-bit float value when their value operands are
_KEEPS_HALF_VALUES = {Op.BROADCAST: (0,), Op.EXPAND_DIMS: (0,), Op.RESHAPE: (0,),
                      Op.PERMUTE: (0,), Op.FLIP: (0,), Op.FULL: (0,), Op.NEG: (0,), Op.ABS: (0,),
                      Op.WHERE: (1, 2), Op.MAXIMUM: (0, 1), Op.MINIMUM: (0, 1)}


def holds_half_value(value: Value, depth: int = 8) -> bool:
    """Whether a float16 or bfloat16 ``value``, which the cpu and wgsl targets keep in a float32
    register, surely holds a value of its dtype already: a load (with such an ``other``), a
    cast or bitcast to it, a constant it represents, or moves and selections of those.
    Arithmetic leaves float32's result unrounded until a cast or store; those need to round
    only other values."""
    owner = value.owner
    if owner is None or depth == 0:
        return False
    if owner.op in (Op.CAST, Op.BITCAST):
        return True
    if owner.op is Op.LOAD:
        return len(owner.operands) < 3 or holds_half_value(owner.operands[2], depth - 1)
    if owner.op is Op.CONST:
        try:
            host = value.type.dtype.numpy
        except TypeError:  # bfloat16 without ml_dtypes: round to be safe
            return False
        number = float(owner.attrs["value"])
        return number != number or float(np.array(number, host)) == number
    operands = _KEEPS_HALF_VALUES.get(owner.op)
    return operands is not None and all(
        holds_half_value(owner.operands[i], depth - 1) for i in operands)


def assert_message(op: Operation) -> str:
    """What a failed ``device_assert`` says: the kernel's file and line, and the message."""
    where = f"{op.loc.file}:{op.loc.line}: " if op.loc is not None else ""
    message = op.attrs["message"]
    return f"{where}device_assert failed{': ' + message if message else ''}"
