"""WGSL expressions of elementwise ops, with the cpu target's semantics: Python floor
division and modulo, float to int casts that truncate, NaN-propagating max and min, NumPy's
shifts by the width or more."""

from __future__ import annotations

import math
import re

from ...ir import Op, Operation
from ..base import constant_value, holds_half_value, nonzero_constant, shift_in_range
from . import codegen_float as cf
from . import codegen_types as ty
from .codegen_f64 import F64_HELPERS, f64_call

INFIX = {
    Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.EQ: "==", Op.NE: "!=", Op.LT: "<",
    Op.LE: "<=", Op.GT: ">", Op.GE: ">=",
}
MATH = {
    Op.EXP: "exp", Op.EXP2: "exp2", Op.LOG: "log", Op.LOG2: "log2", Op.SQRT: "sqrt",
    Op.RSQRT: "inverseSqrt", Op.SIN: "sin", Op.COS: "cos", Op.TANH: "tanh", Op.FLOOR: "floor",
    Op.CEIL: "ceil",
}
# float64 math computed in software (codegen_f64): adapters lack it or get it wrong.
F64_SOFTWARE = frozenset({Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SIN, Op.COS, Op.TANH, Op.ERF,
                          Op.SIGMOID})
# A constant whole exponent up to this size is computed by repeated squaring alone.
POWI_LIMIT = 64


