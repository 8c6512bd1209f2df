"""IR → WGSL: one cube is one workgroup; tiles are spread over its invocations.

The module has one uniform struct (the grid, then the scalar arguments), one storage binding
per array argument (in argument order), workgroup arrays for staging, and one entry point.
Scalars are computed by every invocation (they are uniform); tiles are lazy or materialized
(``lower_layout``); the ops that need workgroup memory place their own barriers.

Example:
    >>> print(add.source("wgsl", x, y, out, n, BLOCK=256))  # doctest: +SKIP
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

from ...ir import Block, Function, Op, Operation, Value, walk
from ...ir.ops import ELEMENTWISE, LAYOUT
from . import codegen_types as ty
from .codegen_dot import WEBGPU_MIN_WORKGROUP_BYTES, DotMixin
from .codegen_memory import MemoryMixin
from .codegen_ops import OpsMixin
from .codegen_reduce import ReduceMixin
from .codegen_rows import RowsMixin
from .codegen_tiles import Priv, SharedPool, TileMixin
from .lower_layout import Layouts, buffer_uses
from .uniforms import GRID_FIELDS, cube_pos_wgsl, uniform_struct_wgsl


@dataclass
class Target:
    """What the code generator needs to know about the device."""

    name: str = "wgsl"
    subgroup: int | None = None  # the subgroup size when subgroup operations can be used
    float_atomic_add: bool = False
    max_workgroup_bytes: int = WEBGPU_MIN_WORKGROUP_BYTES
    device: str = ""
    options: dict = field(default_factory=dict)


@dataclass
class Generated:
    source: str
    entry: str
    bindings: list[str]  # "read" / "read_write" per array argument, then "uniform"
    written: list[int]  # indices (into fn.args) of the arrays the kernel may write
    scalar_fields: list[tuple[int, str]]  # (argument index, dtype name) in uniform order
    workgroup_size: int


class WgslEmitter(TileMixin, OpsMixin, MemoryMixin, ReduceMixin, RowsMixin, DotMixin):
    def __init__(self, fn: Function, w: int, target: Target, all_read_write: bool = False):
        self.fn = fn
        self.w = w
        self.target = target
        self.all_rw = all_read_write
        self.layouts = Layouts(fn, w, vec4_dot=target.options.get("vec4", True),
                               vec4_io=target.options.get("vec4", True))
        self.uses = buffer_uses(fn)
        self.lines: list[str] = []
        self.depth = 1
        self.used: set[str] = set(ty.RESERVED)
        self.names: dict[int, str] = {}
        self.priv: dict[int, Priv] = {}
        self.staged: dict[int, str] = {}
        self.memo: list[dict] = []
        self.helpers: dict[str, str] = {}
        self.smem = SharedPool()
        self.broadcast_vars: dict[str, str] = {}
        self.dirty = False
        self.last_line: int | None = None
        self.buffers: dict[int, str] = {}
        self.param_idents: dict[int, str] = {}
        for i, (arg, name) in enumerate(zip(fn.args, fn.arg_names)):
            ident = self.fresh_plain(ty.ident(name))
            if arg.type.is_ptr:
                self.buffers[i] = ident
                self.names[arg.id] = "0i"  # a pointer argument is offset 0 into its binding
            else:
                self.param_idents[i] = ident
                self.names[arg.id] = self.param_expr(arg, ident)

    # ---- naming and output ----

    def fresh_plain(self, base: str) -> str:
        name, n = base, 0
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name

    def fresh(self, hint: str | None) -> str:
        base = ty.ident(hint or "v").rstrip("_0123456789") or "v"
        n = 0
        while f"{base}_{n}" in self.used:
            n += 1
        self.used.add(f"{base}_{n}")
        return f"{base}_{n}"

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def source_comment(self, op: Operation) -> None:
        if op.loc is None or op.loc.line == self.last_line:
            return
        self.last_line = op.loc.line
        text = linecache.getline(op.loc.file, op.loc.line).strip()
        self.line(f"// line {op.loc.line}: {text}" if text else f"// line {op.loc.line}")

    def scalar(self, v: Value) -> str:
        return self.names[v.id]

    def param_expr(self, arg: Value, ident: str) -> str:
        if arg.type.dtype.is_bool:
            return f"(params.{ident} != 0u)"
        return f"params.{ident}"

    def let(self, v: Value, expr: str) -> None:
        name = self.fresh(v.name)
        self.line(f"let {name}: {ty.reg(v.type)} = {expr};")
        self.names[v.id] = name

    # ---- blocks and ops ----

    def block(self, block: Block) -> None:
        for op in block.ops:
            if op.op is Op.YIELD:
                continue
            self.source_comment(op)
            self.render(op)

    def render(self, op: Operation) -> None:  # noqa: C901 - one dispatch over the op enum
        kind = op.op
        if kind in ELEMENTWISE or kind in (Op.FULL, Op.ARANGE) or kind in LAYOUT:
            if op.result.type.shape:
                return  # lazy: computed where it is used
            args = [self.scalar(x) for x in op.operands]
            self.let(op.result, self.elementwise(op, args))
        elif kind is Op.CONST:
            self.names[op.result.id] = ty.literal(op.attrs["value"], op.attrs["dtype"])
        elif kind is Op.CUBE_POS:
            self.let(op.result, f"i32(cube_pos_{'xyz'[op.attrs['axis']]})")
        elif kind is Op.CUBE_COUNT:
            self.let(op.result, f"i32(params.cube_count_{'xyz'[op.attrs['axis']]})")
        elif kind is Op.LOAD:
            self.load(op)
        elif kind is Op.STORE:
            self.store(op)
        elif kind in (Op.ATOMIC, Op.ATOMIC_CAS):
            self.atomic(op)
        elif kind in (Op.REDUCE, Op.ARGREDUCE):
            self.reduce(op)
        elif kind is Op.SCAN:
            self.scan(op)
        elif kind is Op.SORT:
            self.sort(op)
        elif kind is Op.GATHER:
            self.gather(op)
        elif kind in (Op.REDUCE_FN, Op.SCAN_FN):
            self.combined(op)
        elif kind is Op.DOT:
            self.dot(op)
        elif kind is Op.FOR:
            self.emit_for(op)
        elif kind is Op.WHILE:
            self.emit_while(op)
        elif kind is Op.IF:
            self.emit_if(op)
        elif kind is Op.PRINT:
            self.line(f"// device_print({op.attrs['prefix']!r}) is not shown on target 'wgsl'")
        elif kind is Op.ASSERT:
            self.line(f"// device_assert({op.attrs['message']!r}) is not checked on target "
                      "'wgsl'")
        elif kind is Op.ASSUME:
            self.line("// assume(...): a promise for Triton's compiler")
        elif kind is Op.BARRIER:
            self.line("storageBarrier();")  # the stores to arrays, then everything else
            self.barrier()
        else:  # pragma: no cover - the verifier rejects anything else
            raise NotImplementedError(f"wgsl backend: {kind.value}")

    # ---- materialized tiles ----

    def new_priv(self, v: Value, layout=None, hint: str | None = None,
                 register: bool = True) -> Priv:
        layout = layout or self.layouts.of.get(v.id) or self.layouts.std(v.type.numel)
        name = self.fresh(hint or v.name or "t")
        wgsl = ty.reg(v.type)
        self.line(f"var {name}: array<{wgsl}, {layout.slots}>;")
        priv = Priv(name, layout, wgsl)
        if register:
            self.priv[v.id] = priv
        return priv

    def fill(self, priv: Priv, v: Value, shape: tuple[int, ...]) -> None:
        """Write tile ``v`` into ``priv`` element by element."""
        if v.id in self.priv and self.priv[v.id].layout == priv.layout:
            if self.priv[v.id].name != priv.name:
                self.line(f"{priv.name} = {self.priv[v.id].name};")
            return
        self.consume(priv.layout, shape, [v],
                     lambda idx: self.line(f"{priv.name}[{idx.owner[1]}] = {self.ev(v, idx)};"))

    # ---- control flow ----

    def carried_vars(self, op: Operation, inits: list[Value | None],
                     hints: list[Value]) -> list[str]:
        names = []
        for result, init, hint in zip(op.results, inits, hints):
            if result.type.shape:
                priv = self.new_priv(result, hint=result.name or hint.name)
                if init is not None:
                    self.fill(priv, init, result.type.shape)
                names.append(priv.name)
            else:
                name = self.fresh(result.name or hint.name)
                t = ty.reg(result.type)
                self.line(f"var {name}: {t}" + (f" = {self.scalar(init)};" if init is not None
                                                 else ";"))
                self.names[result.id] = name
                names.append(name)
        return names

    def bind_args(self, values: list[Value], results: list[Value]) -> None:
        for v, r in zip(values, results):
            if r.type.shape:
                self.priv[v.id] = self.priv[r.id]
            else:
                self.names[v.id] = self.names[r.id]

    def assign_yield(self, block: Block, results: list[Value], carried: list[Value]) -> None:
        """Assign the values ``block`` yields to the variables of ``results``; values that
        read the variables themselves are computed into temporaries first."""
        term = block.terminator
        if term is None:
            return
        carried_ids = {v.id for v in carried}
        pending = []
        for result, value in zip(results, term.operands):
            if result.type.shape:
                target = self.priv[result.id]
                src = self.priv.get(value.id)
                if src is not None and src.name == target.name:
                    continue
                if src is None or value.id in carried_ids or src.layout != target.layout:
                    tmp = self.new_priv(value, target.layout, hint=(value.name or "next"),
                                        register=False)
                    self.fill(tmp, value, value.type.shape)
                    src = tmp
                pending.append(f"{target.name} = {src.name};")
            else:
                target = self.names[result.id]
                expr = self.scalar(value)
                if expr == target:
                    continue
                if value.id in carried_ids:
                    tmp = self.fresh("next")
                    self.line(f"let {tmp} = {expr};")
                    expr = tmp
                pending.append(f"{target} = {expr};")
        for text in pending:
            self.line(text)

    def region(self, block: Block, after=None) -> None:
        self.depth += 1
        self.dirty = True
        self.block(block)
        if after is not None:
            after()
        self.depth -= 1
        self.dirty = True

    def emit_for(self, op: Operation) -> None:
        lb, ub, step, *inits = op.operands
        body = op.regions[0]
        self.carried_vars(op, inits, body.args[1:])
        self.bind_args(body.args[1:], op.results)
        iv = body.args[0]
        i = self.fresh(iv.name or "i")
        self.names[iv.id] = i
        t = ty.reg(iv.type)
        s = self.scalar(step)
        if step.owner is not None and step.owner.op is Op.CONST:
            cond = f"{i} {'<' if step.owner.attrs['value'] > 0 else '>'} {self.scalar(ub)}"
        else:
            ub_ = self.scalar(ub)
            cond = f"select(({i} > {ub_}), ({i} < {ub_}), ({s} > {ty.zero(step.type)}))"
        self.line(f"for (var {i}: {t} = {self.scalar(lb)}; {cond}; {i} = {i} + {s}) {{")
        self.region(body, lambda: self.assign_yield(body, op.results, body.args[1:]))
        self.line("}")

    def emit_while(self, op: Operation) -> None:
        cond_block, body = op.regions
        self.carried_vars(op, op.operands, body.args)
        self.bind_args(cond_block.args, op.results)
        self.bind_args(body.args, op.results)
        self.line("loop {")
        self.depth += 1
        self.dirty = True
        self.block(cond_block)
        self.line(f"if (!{self.scalar(cond_block.terminator.operands[0])}) {{ break; }}")
        self.depth -= 1
        self.region(body, lambda: self.assign_yield(body, op.results, body.args))
        self.line("}")

    def emit_if(self, op: Operation) -> None:
        self.carried_vars(op, [None] * len(op.results), op.regions[0].terminator.operands)
        then_block, else_block = op.regions
        self.line(f"if ({self.scalar(op.operands[0])}) {{")
        self.region(then_block, lambda: self.assign_yield(then_block, op.results, []))
        self.line("} else {")
        self.region(else_block, lambda: self.assign_yield(else_block, op.results, []))
        self.line("}")

    # ---- the module ----

    def module(self) -> Generated:
        fn = self.fn
        self.block(fn.body)
        body = self.lines
        bindings, decls = [], []
        for i, arg in enumerate(fn.args):
            if not arg.type.is_ptr:
                continue
            use = self.uses[i]
            kind = "read_write" if (use.written or self.all_rw) else "read"
            elem = self.element_type(i)
            if i in self.layouts.vec4_bufs:
                elem = f"vec4<{elem}>"  # element o is [o >> 2u][o & 3i]
            access = "read_write" if kind == "read_write" else "read"
            decls.append(f"@group(0) @binding({len(bindings)}) var<storage, {access}> "
                         f"{self.buffers[i]}: array<{elem}>;")
            bindings.append(kind)
        scalars = [(i, a.type.dtype.name) for i, a in enumerate(fn.args) if not a.type.is_ptr]
        fields = [*GRID_FIELDS] + [(self.param_idents[i], d) for i, d in scalars]
        self.check_workgroup_memory()
        decls.append(f"@group(0) @binding({len(bindings)}) var<uniform> params: Params;")
        bindings.append("uniform")
        entry = ty.ident(fn.name)
        head = [f"// Generated by cubepy from kernel {fn.name} ({fn.loc}). Do not edit.",
                f"// One cube = one workgroup of {self.w} invocations."]
        if any(v.type.dtype.name == "float16" for op in walk(fn.body)
               for v in [*op.operands, *op.results]) or \
                any(a.type.dtype.name == "float16" for a in fn.args):
            head.append("enable f16;")
        head += ["", uniform_struct_wgsl(fields), "", *decls]
        shared = self.smem.declarations() + [
            f"var<workgroup> {name}: {t};" for t, name in self.broadcast_vars.items()]
        if shared:
            head += ["", *shared]
        if any(ty.ROUND_TO_F16 in line for line in body):  # `ty.convert` has no codegen
            self.helpers.setdefault(*ty.helper("round_to_f16", "f32"))
        for text in self.helpers.values():
            head += ["", text]
        grid = cube_pos_wgsl().rstrip("\n").split("\n")
        head += [
            "",
            f"@compute @workgroup_size({self.w})",
            f"fn {entry}(@builtin(workgroup_id) wid: vec3<u32>, "
            "@builtin(num_workgroups) nwg: vec3<u32>,",
            "        @builtin(local_invocation_index) lid_u: u32) {",
            *("    " + g for g in grid),
            "    let lid = i32(lid_u);",
        ]
        source = "\n".join(head + body + ["}", ""])
        written = [i for i, u in self.uses.items() if u.written]
        return Generated(source, entry, bindings, written, scalars, self.w)


def generate(fn: Function, w: int, target: Target, all_read_write: bool = False) -> Generated:
    """The WGSL module of ``fn`` for workgroups of ``w`` invocations."""
    return WgslEmitter(fn, w, target, all_read_write).module()
