"""Which integer tiles are affine in the tile indices: ``base + sum(index[d] * stride[d])``.

A pointer tile whose offsets are affine with unit stride on the last axis addresses whole
rows of memory, so the CPU backend loads and stores it row by row as slices instead of
gathering element by element. Also computes which ops the generated code still needs once
those loads and stores no longer read the offset tiles.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import Block, Function, Op, Operation, Value

Term = tuple[str, frozenset[int]]  # an expression on scalars, and the scalar values it reads


@dataclass(frozen=True)
class Affine:
    base: Term
    strides: tuple[int | Term, ...]  # one per axis; ints are compile-time constants


def _const_int(value: Value) -> int | None:
    owner = value.owner
    if owner is not None and owner.op is Op.CONST and value.type.dtype.is_int:
        return int(owner.attrs["value"])
    return None


def _scalar_term(value: Value, name: str) -> int | Term:
    const = _const_int(value)
    return const if const is not None else (name, frozenset({value.id}))


def _add(a: int | Term, b: int | Term, sign: int = 1) -> int | Term:
    if isinstance(a, int) and isinstance(b, int):
        return a + sign * b
    ta = (str(a), frozenset()) if isinstance(a, int) else a
    tb = (str(b), frozenset()) if isinstance(b, int) else b
    return (f"({ta[0]} {'+' if sign > 0 else '-'} {tb[0]})", ta[1] | tb[1])


def _mul(a: int | Term, c: int | Term) -> int | Term:
    if isinstance(a, int) and isinstance(c, int):
        return a * c
    if a == 0 or c == 0:
        return 0
    ta = (str(a), frozenset()) if isinstance(a, int) else a
    tc = (str(c), frozenset()) if isinstance(c, int) else c
    return (f"({ta[0]} * {tc[0]})", ta[1] | tc[1])


def term(x: int | Term) -> Term:
    return (str(x), frozenset()) if isinstance(x, int) else x


class AffineAnalysis:
    """Affine forms of the integer and pointer values of a function."""

    def __init__(self, fn: Function, name_of, uniform: bool = False):
        """``uniform``: a one-element tile is a scalar term too (the lane loops' emitter
        names it as a scalar variable; the tile form names an array)."""
        self.forms: dict[int, Affine] = {}
        self.name_of = name_of
        self.uniform = uniform
        for value in fn.args:
            if value.type.is_ptr:
                self.forms[value.id] = Affine((("0"), frozenset()), ())
        self._block(fn.body)

    def _scalar(self, value: Value) -> Affine | None:
        if value.id in self.forms:
            return self.forms[value.id]
        one = value.type.is_scalar or (self.uniform and value.type.numel == 1)
        if one and (value.type.dtype.is_int or value.type.is_ptr):
            t = _scalar_term(value, self.name_of(value))
            return Affine(term(t), ())
        return None

    def _block(self, block: Block) -> None:
        for op in block.ops:
            for region in op.regions:
                self._block(region)
            if len(op.results) == 1 and not op.results[0].type.is_scalar:
                form = self._form(op)
                if form is not None:
                    self.forms[op.results[0].id] = form

    def _form(self, op: Operation) -> Affine | None:
        result = op.results[0]
        rank = len(result.type.shape)
        if op.op is Op.ARANGE:
            return Affine(term(op.attrs["start"]), (1,))
        args = [self._scalar(v) for v in op.operands]
        if op.op in (Op.ADD, Op.SUB, Op.PTR_ADD) and all(a is not None for a in args):
            a, b = (self._widen(x, rank) for x in args)
            sign = -1 if op.op is Op.SUB else 1
            base = term(_add(a.base, b.base, sign))
            return Affine(base, tuple(_add(x, y, sign) for x, y in zip(a.strides, b.strides)))
        if op.op is Op.MUL and all(a is not None for a in args):
            a, b = args
            if b.strides and not a.strides:
                a, b = b, a
            if b.strides:
                return None  # tile * tile is not affine
            a = self._widen(a, rank)
            factor: int | Term = b.base
            if b.base[0].lstrip("-").isdigit():
                factor = int(b.base[0])
            return Affine(term(_mul(a.base, factor)), tuple(_mul(s, factor) for s in a.strides))
        if op.op is Op.EXPAND_DIMS and args[0] is not None and args[0].strides:
            axis = op.attrs["axis"] % rank
            strides = list(args[0].strides)
            strides.insert(axis, 0)
            return Affine(args[0].base, tuple(strides))
        if op.op in (Op.BROADCAST, Op.RESHAPE) and args[0] is not None:
            return self._reshaped(args[0], op.operands[0].type.shape, result.type.shape, op.op)
        if op.op is Op.CAST and args[0] is not None and result.type.dtype.bits >= 32:
            return args[0]
        return None

    @staticmethod
    def _widen(a: Affine, rank: int) -> Affine:
        return a if a.strides else Affine(a.base, (0,) * rank)

    @staticmethod
    def _reshaped(a: Affine, src: tuple, dst: tuple, kind: Op) -> Affine | None:
        if kind is Op.BROADCAST:
            if len(src) != len(dst):
                return None
            return Affine(a.base, tuple(0 if s == 1 else st for s, st in zip(src, a.strides)))
        # a reshape that only adds or drops size-1 axes keeps the form
        if [d for d in src if d != 1] != [d for d in dst if d != 1]:
            return None
        kept = iter([st for d, st in zip(src, a.strides) if d != 1])
        return Affine(a.base, tuple(0 if d == 1 else next(kept) for d in dst))


def row_access(analysis: AffineAnalysis, ptr: Value) -> Affine | None:
    """The affine form of a pointer tile that addresses contiguous rows (rank 1 or 2)."""
    form = analysis.forms.get(ptr.id)
    if form is None or not form.strides or len(form.strides) > 2 or form.strides[-1] != 1:
        return None
    return form


__all__ = ["Affine", "AffineAnalysis", "row_access", "term"]
