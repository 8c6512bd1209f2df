"""IR → Triton source: about one ``tl`` call per IR op, control flow as Python loops and ifs.

Every value has the IR's dtype in the generated code: constants are typed scalars
(``tl.full((), 3, tl.int32)``), never weak Python literals, so Triton's promotion rules never
change a result. Two forms of one kernel exist, because Triton's interpreter differs from a GPU:

- GPU (``interpret=False``): bfloat16 is native; math functions on float16/bfloat16 compute in
  float32 (Triton's math needs fp32/fp64); ``tanh`` and ``pow`` come from libdevice.
- interpreter (``interpret=True``): bfloat16 values live in float32 registers (the interpreter
  adds bfloat16 as raw bits) and are rounded to nearest even at casts and stores, as the ``cpu``
  target does; libdevice does not exist there, so ``tanh`` and ``pow`` are small helpers.

Python semantics that C-like Triton lacks are spelled out: floor ``//`` and ``%`` (helpers),
masked-off loads give 0, a masked-off atomic returns 0. Scalar parameters other than int32 are
annotated with the type the launcher passes (``s: tl.float64``); narrower dtypes are converted
on entry. int32 ones are left to Triton, which specializes on 1 and on multiples of 16.

Example:
    >>> print(generate(fn, interpret=False).text)   # doctest: +SKIP
    import triton
    import triton.language as tl
    ...
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from ...ir import Function, Op, Operation, Value, walk
from ...ir import dtypes as dt
from ..base import assert_message, holds_half_value, shift_in_range
from ..pyemit import PyEmitter
from .arith import HALF, ArithMixin
from .bf16 import as_int16, round_bf16
from .descriptors import BlockCopyEmitter
from .prelude import ATOMICS, CONSTANTS, FLOAT_ATOMICS, HELPERS, with_needs
from .reductions import ReductionEmitter

PY_BINARY = {
    Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.AND: "&", Op.OR: "|", Op.XOR: "^",
    Op.SHL: "<<", Op.SHR: ">>", Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">",
    Op.GE: ">=",
}
# Triton's math functions accept fp32/fp64 only: float16/bfloat16 go through float32.
TL_MATH = {
    Op.EXP: "tl.exp", Op.EXP2: "tl.exp2", Op.LOG: "tl.log", Op.LOG2: "tl.log2",
    Op.SQRT: "tl.sqrt", Op.RSQRT: "tl.rsqrt", Op.SIN: "tl.sin", Op.COS: "tl.cos",
    Op.ERF: "tl.erf", Op.SIGMOID: "_sigmoid", Op.FLOOR: "tl.floor", Op.CEIL: "tl.ceil",
}
# The type the launcher passes for a scalar of each dtype; narrower ones are cast on entry
# (Triton's launcher is sure to pack these, on every version cubepy supports).
TRANSPORT = {
    "bool": dt.bool_, "int8": dt.int32, "int16": dt.int32, "int32": dt.int32,
    "uint8": dt.int32, "uint32": dt.uint32, "int64": dt.int64, "float16": dt.float32,
    "bfloat16": dt.float32, "float32": dt.float32, "float64": dt.float64,
}
# Below these sizes tl.dot is refused on some GPUs/Triton versions: use a product-sum instead.
MIN_DOT = 16
# What tl.dot accumulates each input dtype in.
NATIVE_DOT = {"float16": dt.float32, "bfloat16": dt.float32, "float32": dt.float32,
              "float64": dt.float64, "int8": dt.int32}

RESERVED = {"triton", "tl", "libdevice", "range", "float", *HELPERS, *CONSTANTS}


def tl_type(dtype: dt.DType) -> str:
    """``tl.float32`` for float32, ``tl.int1`` for bool."""
    return "tl.int1" if dtype.is_bool else f"tl.{dtype.name}"


def signature_type(dtype: dt.DType, pointer: bool) -> str:
    """A parameter's type in cubepy's names, as ``aot.compile_aot`` takes it (``*float16``)."""
    return f"*{dtype.name}" if pointer else TRANSPORT[dtype.name].name


@dataclass(frozen=True)
class TritonSource:
    """Generated Triton source: its text, the kernel's name, and the type of each parameter."""

    text: str
    kernel: str
    signature: dict[str, str] = field(default_factory=dict)


