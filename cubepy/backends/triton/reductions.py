"""The ``triton`` target's reductions and scans: Triton's own where they give NumPy's
answers, ``tl.reduce`` with cubepy's combine functions where they do not (NaN-propagating
max and min, first-NaN argmax and argmin, or), and a user's combine region rendered as a
``@triton.jit`` function of its own for ``reduce``/``associative_scan``."""

from __future__ import annotations

from ...ir import Block, Op, Operation, walk
from ...ir import dtypes as dt
from ...ir.rules import reduce_dtype
from .arith import HALF


class ReductionEmitter:
    def reduction(self, op: Operation) -> None:
        (x,) = op.operands
        kind, axis = op.attrs["kind"], op.attrs["axis"]
        src, res = self.reg(x.type.dtype), self.reg(op.result.type.dtype)
        if kind == "xor":
            self.assign(op, f"tl.xor_sum({self.n(x)}, axis={axis})")
        elif kind == "or":  # tl.reduce_or is newer than the Triton cubepy supports
            self.helpers.add("_or")
            self.assign(op, f"tl.reduce({self.n(x)}, {axis}, _or)")
        elif kind in ("sum", "cumsum", "cumprod"):
            acc = dt.float32 if src.name in HALF else reduce_dtype(src)
            call = {"sum": "tl.sum", "cumsum": "tl.cumsum", "cumprod": "tl.cumprod"}[kind]
            expr = f"{call}({self.to(self.n(x), src, acc)}, axis={axis})"
            self.assign(op, self.to(expr, acc, res))
        elif src.is_bool:  # max/min/argmax/argmin of bool: on int8
            expr = f"tl.{kind}({self.to(self.n(x), src, dt.int8)}, axis={axis})"
            self.assign(op, expr if op.op is Op.ARGREDUCE else f"{expr} != 0")
        elif src.is_float:  # NaN wins, and argmax/argmin find the first one, as NumPy's
            self.helpers.add(f"_{kind}_nan")
            shape = x.type.shape  # argmax: each element's index along the axis goes along
            ones = tuple(n if d == axis else 1 for d, n in enumerate(shape))
            index = f"tl.broadcast_to(tl.reshape(tl.arange(0, {shape[axis]}), {ones}), {shape})"
            operands = self.n(x) if op.op is Op.REDUCE else f"({self.n(x)}, {index})"
            picked = "" if op.op is Op.REDUCE else "[1]"
            self.assign(op, f"tl.reduce({operands}, {axis}, _{kind}_nan){picked}")
        else:  # argmax/argmin break ties to the left: the first occurrence, as NumPy's
            self.assign(op, f"tl.{kind}({self.n(x)}, axis={axis})")

    def combined(self, op: Operation) -> None:
        """tl.reduce or tl.associative_scan with the combine region as a jit function."""
        function = self.combine_function(op.regions[0])
        tiles = [self.n(t) for t in op.operands]
        arg = tiles[0] if len(tiles) == 1 else f"({', '.join(tiles)})"
        axis = op.attrs["axis"]
        call = f"tl.reduce({arg}, {axis}, {function})" if op.op is Op.REDUCE_FN else \
            f"tl.associative_scan({arg}, {axis}, {function}, reverse={op.attrs['reverse']})"
        self.line(f"{', '.join(self.n(r) for r in op.results)} = {call}")

    def combine_function(self, region: Block) -> str:
        """A ``@triton.jit`` function of the region (its source kept for the module), named."""
        saved = self.lines, self.depth
        self.lines, self.depth = [], 1
        name = self.fresh("_combine")
        params = [self.fresh(arg.name) for arg in region.args]
        for arg, param in zip(region.args, params):
            self.alias(arg, param)
        inside = {a.id for a in region.args} | {r.id for op in walk(region) for r in op.results}
        outside = {v.id: v for op in walk(region) for v in op.operands if v.id not in inside}
        for value in outside.values():  # constants CSE moved out of the region come back in
            if value.owner is None or value.owner.op is not Op.CONST:
                raise AssertionError(f"triton codegen: a combine function reads {value!r}")
            self.render(value.owner)
        self.block(region)
        self.line(f"return {', '.join(self.n(v) for v in region.terminator.operands)}")
        text = "\n".join(["@triton.jit", f"def {name}({', '.join(params)}):", *self.lines])
        self.lines, self.depth = saved
        self.combine_functions.append(text)
        return name
