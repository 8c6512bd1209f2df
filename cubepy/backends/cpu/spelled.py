"""The ops that generated cpu code spells out rather than leaving to NumPy or Numba:
``rsqrt`` (in float64, or scaled, away from fast-math's estimate), ``sigmoid`` (without
overflow), ``umulhi`` and bitcasts. A mixin of ``CpuEmitter``, which supplies ``n``, ``line``
and ``fresh``."""

from __future__ import annotations

from typing import Any

from ...ir import Operation, Value
from .registers import HALF, reg

_SHORT_HALF = {"float16": "f16", "bfloat16": "bf16"}  # the helpers' names for them


class SpelledOut:
    n: Any
    line: Any
    fresh: Any

    def _rsqrt(self, x: Value) -> str:
        v, t = self.n(x), reg(x.type.dtype)
        if t == "np.float32":
            # In float64, rounded once: under fastmath LLVM computes a float32 1/sqrt as an
            # estimate refined by a Newton step, which was 2.5 ulp off (1117816464.0), gave NaN
            # at 0 and inf, and read subnormals as 0. float64's sqrt and division are exact
            # IEEE operations here, and every float32 is a normal float64.
            if x.type.is_scalar:
                return f"np.float32(1.0 / np.sqrt(np.float64({v})))"
            return f"(1.0 / np.sqrt({v}.astype(np.float64))).astype(np.float32)"
        # float64: zero and inf take 1/x (+-inf, 0), as NumPy's 1/sqrt(x) gives; a subnormal
        # is scaled into the normal range by an even power of two first, exactly, and the
        # result back (the same fastmath form read subnormals as 0)
        tiny, up, down = "2.2250738585072014e-308", "2.0 ** 108", "2.0 ** 54"
        scaled = f"{t}({down}) * ({t}(1) / np.sqrt({v} * {t}({up})))"
        if x.type.is_scalar:
            return (f"({t}(1) / {v} if {v} == 0 or {v} == np.inf else {scaled} "
                    f"if {v} < {t}({tiny}) else {t}(1) / np.sqrt({v}))")
        return (f"np.where({v} == {t}(0), {t}(1) / {v}, np.where({v} == np.inf, {t}(0), "
                f"np.where({v} < {t}({tiny}), {scaled}, {t}(1) / np.sqrt({v}))))")

    def _sigmoid(self, x: Value) -> str:
        # exp(x) / (1 + exp(x)) below 0, where 1 / (1 + exp(-x)) overflows to 0 for results
        # in the subnormal range (sigmoid(-92) is 1.1e-40 in float32); one exp either way
        v, one, e = self.n(x), f"{reg(x.type.dtype)}(1)", self.fresh("sigmoid_exp")
        self.line(f"{e} = np.exp(-np.abs({v}))")
        if x.type.is_scalar:
            return f"({e} / ({one} + {e}) if {v} < 0 else {one} / ({one} + {e}))"
        return f"np.where({v} < 0, {e} / ({one} + {e}), {one} / ({one} + {e}))"

    def _umulhi(self, op: Operation) -> str:
        """The high word of the 64-bit product of the operands' unsigned bit patterns: a
        conversion to a narrower or same-width integer keeps the low bits (wraps), in NumPy
        and in Numba, for scalars and for tiles."""
        wide = [f"np.uint64(np.uint32({self.n(v)}))" if v.type.is_scalar
                else f"{self.n(v)}.astype(np.uint32).astype(np.uint64)" for v in op.operands]
        high = f"({wide[0]} * {wide[1]}) >> np.uint64(32)"
        if op.result.type.is_scalar:
            return high  # set() converts it to the result's dtype
        return f"({high}).astype({reg(op.result.type.dtype)})"

    def _bitcast(self, op: Operation) -> str:
        """``x.to(dtype, bitcast=True)`` as a NumPy view of a scalar or tile; a 16-bit float,
        which lives in a float32 register, goes through its 16-bit pattern (a uint16, rounded
        to the 16-bit value as a store rounds it)."""
        (x,) = op.operands
        src, dst = x.type.dtype, op.result.type.dtype
        suffix = "s" if x.type.is_scalar else "t"

        def view(expr: str, held: str, wanted: str) -> str:
            if held == wanted:
                return expr
            return f"{held}({expr}).view({wanted})" if suffix == "s" else \
                f"{expr}.view({wanted})"

        held, expr = reg(src), self.n(x)
        if src.name in HALF:
            expr, held = f"f32_to_{_SHORT_HALF[src.name]}_{suffix}({expr})", "np.uint16"
        if dst.name in HALF:
            return f"{_SHORT_HALF[dst.name]}_to_f32_{suffix}({view(expr, held, 'np.uint16')})"
        return view(expr, held, reg(dst))