class OpsMixin:
    """``elementwise(op, args)``: the expression of one elementwise op on operand texts."""

    def use_f64(self, name: str) -> str:
        deps, text = F64_HELPERS[name]
        for dep in deps:
            self.use_f64(dep)
        self.helpers.setdefault(name, text)
        return name

    def use_float(self, kind: str, t: str) -> str:
        """Register codegen_float's helper ``kind`` for ``t`` (and what it calls)."""
        name, deps = cf.helper_deps(kind, t)
        for dep in deps:
            if dep in F64_HELPERS:
                self.use_f64(dep)
            else:
                self.use_float(dep.rsplit("_", 1)[0], t)
        self.helpers.setdefault(name, cf.helper_text(kind, t))
        return name

    def float_division(self, op: Operation, a: str, b: str) -> str:
        """Float ``/``, ``//`` and ``%`` as NumPy (codegen_float says how)."""
        t = ty.reg(op.operands[0].type)
        if op.op is Op.DIV:
            divisor = constant_value(op.operands[1])
            if divisor == 0.0:  # lavapipe drops a store of `x / 0.0`; x * (+-inf) is IEEE's same
                inf = math.copysign(math.inf, divisor)
                return f"({a} * {ty.literal(inf, op.operands[0].type.dtype)})"
            return f"({a} / {b})"
        kind = "floordiv" if op.op is Op.FLOORDIV else "floormod"
        return f"{self.use_float(kind, t)}({a}, {b})"

    def power(self, op: Operation, a: str, b: str) -> str:
        """``a ** b`` as C99's pow; a small whole constant exponent by multiplications alone,
        which give C99's answer for every base (signed zeros, infinities and NaN included)."""
        t = ty.reg(op.operands[0].type)
        n = constant_value(op.operands[1])
        if n is None or not float(n).is_integer() or abs(n) > POWI_LIMIT:
            return f"{self.use_float('pow', t)}({a}, {b})"
        one = ty.literal(1, op.operands[0].type.dtype)
        simple = {0: one, 1: a, 2: f"({a} * {a})", -1: f"({one} / {a})"}
        return simple.get(int(n)) or f"{self.use_float('powi', t)}({a}, {int(n)}i)"

    def use_helper(self, kind: str, wgsl: str) -> str:
        name, text = ty.helper(kind, wgsl)
        self.helpers.setdefault(name, text)
        return name

    def elementwise(self, op: Operation, args: list[str]) -> str:  # noqa: C901 - one dispatch
        kind = op.op
        x = op.operands[0]
        dtype = x.type.dtype
        t = ty.reg(x.type)
        if dtype.name == "float64" and kind in F64_SOFTWARE:
            return f64_call(kind.value, args, self.use_f64)
        if kind is Op.PTR_ADD:
            off = args[1] if op.operands[1].type.dtype.name == "int32" else f"i32({args[1]})"
            return off if args[0] == "0i" else f"({args[0]} + {off})"
        if dtype.is_float and kind in (Op.DIV, Op.FLOORDIV, Op.MOD):
            return self.float_division(op, *args)
        if kind is Op.POW:
            return self.power(op, *args)
        if kind in INFIX:
            a, b = args
            if dtype.is_bool and kind in (Op.LT, Op.LE, Op.GT, Op.GE):
                a, b = f"select(0i, 1i, {a})", f"select(0i, 1i, {b})"
            if kind is Op.NE and dtype.is_float:
                # lavapipe folds a float `!=` to false when NaN is involved; `==` is right
                return f"(!({a} == {b}))"
            return f"({a} {INFIX[kind]} {b})"
        if kind in (Op.AND, Op.OR, Op.XOR):
            a, b = args
            if dtype.is_bool:
                return f"({a} {'&' if kind is Op.AND else '|' if kind is Op.OR else '!='} {b})"
            return f"({a} {'&' if kind is Op.AND else '|' if kind is Op.OR else '^'} {b})"
        if kind in (Op.SHL, Op.SHR):
            if not shift_in_range(op):  # NumPy's result past the width (helper's comment)
                return f"{self.use_helper(kind.value, t)}({args[0]}, {args[1]})"
            # naga refuses u32() of a 64-bit literal: write a literal amount as u32 directly
            literal = re.fullmatch(r"\(?(-?\d+)(?:li|lu|i|u)?\)?", args[1])
            amount = f"{int(literal.group(1))}u" if literal else f"u32({args[1]})"
            return f"({args[0]} {'<<' if kind is Op.SHL else '>>'} {amount})"
        if kind is Op.FLOORDIV:
            if dtype.kind == "u" and nonzero_constant(op.operands[1]):
                return f"({args[0]} / {args[1]})"
            return f"{self.use_helper('floordiv', t)}({args[0]}, {args[1]})"
        if kind is Op.MOD:
            if dtype.kind == "u" and nonzero_constant(op.operands[1]):
                return f"({args[0]} % {args[1]})"
            return f"{self.use_helper('floormod', t)}({args[0]}, {args[1]})"
        if kind in (Op.MAXIMUM, Op.MINIMUM):
            a, b = args
            cmp = ">" if kind is Op.MAXIMUM else "<"
            if dtype.is_bool:
                return f"({a} {'|' if kind is Op.MAXIMUM else '&'} {b})"
            if dtype.is_float:
                # NaN wins, as in NumPy (`==`: lavapipe folds NaN `!=`). `a`'s NaN is tested
                # on its bits: with a constant `b` NVIDIA's compiler turns the comparison
                # alone into its max/min instruction, which returns `b` for a NaN `a`
                keeps_a = (f"((bitcast<u64>({a}) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu)"
                           if t == "f64" else f"((bitcast<u32>({a}) & 0x7fffffffu) > 0x7f800000u)")
                return f"select({a}, {b}, ({b} {cmp} {a} || !({b} == {b})) && !{keeps_a})"
            return f"{'max' if kind is Op.MAXIMUM else 'min'}({a}, {b})"
        if kind is Op.NEG:  # WGSL has no unary minus on u32: wrap around as NumPy does
            return f"(0u - {args[0]})" if dtype.kind == "u" else f"(-{args[0]})"
        if kind is Op.NOT:
            return f"(!{args[0]})" if dtype.is_bool else f"(~{args[0]})"
        if kind is Op.ABS:
            if dtype.is_bool or dtype.kind == "u":
                return args[0]
            return f"abs({args[0]})"
        if kind is Op.TANH and t == "f32":
            return f"{self.use_helper('tanh', t)}({args[0]})"
        if kind in MATH:
            return f"{MATH[kind]}({args[0]})"
        if kind is Op.ERF:
            return f"{self.use_helper('erf', t)}({args[0]})"
        if kind is Op.SIGMOID:
            return f"{self.use_helper('sigmoid', t)}({args[0]})"
        if kind is Op.UMULHI:
            return f"{self.use_helper('umulhi', t)}({args[0]}, {args[1]})"
        if kind is Op.FMA:
            return f"fma({args[0]}, {args[1]}, {args[2]})"
        if kind is Op.WHERE:
            return f"select({args[2]}, {args[1]}, {args[0]})"
        if kind is Op.BITCAST:  # pairs of 32 or 64 bits: wgsl has no 8- or 16-bit integers
            return f"bitcast<{ty.reg(op.result.type)}>({args[0]})"
        if kind is Op.CAST:
            value = args[0]
            if dtype.name == "float16" and not holds_half_value(x):
                value = ty.round_to_f16(value)  # f32 arithmetic's result, read as float16
            return ty.convert(value, dtype, op.result.type.dtype)
        raise AssertionError(f"wgsl codegen: {kind.value} is not elementwise")
