"""NumPy's integer and float ``//`` and ``%``, C99's ``**`` and bitcasts in generated Triton
source: a mixin of ``TritonEmitter``, which supplies ``n``, ``reg``, ``to``, ``assign``, ``extern``,
``in_f32`` and the sets of prelude ``helpers`` and ``constants`` a kernel needs."""

from __future__ import annotations

from typing import Any

from ...ir import Op, Operation
from ...ir import dtypes as dt
from ..base import constant_value, nonzero_constant

HALF = ("float16", "bfloat16")  # computed in float32 where Triton or NumPy would round early


class ArithMixin:
    helpers: set[str]
    n: Any
    reg: Any
    to: Any
    assign: Any
    extern: Any
    in_f32: Any
    constants: set[str]

    def floor_division(self, op: Operation) -> None:
        dtype = op.result.type.dtype
        a, b = (self.n(v) for v in op.operands)
        if dtype.kind == "u" and nonzero_constant(op.operands[1]):
            # no sign: C's and Python's agree, and the divisor is not zero
            self.assign(op, f"{a} {'//' if op.op is Op.FLOORDIV else '%'} {b}")
        elif dtype.is_float:  # NumPy's, from the exact fmod (prelude's _floordiv_float)
            src = self.reg(dtype)
            wide = dt.float32 if src.name in HALF else src
            x, y = (self.to(v, src, wide) for v in (a, b))
            helper = "_floordiv_float" if op.op is Op.FLOORDIV else "_floormod_float"
            self.helpers.add(helper)
            call = f"{helper}({x}, {y}, {self.extern('fmod')}({x}, {y}))"
            self.assign(op, self.to(call, wide, src))
        else:  # signed, or unsigned by a run-time divisor (the sign tests fold away)
            self.helpers.add(helper := "_floordiv" if op.op is Op.FLOORDIV else "_floormod_int")
            self.assign(op, f"{helper}({a}, {b})")

    def power(self, op: Operation) -> None:
        """C99's pow (libdevice's, or the interpreter's _pow); a whole constant exponent up to
        3 by multiplications alone, which give pow's answer for every base (signed zeros,
        infinities and NaN included) at a fraction of its cost. ``a ** -2`` squares the
        reciprocal where ``a * a`` overflows: ``1 / (a * a)`` gave 0 there, though ``a ** -2``
        is still a subnormal (elsewhere it is the more accurate form, within half an ulp)."""
        x, n = op.operands
        value = constant_value(n)
        a = self.n(x)
        simple = {1: a, 2: f"{a} * {a}", 3: f"{a} * {a} * {a}", -1: f"1.0 / {a}",
                  -2: f"tl.where({a} * {a} < INF, 1.0 / ({a} * {a}), (1.0 / {a}) * (1.0 / {a}))"}
        if value is not None and float(value).is_integer() and int(value) in simple:
            if int(value) == -2:
                self.constants.add("INF")
            self.assign(op, simple[int(value)])
        else:
            self.in_f32(op, self.extern("pow"))

    def bitcast(self, op: Operation) -> None:
        """``x.to(dtype, bitcast=True)``. On the interpreter bfloat16 lives in a float32
        register: its pattern is the nearest bfloat16's (``_bf16_bits``), and a pattern
        becomes a bfloat16 value by ``_bf16_value``."""
        (x,) = op.operands
        src, dst = x.type.dtype, op.result.type.dtype
        value = self.n(x)
        if self.reg(src) != src:
            self.helpers.add("_bf16_bits")
            value, src = f"_bf16_bits({value})", dt.int16
        if self.reg(dst) != dst:
            self.helpers.add("_bf16_value")
            bits = value if src == dt.int16 else f"({value}).to(tl.int16, bitcast=True)"
            self.assign(op, f"_bf16_value({bits})")
        elif src == dst:
            self.assign(op, value)
        else:
            self.assign(op, f"({value}).to(tl.{dst.name}, bitcast=True)")  # never bool
