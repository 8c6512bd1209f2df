"""IR → Python source for the CPU target: NumPy operations on tiles, compiled by Numba.

Tiles are C-contiguous NumPy arrays; scalars are NumPy scalars (each scalar result is wrapped
in its dtype, since Numba widens small integers); pointers are int64 element offsets into the
kernel argument the type names. float16/bfloat16 compute in float32 registers and are rounded
at casts and stores; their arrays are passed as uint16.
"""

from __future__ import annotations

import math

from ...ir import Function, Op, Operation, Value, walk
from ...ir import dtypes as dt
from ...ir.ops import NOT_PURE
from ...ir.rules import reduce_dtype
from ..base import constant_value, holds_half_value, shift_in_range
from ..pyemit import PyEmitter
from .affine import AffineAnalysis, row_access
from .dots import DotAccumulation
from .lines import LineOps
from .registers import HALF, literal, reg
from .spelled import SpelledOut
from .uses import is_zero, needed_values, single_uses

# LLVM may reassociate (vectorized reductions) and contract to fma, but never assume there
# are no NaNs or infinities: masked loads fill with -inf on purpose.
FASTMATH = {"reassoc", "contract", "arcp", "nsz", "afn"}
FASTMATH_TEXT = "{" + ", ".join(repr(flag) for flag in sorted(FASTMATH)) + "}"
BINARY_PY = {
    Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.FLOORDIV: "//", Op.MOD: "%",
    Op.POW: "**", Op.AND: "&", Op.OR: "|", Op.XOR: "^", Op.SHL: "<<", Op.SHR: ">>",
    Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">=",
}
NUMPY_UNARY = {
    Op.ABS: "np.abs", Op.FLOOR: "np.floor", Op.CEIL: "np.ceil", Op.EXP: "np.exp",
    Op.EXP2: "np.exp2", Op.LOG: "np.log", Op.LOG2: "np.log2", Op.SQRT: "np.sqrt",
    Op.SIN: "np.sin", Op.COS: "np.cos", Op.TANH: "np.tanh",
}


def _narrow_int(dtype: dt.DType) -> bool:
    """Integers under 64 bits: in a fused array expression Numba computes them in 64 bits, so
    a wrapped-around intermediate would not wrap; they get their own (NumPy-typed) array."""
    return dtype.is_int and dtype.bits < 64