def _is_atom(text: str) -> bool:
    """Whether ``text`` needs no parentheses before ``.to(...)``: a name, call or attribute."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, (ast.Name, ast.Call, ast.Attribute, ast.Subscript))


def _zero_const(value: Value) -> bool:
    """A constant +0 (not -0.0: a masked load's zero fill is +0.0)."""
    owner = value.owner
    return (owner is not None and owner.op is Op.CONST and owner.attrs["value"] == 0
            and math.copysign(1.0, owner.attrs["value"]) > 0)


class TritonEmitter(ArithMixin, BlockCopyEmitter, ReductionEmitter, PyEmitter):
    """Renders one kernel as a ``@triton.jit`` function (see the module docstring)."""

    def __init__(self, fn: Function, interpret: bool, allow_tf32: bool = False,
                 tma: list[Operation] | None = None):
        super().__init__(fn)
        self.interpret = interpret
        self.tma = {id(op) for op in tma or ()}  # block copies run as TMA copies
        self.descriptors: dict[tuple, str] = {}
        self.allow_tf32 = allow_tf32
        self.helpers: set[str] = set()
        self.combine_functions: list[str] = []  # the source of reduce/scan combine functions
        self.constants: set[str] = set()
        self.libdevice = False
        self.used |= RESERVED
        self.uses = {value.id for op in walk(fn.body) for value in op.operands}
        self.params: list[str] = []
        for value, name in zip(fn.args, fn.arg_names):
            wanted = f"{name}_ptr" if value.type.is_ptr else name
            param = wanted if wanted not in self.used else self.fresh(wanted)
            self.used.add(param)
            self.alias(value, param)
            self.params.append(param)

    # ---- types and small spellings ----

    def reg(self, dtype: dt.DType) -> dt.DType:
        """The dtype a value of ``dtype`` has in the generated code."""
        return dt.float32 if self.interpret and dtype.name == "bfloat16" else dtype

    def rtype(self, value: Value) -> str:
        return tl_type(self.reg(value.type.dtype))

    def n(self, value: Value) -> str:
        return self.name(value)

    def to(self, expr: str, src: dt.DType, dst: dt.DType) -> str:
        """``expr`` (of register dtype ``src``) converted to register dtype ``dst``."""
        if src == dst:
            return expr
        return f"{expr if _is_atom(expr) else f'({expr})'}.to({tl_type(dst)})"

    def literal(self, value: object, dtype: dt.DType) -> str:
        if dtype.is_bool:
            return str(bool(value))
        if not dtype.is_float:
            return str(int(value))
        v = float(value)
        if self.interpret and dtype.name == "bfloat16":
            v = round_bf16(v)
        if math.isnan(v):
            # inline, not a global constexpr: Triton checks at each launch that a kernel's
            # globals are unchanged, and a NaN never equals itself
            return 'float("nan")'
        if math.isinf(v):
            self.constants.add("INF")
            return "INF" if v > 0 else "-INF"
        return repr(v)

    def splat(self, value: Value, shape: tuple[int, ...]) -> str:
        """A scalar value as a tile of ``shape``."""
        if value.type.is_ptr:
            return f"{self.n(value)} + tl.zeros({shape}, tl.int32)"
        return f"tl.full({shape}, {self.n(value)}, {self.rtype(value)})"

    def assign(self, op: Operation, expr: str) -> None:
        self.line(f"{self.n(op.result)} = {expr}")

    def in_f32(self, op: Operation, call: str, *, upcast: bool = True) -> None:
        """``call(operands)``; float16/bfloat16 operands go through float32 when ``upcast``."""
        dtype = self.reg(op.operands[0].type.dtype)
        args = [self.n(v) for v in op.operands]
        if upcast and dtype.name in HALF:
            args = [self.to(a, dtype, dt.float32) for a in args]
            self.assign(op, self.to(f"{call}({', '.join(args)})", dt.float32, dtype))
        else:
            self.assign(op, f"{call}({', '.join(args)})")

    # ---- the module ----

    def module(self) -> TritonSource:
        fn = self.fn
        name = fn.name if fn.name not in self.used else self.fresh(fn.name)
        self.depth = 1
        params = []
        for value, param in zip(fn.args, self.params):
            if value.type.is_ptr:
                params.append(param)
                continue
            dtype = value.type.dtype
            transport = TRANSPORT[dtype.name]
            # int32 stays unannotated: Triton then specializes on values equal to 1 and on
            # multiples of 16 (a unit stride as an argument keeps wide, asynchronous loads)
            params.append(param if dtype == dt.int32 else f"{param}: {tl_type(transport)}")
            if self.interpret and dtype not in (dt.int32, dt.bool_):
                # the interpreter passes Python numbers as they are: give them their dtype
                self.line(f"{param} = tl.full((), {param}, {self.rtype(value)})")
            elif transport != self.reg(dtype):
                self.line(f"{param} = {self.to(param, transport, self.reg(dtype))}")
        self.hoist_descriptors()
        self.block(fn.body)
        if len(self.lines) == 0:
            self.line("pass")
        mode = "Triton's interpreter" if self.interpret else "GPUs"
        head = [f"# Generated by cubepy from kernel {fn.name} ({fn.loc}), for {mode}. "
                "Do not edit.", "import triton", "import triton.language as tl"]
        if self.libdevice:
            head.append("from triton.language.extra import libdevice")
        helpers, constants = with_needs(self.helpers | self.constants)
        if constants:
            head += [""] + [CONSTANTS[c] for c in sorted(constants)]
        for helper in sorted(helpers):
            head += ["", HELPERS[helper].rstrip("\n")]
        for text in self.combine_functions:
            head += ["", text]
        head += ["", "", "@triton.jit", f"def {name}({', '.join(params)}):"]
        signature = {param: signature_type(value.type.dtype, value.type.is_ptr)
                     for value, param in zip(fn.args, self.params)}
        return TritonSource("\n".join(head + self.lines) + "\n", name, signature)

    # ---- control flow hooks ----

    def carried_names(self, op: Operation) -> list[str]:
        """Loop-carried variables take the name the user gave them (``acc``), when there is one."""
        args = op.regions[0].args[1:] if op.op is Op.FOR else (
            op.regions[1].args if op.op is Op.WHILE else [None] * len(op.results))
        names = [self.fresh(r.name or (a.name if a is not None else None))
                 for r, a in zip(op.results, args)]
        for result, name in zip(op.results, names):
            self.alias(result, name)
        return names

    def range_text(self, op: Operation, start: str, stop: str, step: str) -> str:
        # a FOR op's attributes are cube.range's hints, which tl.range takes as they are (on
        # GPUs: the interpreter has no pipelines)
        hints = op.attrs
        if not hints or self.interpret:
            return super().range_text(op, start, stop, step)
        keywords = "".join(f", {k}={v!r}" for k, v in hints.items())
        return f"tl.range({start}, {stop}, {step}{keywords})"

    def index_prologue(self, iv: Value) -> None:
        if self.interpret:  # the interpreter's range() yields Python ints
            self.line(f"{self.n(iv)} = tl.full((), {self.n(iv)}, {self.rtype(iv)})")

    # ---- ops ----

    def render(self, op: Operation) -> None:  # noqa: C901 - one dispatch over the op enum
        kind = op.op
        if kind is Op.CONST:
            if op.result.name is None:
                self.alias(op.result, self.fresh("c"))
            lit = self.literal(op.attrs["value"], op.attrs["dtype"])
            self.assign(op, f"tl.full((), {lit}, {self.rtype(op.result)})")
        elif kind is Op.CUBE_POS:
            self.assign(op, f"tl.program_id({op.attrs['axis']})")
        elif kind is Op.CUBE_COUNT:
            self.assign(op, f"tl.num_programs({op.attrs['axis']})")
        elif kind is Op.ARANGE:
            self.assign(op, f"tl.arange({op.attrs['start']}, {op.attrs['end']})")
        elif kind is Op.FULL:
            self.assign(op, self.splat(op.operands[0], tuple(op.attrs["shape"])))
        elif kind in (Op.FLOORDIV, Op.MOD):
            self.floor_division(op)
        elif op.attrs.get("rounding") == "rn":
            self.rounded(op)
        elif kind is Op.DIV:
            a, b = (self.n(v) for v in op.operands)
            self.assign(op, f"{a} / {b}")
        elif kind in (Op.SHL, Op.SHR) and not shift_in_range(op):
            helper = f"_{kind.value}"
            self.helpers.add(helper)
            a, b = (self.n(v) for v in op.operands)
            self.assign(op, f"{helper}({a}, {b}, {op.operands[0].type.dtype.bits})")
        elif kind in PY_BINARY:
            a, b = (self.n(v) for v in op.operands)
            self.assign(op, f"{a} {PY_BINARY[kind]} {b}")
        elif kind in (Op.MAXIMUM, Op.MINIMUM):
            fn = "tl.maximum" if kind is Op.MAXIMUM else "tl.minimum"
            a, b = (self.n(v) for v in op.operands)
            nan = ", propagate_nan=tl.PropagateNan.ALL" if op.result.type.dtype.is_float else ""
            self.assign(op, f"{fn}({a}, {b}{nan})")
        elif kind is Op.POW:
            self.power(op)
        elif kind is Op.NEG:
            self.assign(op, f"-{self.n(op.operands[0])}")
        elif kind is Op.NOT:
            self.assign(op, f"~{self.n(op.operands[0])}")
        elif kind is Op.ABS:
            self.assign(op, f"tl.abs({self.n(op.operands[0])})")
        elif kind in TL_MATH:
            if TL_MATH[kind] in HELPERS:  # prelude's
                self.helpers.add(TL_MATH[kind])
            self.in_f32(op, TL_MATH[kind])
        elif kind is Op.TANH:
            self.in_f32(op, self.extern("tanh"))
        elif kind is Op.UMULHI:
            self.assign(op, f"tl.umulhi({self.n(op.operands[0])}, {self.n(op.operands[1])})")
        elif kind is Op.FMA:
            self.in_f32(op, "tl.fma")
        elif kind is Op.WHERE:
            c, a, b = (self.n(v) for v in op.operands)
            self.assign(op, f"tl.where({c}, {a}, {b})")
        elif kind is Op.CAST:
            self.cast(op)
        elif kind is Op.BITCAST:
            self.bitcast(op)
        elif kind is Op.PTR_ADD:
            ptr, off = op.operands
            offset = self.n(off)
            if off.type.dtype.kind == "u":  # Triton sign-extends offsets: widen unsigned ones
                offset = self.to(offset, off.type.dtype, dt.int64)
            self.assign(op, f"{self.n(ptr)} + {offset}")
        elif kind is Op.LOAD:
            self.load(op)
        elif kind is Op.BLOCK_LOAD:
            self.block_load(op)
        elif kind is Op.BLOCK_STORE:
            self.block_store(op)
        elif kind is Op.STORE:
            self.store(op)
        elif kind is Op.ATOMIC or kind is Op.ATOMIC_CAS:
            self.atomic(op)
        elif kind in (Op.BROADCAST, Op.EXPAND_DIMS, Op.RESHAPE, Op.PERMUTE, Op.FLIP):
            self.layout(op)
        elif kind in (Op.REDUCE, Op.ARGREDUCE, Op.SCAN):
            self.reduction(op)
        elif kind in (Op.REDUCE_FN, Op.SCAN_FN):
            self.combined(op)
        elif kind is Op.GATHER:
            src, index = op.operands
            self.assign(op, f"tl.gather({self.n(src)}, {self.n(index)}, {op.attrs['axis']})")
        elif kind is Op.SORT:
            self.assign(op, f"tl.sort({self.n(op.operands[0])}, "
                            f"descending={op.attrs['descending']})")
        elif kind is Op.DOT:
            self.dot(op)
        elif kind is Op.HINT:
            values = list(op.attrs["values"])
            self.assign(op, f"tl.{op.attrs['kind']}({self.n(op.operands[0])}, {values})")
        elif kind is Op.PRINT:
            values = "".join(f", {self.n(v)}" for v in op.operands)
            self.line(f"tl.device_print({op.attrs['prefix']!r}{values})")
        elif kind is Op.ASSERT:
            mask = self.n(op.operands[1]) if len(op.operands) > 1 else "None"
            message = assert_message(op)
            if self.interpret:  # its device_assert checks only in a debug mode it cannot enter
                self.helpers.add("_interpreter_assert")
                self.line(f"_interpreter_assert({self.n(op.operands[0])}, {mask}, {message!r})")
            else:
                self.line(f"tl.device_assert({self.n(op.operands[0])}, {message!r}, "
                          f"mask={mask})")
        elif kind is Op.BARRIER:
            self.line("tl.debug_barrier()")
        elif kind is Op.ASSUME:
            self.line(f"tl.assume({self.n(op.operands[0])})")
        else:  # pragma: no cover - the verifier rejects anything else
            raise NotImplementedError(f"triton backend: {kind.value}")

    def extern(self, name: str) -> str:
        """libdevice's ``name`` on a GPU, the helper ``_name`` on the interpreter."""
        if self.interpret:
            self.helpers.add(f"_{name}")
            return f"_{name}"
        self.libdevice = True
        return f"libdevice.{name}"

    def cast(self, op: Operation) -> None:
        (x,) = op.operands
        src, dst = self.reg(x.type.dtype), op.result.type.dtype
        value = self.n(x)
        if src != x.type.dtype and dst != x.type.dtype and not holds_half_value(x):
            # bfloat16 on the interpreter: its float32 register holds arithmetic's unrounded
            # result, and the cast reads the bfloat16 value, as the cpu and wgsl targets do
            self.helpers.add("_round_bf16")
            value = f"_round_bf16({value})"
        if self.interpret and dst.name == "bfloat16":
            self.helpers.add("_round_bf16")
            self.assign(op, f"_round_bf16({self.to(value, src, dt.float32)})")
        else:
            self.assign(op, self.to(value, src, self.reg(dst)))

    def _masked_args(self, mask: Value | None, other: str | None) -> str:
        text = f", mask={self.n(mask)}" if mask is not None else ""
        return text + (f", other={other}" if other is not None else "")

    def load(self, op: Operation) -> None:
        ptr, *rest = op.operands
        mask = rest[0] if rest else None
        other = rest[1] if len(rest) > 1 else None
        dtype = ptr.type.dtype
        widened = self.reg(dtype) != dtype  # bfloat16 on the interpreter
        if mask is None:
            fill = None
        elif other is None or widened:
            # masked-off elements read 0, as on every cubepy target; a bfloat16 `other` on
            # the interpreter is selected below (the load would truncate it to bfloat16)
            fill = "0"
        else:
            fill = self.n(other)
        if widened:  # the bits, as the interpreter's bfloat16 cast would lose subnormals
            self.helpers.add("_bf16_value")
            expr = f"_bf16_value(tl.load({as_int16(self.n(ptr))}{self._masked_args(mask, fill)}))"
            self.assign(op, expr)
        else:
            self.assign(op, f"tl.load({self.n(ptr)}{self._masked_args(mask, fill)})")
        if widened and other is not None and not _zero_const(other):
            res = self.n(op.result)
            self.line(f"{res} = tl.where({self.n(mask)}, {res}, {self.n(other)})")

    def store(self, op: Operation) -> None:
        ptr, value, *rest = op.operands
        self.store_tile(ptr, value, rest[0] if rest else None)

    def store_tile(self, ptr: Value, value: Value, mask: Value | None) -> None:
        stored, target = self.n(value), self.n(ptr)
        if self.reg(ptr.type.dtype) != ptr.type.dtype:  # bfloat16 on the interpreter: bits
            self.helpers.add("_bf16_bits")
            stored, target = f"_bf16_bits({stored})", as_int16(target)
        self.line(f"tl.store({target}, {stored}{self._masked_args(mask, None)})")

    def atomic(self, op: Operation) -> None:
        ptr, *rest = op.operands
        shape = ptr.type.shape

        def tile(v: Value) -> str:
            return self.splat(v, shape) if shape and not v.type.shape else self.n(v)

        if op.op is Op.ATOMIC_CAS:
            cmp, val = rest
            fn = "tl.atomic_cas"
            if ptr.type.dtype.is_float:
                fn = "_atomic_cas_bits"
                self.helpers.add(fn)
            self.assign(op, f"{fn}({self.n(ptr)}, {tile(cmp)}, {tile(val)})")
            return
        val = rest[0]
        mask = rest[1] if len(rest) > 1 else None
        fn = (FLOAT_ATOMICS if ptr.type.dtype.is_float else ATOMICS)[op.attrs["kind"]]
        order = ""
        if fn in HELPERS:  # float max/min: NaN and -0.0 as the prelude says (acq_rel always)
            self.helpers.add(fn)
        elif op.attrs.get("sem") == "relaxed":  # Triton's default is acq_rel, twice the cost
            order = ', sem="relaxed"'
        call = f"{fn}({self.n(ptr)}, {tile(val)}{self._masked_args(mask, None)}{order})"
        if op.result.id not in self.uses:
            self.line(call)
            return
        self.assign(op, call)
        if mask is not None:  # a masked-off element returns 0, as on every cubepy target
            res = self.n(op.result)
            self.line(f"{res} = tl.where({self.n(mask)}, {res}, 0)")

    def layout(self, op: Operation) -> None:
        (x,) = op.operands
        shape = tuple(op.result.type.shape)
        if not x.type.shape:
            self.assign(op, self.splat(x, shape))
        elif op.op is Op.BROADCAST:
            self.assign(op, f"tl.broadcast_to({self.n(x)}, {shape})")
        elif op.op is Op.EXPAND_DIMS:
            axis = op.attrs["axis"] % (len(x.type.shape) + 1)
            self.assign(op, f"tl.expand_dims({self.n(x)}, {axis})")
        elif op.op is Op.RESHAPE:
            self.assign(op, f"tl.reshape({self.n(x)}, {shape})")
        elif op.op is Op.FLIP:
            self.assign(op, f"tl.flip({self.n(x)}, {op.attrs['axis']})")
        elif tuple(op.attrs["dims"]) == (1, 0):
            self.assign(op, f"tl.trans({self.n(x)})")
        else:
            self.assign(op, f"tl.permute({self.n(x)}, {tuple(op.attrs['dims'])})")

    def rounded(self, op: Operation) -> None:
        """Correctly rounded division or sqrt: Triton's ``div_rn``/``sqrt_rn`` take float32;
        float64's ``/`` and ``sqrt`` are IEEE's already; 16-bit floats go through float32 (a
        correctly rounded float32 result rounds to float16 or bfloat16 as the exact one would,
        float32 having more than twice their precision plus two bits)."""
        dtype = self.reg(op.result.type.dtype)
        if dtype == dt.float64:
            args = [self.n(v) for v in op.operands]
            exact = f"{args[0]} / {args[1]}" if op.op is Op.DIV else f"tl.sqrt({args[0]})"
            self.assign(op, exact)
            return
        self.in_f32(op, "tl.math.div_rn" if op.op is Op.DIV else "tl.math.sqrt_rn")

    def dot(self, op: Operation) -> None:
        a, b, acc = op.operands
        src, acc_dtype = self.reg(a.type.dtype), self.reg(acc.type.dtype)
        (m, k), n = a.type.shape, b.type.shape[1]
        precision = ""
        if src == dt.float32:
            precision = f", input_precision={'tf32' if self.allow_tf32 else 'ieee'!r}"
        big = min(m, n, k) >= MIN_DOT and (src != dt.int8 or k >= 2 * MIN_DOT)
        native = NATIVE_DOT.get(src.name)
        # tl.dot asserts its accumulator is of out_dtype, which defaults to float32
        out = f", out_dtype={tl_type(native)}" if native not in (None, dt.float32) else ""
        if big and native == acc_dtype:
            self.assign(op, f"tl.dot({self.n(a)}, {self.n(b)}, {self.n(acc)}{precision}{out})")
            return
        if big and native is not None:
            product = f"tl.dot({self.n(a)}, {self.n(b)}{precision}{out})"
            self.assign(op, f"{self.n(acc)} + {self.to(product, native, acc_dtype)}")
            return
        # Small or unusual tiles: a broadcast product summed over k, in a wide dtype.
        wide = dt.float64 if src == dt.float64 or acc_dtype == dt.float64 else (
            dt.float32 if src.is_float else dt.int64)
        lhs = self.to(f"tl.expand_dims({self.n(a)}, 2)", src, wide)
        rhs = self.to(f"tl.expand_dims({self.n(b)}, 0)", src, wide)
        product = f"tl.sum({lhs} * {rhs}, axis=1)"
        self.assign(op, f"{self.n(acc)} + {self.to(product, wide, acc_dtype)}")


def generate(fn: Function, *, interpret: bool, allow_tf32: bool = False,
             tma: list[Operation] | None = None) -> TritonSource:
    """The Triton module for ``fn``: for the interpreter, or for GPUs (see the module doc);
    ``tma`` lists the block copies to run as TMA copies (the others run their fallbacks)."""
    return TritonEmitter(fn, interpret, allow_tf32, tma).module()
