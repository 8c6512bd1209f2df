"""Loads, stores and atomics. A pointer is an i32 element offset into the binding of the
kernel argument its type names. A buffer that any atomic touches is declared
``array<atomic<T>>`` and all its accesses are atomic; float32 atomics other than add and
exchange (or any, without ``shader-float32-atomic``) run as compare-exchange loops on the bits.
Scalar stores and atomics are done by invocation 0 (a scalar atomic's old value is then
shared through workgroup memory)."""

from __future__ import annotations

import re

from ...errors import UnsupportedError
from ...ir import Operation, Value
from . import codegen_types as ty
from .lower_layout import Quad


def _p(expr: str) -> str:
    """``expr`` parenthesized unless it is a name or literal (WGSL needs them around shifts
    and bit operations)."""
    return expr if re.fullmatch(r"[A-Za-z0-9_]+|\(.*\)", expr) else f"({expr})"


RMW = {"add": "atomicAdd", "max": "atomicMax", "min": "atomicMin", "xchg": "atomicExchange",
       "and": "atomicAnd", "or": "atomicOr", "xor": "atomicXor"}


class MemoryMixin:
    # ---- buffers ----

    def atomic_mode(self, i: int) -> str:
        """"none", "native" (atomic<T> with native ops) or "bits" (atomic<u32> of f32 bits)."""
        use = self.uses[i]
        if not use.atomic:
            return "none"
        dtype = self.fn.args[i].type.dtype.name
        if dtype == "float32":
            native = self.target.float_atomic_add and use.atomic_kinds <= {"add", "xchg"}
            return "native" if native else "bits"
        return "native"

    def element_type(self, i: int) -> str:
        dtype = self.fn.args[i].type.dtype
        mode = self.atomic_mode(i)
        if mode == "bits":
            return "atomic<u32>"
        if mode == "native":
            return f"atomic<{ty.storage(dtype)}>"
        return ty.storage(dtype)

    def _element(self, ptr: Value, off: str) -> tuple[str, str]:
        """The element ``off`` of ``ptr``'s buffer as an lvalue, and its access mode."""
        i = ptr.type.ptr_base
        buf, mode = self.buffers[i], self.atomic_mode(i)
        if mode in ("native", "bits"):
            return f"&{buf}[{off}]", mode
        if i in self.layouts.vec4_bufs:  # declared array<vec4<T>>: element j of quad o/4
            return f"{buf}[{_p(off)} >> 2u][{_p(off)} & 3i]", "vec4"
        return f"{buf}[{off}]", "plain"

    def read(self, ptr: Value, off: str) -> str:
        ref, mode = self._element(ptr, off)
        if mode == "native":
            return f"atomicLoad({ref})"
        if mode == "bits":
            return f"bitcast<f32>(atomicLoad({ref}))"
        return ref if mode == "vec4" else ty.from_storage(ref, ptr.type.dtype)

    def write(self, ptr: Value, off: str, value: str) -> str:
        ref, mode = self._element(ptr, off)
        if mode == "native":
            return f"atomicStore({ref}, {value});"
        if mode == "bits":
            return f"atomicStore({ref}, bitcast<u32>({value}));"
        return f"{ref} = {value if mode == 'vec4' else ty.to_storage(value, ptr.type.dtype)};"

    # ---- loads and stores ----

    def load(self, op: Operation) -> None:
        ptr, *rest = op.operands
        mask = rest[0] if rest else None
        other = rest[1] if len(rest) > 1 else None
        dtype = ptr.type.dtype

        def value_at(idx) -> str:
            raw = self.read(ptr, self.ev(ptr, idx))
            if mask is None:
                return raw
            fallback = self.ev(other, idx) if other is not None else ty.literal(0, dtype)
            return f"select({fallback}, {raw}, {self.ev(mask, idx)})"

        if not op.result.type.shape:
            self.let(op.result, value_at(None))
            return
        priv = self.new_priv(op.result)
        if isinstance(priv.layout, Quad) and self.layouts.vec4_ptr(ptr):
            self.consume_quads(priv.layout, [ptr, mask, other],
                               lambda idxs: self.load_quad(priv.name, ptr, mask, other, idxs))
            return
        self.consume(priv.layout, op.result.type.shape, [ptr, mask, other],
                     lambda idx: self.line(f"{priv.name}[{idx.owner[1]}] = {value_at(idx)};"))

    def store(self, op: Operation) -> None:
        ptr, value, *rest = op.operands
        mask = rest[0] if rest else None

        def store_at(idx) -> None:
            text = self.write(ptr, self.ev(ptr, idx), self.ev(value, idx))
            if mask is not None:
                text = f"if ({self.ev(mask, idx)}) {{ {text} }}"
            self.line(text)

        if not ptr.type.shape:
            self.line("if (lid == 0i) {")
            self.depth += 1
            self.with_memo(lambda: store_at(None))
            self.depth -= 1
            self.line("}")
            return
        shape = ptr.type.shape
        layout = self.layout_for([value, ptr, mask], shape)
        if self.layouts.vec4_ptr(ptr) and (isinstance(layout, Quad) or all(
                self._chain_layout(v, 0) is None for v in (value, mask) if v is not None)):
            self.consume_quads(Quad(ptr.type.numel, self.w), [ptr, value, mask],
                               lambda idxs: self.store_quad(ptr, value, mask, idxs))
            return
        self.consume(layout, shape, [ptr, value, mask], store_at)

    # ---- vec4 loads and stores (contiguous pointers, see lower_layout.Quad) ----

    def consume_quads(self, layout: Quad, roots: list[Value | None], body) -> None:
        """``consume`` for a body that takes the 4 indices of a quad at once."""
        todo = self.needs_staging([r for r in roots if r is not None], layout)
        staged_before = dict(self.staged)
        if todo:
            self.phase_begin()
            self.stage(todo)
            self.barrier()
        self.quad_loop(layout, body)
        if todo:
            self.phase_end()
        self.staged = staged_before

    def quad_guard(self, ptr: Value, mask: Value | None, idxs) -> tuple[list[str], str]:
        """The offsets of a quad's elements and the condition of its vec4 access: the first
        offset is a multiple of 4 (then all four are in one vec4) and all are in the mask."""
        offs = [self.ev(ptr, idx) for idx in idxs]
        conds = [f"({_p(offs[0])} & 3i) == 0i"]
        if mask is not None:
            conds += [self.ev(mask, idx) for idx in idxs]
        return offs, " && ".join(conds)

    def load_quad(self, priv: str, ptr: Value, mask, other, idxs) -> None:
        offs, cond = self.quad_guard(ptr, mask, idxs)
        buf, dtype = self.buffers[ptr.type.ptr_base], ptr.type.dtype
        slots = [idx.owner[1] for idx in idxs]
        self.line(f"if ({cond}) {{")
        vec = self.fresh("quad")
        self.line(f"    let {vec} = {buf}[{_p(offs[0])} >> 2u];")
        for slot, c in zip(slots, "xyzw"):
            self.line(f"    {priv}[{slot}] = {vec}.{c};")
        self.line("} else {")
        self.depth += 1
        for idx, off, slot in zip(idxs, offs, slots):
            raw = self.read(ptr, off)
            if mask is not None:
                fallback = self.ev(other, idx) if other is not None else ty.literal(0, dtype)
                raw = f"select({fallback}, {raw}, {self.ev(mask, idx)})"
            self.line(f"{priv}[{slot}] = {raw};")
        self.depth -= 1
        self.line("}")

    def store_quad(self, ptr: Value, value: Value, mask, idxs) -> None:
        offs, cond = self.quad_guard(ptr, mask, idxs)
        buf = self.buffers[ptr.type.ptr_base]
        vals = [self.ev(value, idx) for idx in idxs]
        t = ty.storage(ptr.type.dtype)
        self.line(f"if ({cond}) {{")
        self.line(f"    {buf}[{_p(offs[0])} >> 2u] = vec4<{t}>({', '.join(vals)});")
        self.line("} else {")
        self.depth += 1
        for idx, off, v in zip(idxs, offs, vals):
            text = self.write(ptr, off, v)
            self.line(f"if ({self.ev(mask, idx)}) {{ {text} }}" if mask is not None else text)
        self.depth -= 1
        self.line("}")

    # ---- atomics ----

    def rmw(self, ptr: Value, kind: str, off: str, val: str, cmp: str | None) -> str:
        """Emit one atomic read-modify-write; returns the name holding the old value."""
        i = ptr.type.ptr_base
        buf, mode = self.buffers[i], self.atomic_mode(i)
        old = self.fresh("old")
        dtype = ptr.type.dtype
        if kind == "cas":
            c, v = (f"bitcast<u32>({cmp})", f"bitcast<u32>({val})") if mode == "bits" else \
                (cmp, val)
            r = self.fresh("cas")
            self.line(f"var {r} = atomicCompareExchangeWeak(&{buf}[{off}], {c}, {v});")
            self.line(f"loop {{ if ({r}.exchanged || {r}.old_value != {c}) {{ break; }} "
                      f"{r} = atomicCompareExchangeWeak(&{buf}[{off}], {c}, {v}); }}")
            value = f"bitcast<f32>({r}.old_value)" if mode == "bits" else f"{r}.old_value"
            self.line(f"let {old} = {value};")
            return old
        if mode == "native":
            self.line(f"let {old} = {RMW[kind]}(&{buf}[{off}], {val});")
            return old
        if kind == "xchg":
            self.line(f"let {old} = bitcast<f32>(atomicExchange(&{buf}[{off}], "
                      f"bitcast<u32>({val})));")
            return old
        bits = self.fresh("bits")
        cur = f"bitcast<f32>({bits})"
        new = f"bitcast<u32>({cur} + {val})" if kind == "add" else self.minmax_bits(kind, bits, val)
        r = self.fresh("cas")
        self.line(f"var {bits} = atomicLoad(&{buf}[{off}]);")
        self.line("loop {")
        self.line(f"    let {r} = atomicCompareExchangeWeak(&{buf}[{off}], {bits}, {new});")
        self.line(f"    if ({r}.exchanged) {{ break; }}")
        self.line(f"    {bits} = {r}.old_value;")
        self.line("}")
        self.line(f"let {old} = {cur};")
        del dtype
        return old

    @staticmethod
    def minmax_bits(kind: str, bits: str, val: str) -> str:
        """The f32 bits a max/min leaves in a slot holding ``bits``, as NumPy's
        np.maximum.at/np.minimum.at: a NaN value wins, a NaN slot (either sign; tested on the
        bits) stays, and -0.0 < +0.0 so the result does not depend on the order the updates
        land in. The NaN value test is `==`: lavapipe folds a float `!=` on NaN to false."""
        cur, val_bits = f"bitcast<f32>({bits})", f"bitcast<u32>({val})"
        beats = f"{val} > {cur}" if kind == "max" else f"{val} < {cur}"
        low, high = ("0x80000000u", "0u") if kind == "max" else ("0u", "0x80000000u")
        replaces = (f"({bits} & 0x7fffffffu) <= 0x7f800000u && ({beats} || !({val} == {val}) "
                    f"|| ({bits} == {low} && {val_bits} == {high}))")
        return f"select({bits}, {val_bits}, {replaces})"

    def atomic(self, op: Operation) -> None:
        ptr, *rest = op.operands
        if op.op.value == "atomic_cas":
            kind, cmp, val, mask = "cas", rest[0], rest[1], None
        else:
            kind, cmp, val = op.attrs["kind"], None, rest[0]
            mask = rest[1] if len(rest) > 1 else None
        dtype = ptr.type.dtype
        if dtype.is_bool:
            raise UnsupportedError(f"target '{self.target.name}' has no atomic {kind} on "
                                   f"{dtype.name}", op.loc)
        t = ty.reg(op.result.type)
        zero = ty.literal(0, dtype)

        def rmw_at(idx, out: str) -> None:
            off = self.ev(ptr, idx)
            v = self.ev(val, idx)
            c = self.ev(cmp, idx) if cmp is not None else None
            if mask is not None:
                self.line(f"var {out}: {t} = {zero};")
                self.line(f"if ({self.ev(mask, idx)}) {{")
                self.depth += 1
                old = self.rmw(ptr, kind, off, v, c)
                self.line(f"{out} = {old};")
                self.depth -= 1
                self.line("}")
            else:
                old = self.rmw(ptr, kind, off, v, c)
                self.line(f"let {out} = {old};")

        if not ptr.type.shape:
            shared = self.broadcast_var(t)
            self.line("if (lid == 0i) {")
            self.depth += 1
            out = self.fresh("old")
            self.with_memo(lambda: rmw_at(None, out))
            self.line(f"{shared} = {out};")
            self.depth -= 1
            self.line("}")
            self.let(op.result, f"workgroupUniformLoad(&{shared})")
            self.dirty = False
            return
        priv = self.new_priv(op.result)

        def body(idx) -> None:
            out = self.fresh("old")
            rmw_at(idx, out)
            self.line(f"{priv.name}[{idx.owner[1]}] = {out};")

        self.consume(priv.layout, ptr.type.shape, [ptr, val, cmp, mask], body)

    def broadcast_var(self, t: str) -> str:
        if t not in self.broadcast_vars:
            self.broadcast_vars[t] = f"bcast_{t}"
        return self.broadcast_vars[t]

    def check_workgroup_memory(self) -> None:
        total = self.smem.bytes() + 8 * len(self.broadcast_vars)
        if total > self.target.max_workgroup_bytes:
            raise UnsupportedError(
                f"kernel {self.fn.name} needs {total} bytes of workgroup memory on target "
                f"'{self.target.name}', more than the {self.target.max_workgroup_bytes} the "
                f"adapter has ({self.target.device})", self.fn.loc,
                "use smaller tiles (BLOCK / BM / BN / BK)")