class CpuEmitter(SpelledOut, DotAccumulation, LineOps, PyEmitter):
    """Renders one kernel as ``<name>_grid(start, stop, g0, g1, g2, *args)``: cubes
    ``start..stop-1`` of a ``g0 x g1 x g2`` grid, one after the other.

    A tile computed elementwise and used once, in the same block, is not given a variable:
    its expression is written into its user's, so Numba fuses the chain into one loop with
    no temporary arrays (DESIGN: elementwise chains are computed where they are used).
    """

    uniform_terms = False  # see AffineAnalysis

    def __init__(self, fn: Function):
        super().__init__(fn)
        self.arg_names = [self.fresh("a_" + n) for n in fn.arg_names]
        for value, name in zip(fn.args, self.arg_names):
            self.alias(value, name)
        for op in walk(fn.body):  # named before the affine forms spell them
            if op.op in (Op.CUBE_POS, Op.CUBE_COUNT):
                self.alias(op.result, f"{op.op.value}{op.attrs['axis']}")
            elif op.op in (Op.FOR, Op.WHILE):  # a carried value: one name in and after the loop
                regions = op.regions if op.op is Op.WHILE else [op.regions[0]]
                skip = 1 if op.op is Op.FOR else 0  # the loop index
                for i, result in enumerate(op.results):
                    for region in regions:
                        self.alias(region.args[skip + i], self.name(result))
        self.inlinable = single_uses(fn)
        self.producers = {r.id: op for op in walk(fn.body) for r in op.results}
        self.deferred: dict[int, str] = {}
        self.affine = AffineAnalysis(fn, self.name, self.uniform_terms)
        self.needed = needed_values(fn, self.affine)
        self.init_dot_accumulation(fn)
        # lines run once per call, before its loop over cubes (buffers every cube reuses)
        self.before_cubes: list[str] = []

    def n(self, v: Value) -> str:
        return self.deferred.get(v.id) or self.name(v)

    ref = n

    def carried_names(self, op: Operation) -> list[str]:
        return [self.name(r) for r in op.results]  # named in __init__

    def loop_index(self, iv: Value) -> str:
        return self.name(iv) + "_raw"

    def index_prologue(self, iv: Value) -> None:
        self.line(f"{self.name(iv)} = {reg(iv.type.dtype)}({self.name(iv)}_raw)")

    def set(self, op: Operation, expr: str) -> None:
        result = op.results[0]
        if result.type.is_scalar and not result.type.is_ptr:
            expr = f"{reg(result.type.dtype)}({expr})"
        elif result.id in self.inlinable and not _narrow_int(result.type.dtype):
            self.deferred[result.id] = f"({expr})"
            return
        self.line(f"{self.n(result)} = {expr}")

    # ---- the module ----

    def module(self, debug: bool) -> str:
        fn = self.fn
        # One function runs a range of cubes: the body sits inside the loop over cube numbers
        # (one Numba compile instead of two). The grid is split into chunks that threads run
        # at once (the function releases the GIL); a plain loop compiles several times faster
        # than a Numba parallel loop.
        self.depth = 2
        # The cube's position advances from the previous one's: three 64-bit divisions per
        # cube cost as much as a cube's reduction of a 64-element row.
        self.line("pid0 += 1")
        self.line("if pid0 == g0:")
        self.line("    pid0, pid1 = 0, pid1 + 1")
        self.line("    if pid1 == g1:")
        self.line("        pid1, pid2 = 0, pid2 + 1")
        for axis in range(3):
            self.line(f"cube_pos{axis} = np.int32(pid{axis})")
            self.line(f"cube_count{axis} = np.int32(g{axis})")
        for value, name in zip(fn.args, self.arg_names):
            if value.type.is_ptr:
                # the argument's array is `name`; its pointer value is offset 0 into it
                self.alias(value, name + "_p")
                self.line(f"{name}_p = np.int64(0)")
        self.block(fn.body)
        args = ", ".join(self.arg_names)
        head = [
            f"# Generated by cubepy from kernel {fn.name} ({fn.loc}). Do not edit.",
            "import numpy as np",
            "from cubepy.backends.cpu.namespace import erf_ufunc, install",
            f"install(globals(), jit={not debug})",
            *self.module_globals(debug),
            "",
            "",
            # sorted: a set's order changes per process, and the source is the cache key; no C
            # wrapper: images and Numba's dispatcher (its Python wrapper) are how grids run
            f"@njit(cache=True, error_model='numpy', nogil=True, no_cfunc_wrapper=True, "
            f"fastmath={FASTMATH_TEXT})",
            f"def {fn.name}_grid(start, stop, g0, g1, g2{', ' if args else ''}{args}):",
            *self.before_cubes,
            "    pid0, pid1, pid2 = start % g0 - 1, (start // g0) % g1, start // (g0 * g1)",
            "    for p in range(start, stop):",
        ]
        return "\n".join(head + self.lines + [""])

    def module_globals(self, debug: bool) -> list[str]:
        """Lines that define globals the kernel reads, after the helpers are installed."""
        return [f"erf = erf_ufunc({not debug})"] if self.needs_erf_ufunc() else []

    def needs_erf_ufunc(self) -> bool:
        return any(op.op is Op.ERF for op in walk(self.fn.body))

    # ---- ops ----

    def render(self, op: Operation) -> None:  # noqa: C901 - one dispatch over the op enum
        kind = op.op
        if kind not in NOT_PURE and op.results and not any(
                r.id in self.needed for r in op.results):
            return  # only row-wise loads/stores used it, and they read its affine form
        if kind is Op.CONST:
            self.line(f"{self.n(op.result)} = {literal(op.attrs['value'], op.attrs['dtype'])}")
        elif kind is Op.CUBE_POS:
            self.alias(op.result, f"cube_pos{op.attrs['axis']}")
        elif kind is Op.CUBE_COUNT:
            self.alias(op.result, f"cube_count{op.attrs['axis']}")
        elif kind is Op.ARANGE:
            self.line(f"{self.n(op.result)} = np.arange({op.attrs['start']}, {op.attrs['end']}, "
                      "1, np.int32)")
        elif kind is Op.FULL:
            dtype = reg(op.result.type.dtype)
            self.line(f"{self.n(op.result)} = np.full({op.attrs['shape']}, "
                      f"{self.n(op.operands[0])}, {dtype})")
        elif kind in BINARY_PY:
            self.binary(op)
        elif kind in (Op.MAXIMUM, Op.MINIMUM):
            fn = "np.maximum" if kind is Op.MAXIMUM else "np.minimum"
            a, b = (self.n(v) for v in op.operands)
            self.set(op, f"{fn}({a}, {b})")
        elif kind is Op.NEG:
            self.set(op, f"-{self.n(op.operands[0])}")
        elif kind is Op.NOT:
            x = op.operands[0]
            fn = "np.logical_not" if x.type.dtype.is_bool else "np.invert"
            self.set(op, f"{fn}({self.n(x)})")
        elif kind is Op.SQRT and op.attrs.get("rounding") == "rn":
            self.set(op, f"sqrt_rn({self.n(op.operands[0])})")
        elif kind in NUMPY_UNARY:
            self.set(op, f"{NUMPY_UNARY[kind]}({self.n(op.operands[0])})")
        elif kind is Op.RSQRT:
            self.set(op, self._rsqrt(op.operands[0]))
        elif kind is Op.SIGMOID:
            self.set(op, self._sigmoid(op.operands[0]))
        elif kind is Op.ERF:
            self.set(op, f"erf({self.n(op.operands[0])})")
        elif kind is Op.UMULHI:
            self.set(op, self._umulhi(op))
        elif kind is Op.FMA:
            a, b, c = (self.n(v) for v in op.operands)
            self.set(op, f"{a} * {b} + {c}")
        elif kind is Op.WHERE:
            c, a, b = (self.n(v) for v in op.operands)
            if op.result.type.is_scalar:
                self.line(f"{self.n(op.result)} = {a} if {c} else {b}")
            else:
                self.set(op, f"np.where({c}, {a}, {b})")
        elif kind is Op.CAST:
            self.cast(op)
        elif kind is Op.BITCAST:
            self.set(op, self._bitcast(op))
        elif kind is Op.PTR_ADD:
            ptr, off = op.operands
            if op.result.type.is_scalar:
                self.line(f"{self.n(op.result)} = np.int64({self.n(ptr)} + {self.n(off)})")
            elif off.type.is_scalar:
                self.line(f"{self.n(op.result)} = {self.n(ptr)} + np.int64({self.n(off)})")
            else:
                self.line(f"{self.n(op.result)} = {self.n(off)}.astype(np.int64) + "
                          f"{self.n(ptr)}")
        elif kind is Op.LOAD:
            self.load(op)
        elif kind is Op.STORE:
            self.store(op)
        elif kind is Op.ATOMIC or kind is Op.ATOMIC_CAS:
            self.atomic(op)
        elif kind is Op.BROADCAST:
            self.line(f"{self.n(op.result)} = np.ascontiguousarray(np.broadcast_to("
                      f"{self.n(op.operands[0])}, {op.attrs['shape']}))")
        elif kind in (Op.EXPAND_DIMS, Op.RESHAPE):
            x = op.operands[0]
            shape = op.result.type.shape
            src = self.n(x) if x.type.shape else f"np.full((1,), {self.n(x)})"
            self.line(f"{self.n(op.result)} = {src}.reshape({shape})")
        elif kind is Op.FLIP:
            steps = [":"] * len(op.result.type.shape)
            steps[op.attrs["axis"]] = "::-1"
            self.line(f"{self.n(op.result)} = np.ascontiguousarray("
                      f"{self.n(op.operands[0])}[{', '.join(steps)}])")
        elif kind is Op.PERMUTE:
            self.line(f"{self.n(op.result)} = np.ascontiguousarray(np.transpose("
                      f"{self.n(op.operands[0])}, {tuple(op.attrs['dims'])}))")
        elif kind in (Op.REDUCE, Op.ARGREDUCE, Op.SCAN):
            self.reduction(op)
        elif kind is Op.GATHER:
            self.gather(op)
        elif kind in (Op.REDUCE_FN, Op.SCAN_FN):
            self.combined(op)
        elif kind is Op.SORT:
            self.sort(op)
        elif kind is Op.DOT:
            self.dot(op)
        elif kind is Op.PRINT:
            values = ", ".join(self.n(v) for v in op.operands)
            self.line(f"print({op.attrs['prefix']!r}{', ' if values else ''}{values})")
        elif kind is Op.ASSERT:
            self.device_assert(op)
        elif kind in (Op.BARRIER, Op.ASSUME):
            # one thread runs a cube, so its accesses are in order already
            self.line(f"pass  # {kind.value}")
        else:  # pragma: no cover - the verifier rejects anything else
            raise NotImplementedError(f"cpu backend: {kind.value}")

    def binary(self, op: Operation) -> None:
        a, b = op.operands
        if op.attrs.get("rounding") == "rn":  # a helper compiled without fast-math
            self.set(op, f"div_rn({self.n(a)}, {self.n(b)})")
            return
        sym = BINARY_PY[op.op]
        if op.op in (Op.SHL, Op.SHR) and not shift_in_range(op):
            self.set(op, self._guarded_shift(op))
            return
        if op.op is Op.POW and op.result.type.dtype.is_float:
            self.set(op, f"fpow({self.n(a)}, {self.n(b)})")  # see helpers.fpow
            return
        if op.op is Op.FLOORDIV and op.result.type.dtype.name == "int64" \
                and constant_value(b) in (None, -1):
            # INT64_MIN // -1 overflows: Numba's int64 division gave 0 there, NumPy (and the
            # other targets) wrap to INT64_MIN, which is -INT64_MIN
            x, y = self.n(a), self.n(b)
            self.set(op, f"(-{x} if {y} == -1 else {x} // {y})" if op.result.type.is_scalar
                    else f"np.where({y} == -1, -{x}, {x} // {y})")
            return
        self.set(op, f"{self.n(a)} {sym} {self.n(b)}")

    def _guarded_shift(self, op: Operation) -> str:
        """NumPy's shift for any amount: by the width or more, or by a negative amount, ``<<``
        gives 0 and ``>>`` the sign (0 or -1). Numba's shifts are LLVM's: poison there (x86
        takes the amount modulo 64)."""
        a, k = (self.n(v) for v in op.operands)
        dtype, k_dtype = op.operands[0].type.dtype, op.operands[1].type.dtype
        zero, last = f"{reg(k_dtype)}(0)", f"{reg(k_dtype)}({dtype.bits - 1})"
        sym = BINARY_PY[op.op]
        # past the width: everything out, or for a signed `>>`, as by width - 1
        to_sign = op.op is Op.SHR and dtype.kind == "i"
        if op.operands[1].type.is_scalar:
            ok = f"{zero} <= {k} <= {last}"
            if to_sign:
                return f"{a} >> ({k} if {ok} else {last})"
            return f"({a} {sym} {k} if {ok} else {a} ^ {a})"
        ok = self.fresh("ok")
        self.line(f"{ok} = ({k} >= {zero}) & ({k} <= {last})")
        if to_sign:
            return f"{a} >> np.where({ok}, {k}, {last})"
        return f"np.where({ok}, {a} {sym} np.where({ok}, {k}, {zero}), {reg(dtype)}(0))"

    def cast(self, op: Operation) -> None:
        (x,) = op.operands
        dst = op.result.type.dtype
        name = self.n(x)
        src = x.type.dtype
        if src.name in HALF and dst != src and not holds_half_value(x):
            # a 16-bit float's register holds float32 arithmetic's result: the cast reads the
            # 16-bit value (exp(12.8) in float16 is inf, not 358277), as stores do
            suffix = "s" if x.type.is_scalar else "t"
            name = f"{'round_f16' if src.name == 'float16' else 'round_bf16'}_{suffix}({name})"
        if dst.is_bool:
            expr = f"{name} != 0"
        elif dst.name in HALF:
            suffix = "s" if x.type.is_scalar else "t"
            conv = f"np.float32({name})" if x.type.is_scalar else f"{name}.astype(np.float32)"
            rounder = "round_f16" if dst.name == "float16" else "round_bf16"
            expr = f"{rounder}_{suffix}({conv})"
        elif x.type.is_scalar:
            expr = name
        else:
            expr = f"{name}.astype({reg(dst)})"
        self.set(op, expr)

    def _array(self, ptr: Value) -> str:
        return self.arg_names[ptr.type.ptr_base]

    def load(self, op: Operation) -> None:
        ptr, *rest = op.operands
        mask = rest[0] if rest else None
        other = rest[1] if len(rest) > 1 else None
        dtype = ptr.type.dtype
        arr, res = self._array(ptr), self.n(op.result)
        conv = {"float16": "f16_to_f32", "bfloat16": "bf16_to_f32"}.get(dtype.name)
        if ptr.type.is_scalar:
            raw = f"{arr}[{self.index(ptr)}]"
            value = f"{conv}_s({raw})" if conv else f"{reg(dtype)}({raw})"
            if mask is None:
                self.line(f"{res} = {value}")
            else:
                # a zero `other` may go unrendered (row-wise loads need none)
                fallback = literal(0, dtype) if other is None or is_zero(other) else \
                    self.n(other)
                self.line(f"{res} = {value} if {self.n(mask)} else {fallback}")
            return
        rows = self._rows(ptr)
        if rows is not None:
            raw = f"load_rows_nomask({arr}, {rows})" if mask is None else \
                f"load_rows({arr}, {rows}, {self._tile(mask, ptr.type.shape)})"
            raw += f".reshape({ptr.type.shape})"
        elif mask is None:
            raw = f"load_t_nomask({arr}, {self.n(ptr)})"
        else:
            raw = f"load_t({arr}, {self.n(ptr)}, {self._tile(mask, ptr.type.shape)})"
        self.line(f"{res} = {conv}_t({raw})" if conv else f"{res} = {raw}")
        if other is not None and not is_zero(other):  # load_t already gives 0 off-mask
            self.line(f"{res} = np.where({self.n(mask)}, {res}, {self.n(other)})")

    def index(self, ptr: Value) -> str:
        """The element a scalar pointer addresses (the lane emitter's may be affine)."""
        return self.n(ptr)

    def _rows(self, ptr: Value) -> str | None:
        """``base, row_stride, m, n`` of a pointer tile addressing contiguous rows."""
        form = row_access(self.affine, ptr)
        if form is None:
            return None
        shape = ptr.type.shape
        m, n = (1, shape[0]) if len(shape) == 1 else shape
        row_stride = form.strides[0] if len(shape) == 2 else 0
        stride_text = str(row_stride) if isinstance(row_stride, int) else row_stride[0]
        return f"np.int64({form.base[0]}), np.int64({stride_text}), {m}, {n}"

    @staticmethod
    def _storage_dtype(dtype: dt.DType) -> str:
        return "np.uint16" if dtype.name in HALF else reg(dtype)

    def _storage(self, value: Value, dtype: dt.DType) -> str:
        conv = {"float16": "f32_to_f16", "bfloat16": "f32_to_bf16"}.get(dtype.name)
        if conv is None:
            return self.n(value)
        if value.type.is_scalar:
            return f"{conv}_s({self.n(self._unrounded(value, dtype))})"
        return f"{conv}_t({self.n(value)})"

    def _unrounded(self, value: Value, dtype: dt.DType) -> Value:
        """What a 16-bit store of scalar ``value`` may convert instead: the operand of the cast
        that rounded it to ``dtype`` from a wider type (converting the rounded value gives the
        same bits, so a lane's store rounds once, not twice: float16 adds ran 1.8x faster,
        bfloat16 ones 1.4x, BENCHMARKS.md "Lane loops without masks"); else ``value``."""
        cast = self.producers.get(value.id)
        if (cast is None or cast.op is not Op.CAST or cast.result.type.dtype != dtype
                or cast.operands[0].type.dtype.name in HALF
                or not cast.operands[0].type.is_scalar):
            return value
        return cast.operands[0]

    def store(self, op: Operation) -> None:
        ptr, value, *rest = op.operands
        mask = rest[0] if rest else None
        arr, stored = self._array(ptr), self._storage(value, ptr.type.dtype)
        if ptr.type.is_scalar:
            guard = f"if {self.n(mask)}: " if mask is not None else ""
            self.line(f"{guard}{arr}[{self.index(ptr)}] = {stored}")
        elif self._rows(ptr) is not None:
            vals = stored if value.type.shape else \
                f"np.full({ptr.type.shape}, {stored}, {self._storage_dtype(ptr.type.dtype)})"
            rows = self._rows(ptr)
            if mask is None:
                self.line(f"store_rows_nomask({arr}, {rows}, {vals})")
            else:
                self.line(f"store_rows({arr}, {rows}, {vals}, "
                          f"{self._tile(mask, ptr.type.shape)})")
        elif value.type.is_scalar:
            mask_text = self._tile(mask, ptr.type.shape) if mask is not None else \
                f"np.ones({ptr.type.shape}, np.bool_)"
            self.line(f"store_ts({arr}, {self.n(ptr)}, {stored}, {mask_text})")
        elif mask is None:
            self.line(f"store_t_nomask({arr}, {self.n(ptr)}, {stored})")
        else:
            self.line(f"store_t({arr}, {self.n(ptr)}, {stored}, "
                      f"{self._tile(mask, ptr.type.shape)})")

    def atomic(self, op: Operation) -> None:
        ptr, *rest = op.operands
        arr, res = self._array(ptr), self.n(op.result)
        shape = ptr.type.shape
        if op.op is Op.ATOMIC_CAS:
            cmp, val = rest
            if ptr.type.is_scalar:
                self.line(f"{res} = atomic_cas_s({arr}, {self.n(ptr)}, {self.n(cmp)}, "
                          f"{self.n(val)})")
            else:
                self.line(f"{res} = atomic_cas_t({arr}, {self.n(ptr)}, "
                          f"{self._tile(cmp, shape)}, {self._tile(val, shape)})")
            return
        kind = op.attrs["kind"]
        val = rest[0]
        mask = rest[1] if len(rest) > 1 else None
        if ptr.type.is_scalar:
            call = f"atomic_{kind}_s({arr}, {self.n(ptr)}, {self.n(val)})"
            if mask is None:
                self.line(f"{res} = {call}")
            else:
                self.line(f"{res} = {call} if {self.n(mask)} else {literal(0, ptr.type.dtype)}")
            return
        mask_text = self._tile(mask, shape) if mask is not None else f"np.ones({shape}, np.bool_)"
        self.line(f"{res} = atomic_{kind}_t({arr}, {self.n(ptr)}, {self._tile(val, shape)}, "
                  f"{mask_text})")

    def _tile(self, value: Value, shape: tuple[int, ...]) -> str:
        if value.type.shape:
            return self.n(value)
        return f"np.full({shape}, {self.n(value)}, {reg(value.type.dtype)})"

    def reduction(self, op: Operation) -> None:
        (x,) = op.operands
        axis, kind = op.attrs["axis"], op.attrs["kind"]
        shape = x.type.shape
        rank = len(shape)
        perm = tuple(d for d in range(rank) if d != axis) + (axis,)
        moved_shape = tuple(shape[d] for d in perm)
        src = self.n(x)
        if perm != tuple(range(rank)):
            src = f"np.ascontiguousarray(np.transpose({src}, {perm}))"
        outer = math.prod(moved_shape[:-1])
        two_d = f"{src}.reshape(({outer}, {shape[axis]}))"
        res = self.n(op.result)
        if op.op is Op.SCAN:
            acc = reg(reduce_dtype(x.type.dtype))
            self.line(f"{res} = r{kind}({two_d}, {acc}).reshape({moved_shape})")
            if perm != tuple(range(rank)):
                inverse = tuple(perm.index(d) for d in range(rank))
                self.line(f"{res} = np.ascontiguousarray(np.transpose({res}, {inverse}))")
            return
        if kind == "sum":
            call = f"rsum({two_d}, {reg(op.result.type.dtype)})"
        else:
            call = f"r{kind}({two_d})"
        if op.result.type.is_scalar:
            self.line(f"{res} = {reg(op.result.type.dtype)}({call}[0])")
        else:
            self.line(f"{res} = {call}.reshape({op.result.type.shape})")


def generate(fn: Function, debug: bool) -> str:
    """The Python module for ``fn`` (Numba-compiled unless ``debug``): one scalar loop per
    cube for elementwise kernels (``loops.py``), NumPy operations on tiles otherwise."""
    from .loops import LoopEmitter, loop_width

    width = loop_width(fn)
    emitter = CpuEmitter(fn) if width is None else LoopEmitter(fn, width)
    return emitter.module(debug)
