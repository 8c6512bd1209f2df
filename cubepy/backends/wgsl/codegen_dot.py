"""``dot(a, b, acc)``: a register-blocked product through workgroup memory.

Each invocation owns an RM x RN block of the result (layout ``Blocked``) and accumulates it
in registers, with constant indices, per step of the inner dimension: RM values of ``a``,
RN values of ``b``, RM*RN fused multiply-adds. ``acc`` is updated in place when the dot is
its only reader (the usual ``acc = cube.dot(a, b, acc)`` loop).

- vec4 path (float32 results, blocks of multiples of 4: the ``contig`` layout): ``a`` is
  stored k-major (``a[k][m]``, rows padded by 4 against bank conflicts) and ``b`` as
  ``b[k][n]``, both as ``array<vec4<f32>>``, so a step reads RM/4 + RN/4 vectors. float16
  operands are widened to f32 on the way in.
- general path: both operands are staged row-major (a view such as ``trans(b)`` stages the
  tile it views and reads through the view) and read one element at a time.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...ir import Op, Operation, Value
from ...ir import dtypes as dt
from . import codegen_types as ty
from .codegen_tiles import Idx, Priv
from .lower_layout import Blocked

VIEW_OPS = (Op.BROADCAST, Op.EXPAND_DIMS, Op.RESHAPE, Op.PERMUTE)
COMPONENTS = "xyzw"
A_ROW_PAD = 4  # a[k][m] rows padded by 4 floats: no bank conflicts on writes
WEBGPU_MIN_WORKGROUP_BYTES = 16384  # what every WebGPU adapter offers at least


def staged_dot_bytes(m: int, n: int, k: int, element_bytes: int = 4) -> int:
    """Workgroup memory a ``dot`` of an (m, k) and a (k, n) tile of ``element_bytes``-byte
    elements stages: values are staged as 32 bits (64 for 8-byte elements). Exactly that of
    the vec4 path (``a`` k-major with padded rows), at most that of the general path.

    Example:
        >>> staged_dot_bytes(128, 128, 32)
        33280
    """
    staged = 8 if element_bytes == 8 else 4
    return ((m + A_ROW_PAD) * k + k * n) * staged


def workgroup_room(limits: Mapping[str, int]) -> int:
    """Workgroup memory an adapter with wgpu's ``limits`` offers (WebGPU's least if unset).

    Example:
        >>> workgroup_room({})
        16384
    """
    return limits.get("max_compute_workgroup_storage_size", WEBGPU_MIN_WORKGROUP_BYTES)


class DotMixin:
    def _view_leaf(self, v: Value) -> Value | None:
        """The materialized tile ``v`` is a view of (through layout ops only), if any."""
        while v.id not in self.priv:
            owner = v.owner
            if owner is None or owner.op not in VIEW_OPS or not owner.operands[0].type.shape:
                return None
            v = owner.operands[0]
        return v

    def _accumulator(self, op: Operation) -> Priv:
        a, b, acc = op.operands
        layout = self.layouts.of[op.result.id]
        src = self.priv.get(acc.id)
        if src is not None and src.layout == layout and len(self.layouts.users(acc)) == 1:
            self.priv[op.result.id] = src  # accumulate in place
            return src
        res = self.new_priv(op.result)
        self.fill(res, acc, op.result.type.shape)
        return res

    def dot(self, op: Operation) -> None:
        a, b, acc = op.operands
        layout = self.layouts.of[op.result.id]
        self.line(f"// dot {a.type} x {b.type}: {_describe(layout)}")
        res = self._accumulator(op)
        staged_before = dict(self.staged)
        if isinstance(layout, Blocked) and layout.contig:
            self._dot_vec4(op, res)
        else:
            self._dot_scalar(op, res)
        self.phase_end()
        self.staged = staged_before

    # ---- general path ----

    def _dot_scalar(self, op: Operation, res: Priv) -> None:
        a, b, _ = op.operands
        m, k_len = a.type.shape
        n = b.type.shape[1]
        out_t = op.result.type.dtype
        leaves, gathers = [], []
        for operand in (a, b):
            leaf = self._view_leaf(operand)
            if leaf is not None:
                if leaf.id not in self.staged and leaf not in leaves:
                    leaves.append(leaf)
            else:
                gathers.append(operand)
        self._stage_inputs_of(gathers, exclude=leaves)
        self.stage(leaves)
        for g in gathers:
            slot = self.smem.alloc(self.shared_type(ty.reg(g.type)), g.type.numel)
            self.line(f"// gather {g.name or 'operand'} in workgroup memory")
            self.element_loop(self.layouts.std(g.type.numel), g.type.shape,
                              lambda idx, g=g, s=slot: self.line(
                                  f"{s}[{idx.flat}] = "
                                  f"{self.to_shared(self.ev(g, idx), ty.reg(g.type))};"))
            self.staged[g.id] = slot
        self.barrier()

        def operand_at(v: Value, dims: list[str]) -> str:
            return ty.convert(self.ev(v, Idx(v.type.shape, dims)), v.type.dtype, out_t)

        layout = res.layout
        kk = self.fresh("kk")
        if isinstance(layout, Blocked):
            self._guarded(layout, lambda: self._k_loop(kk, k_len, lambda: self._block_step(
                res, [operand_at(a, [layout.row(r), kk]) for r in range(layout.rm)],
                [operand_at(b, [kk, layout.col(c)]) for c in range(layout.rn)], out_t)))
            return

        def one(idx: Idx) -> None:
            row, col = f"({idx.flat} / {n}i)", f"({idx.flat} % {n}i)"
            c = f"{res.name}[{idx.owner[1]}]"
            self._k_loop(kk, k_len, lambda: self.line(
                f"{c} = {_mac(operand_at(a, [row, kk]), operand_at(b, [kk, col]), c, out_t)};"))

        self.element_loop(layout, (m, n), one)
        del m

    def _stage_inputs_of(self, gathers: list[Value], exclude: list[Value]) -> None:
        """Stage what gathering ``gathers`` element by element reads out of its layout."""
        inner: list[Value] = []
        for g in gathers:
            inner += [v for v in self.needs_staging([g], self.layouts.std(g.type.numel))
                      if v not in inner and v not in exclude]
        self.phase_begin()
        if inner:
            self.stage(inner)
            self.barrier()

    def _guarded(self, layout: Blocked, body) -> None:
        guard = layout.tm * layout.tn < self.w
        if guard:
            self.line(f"if (lid < {layout.tm * layout.tn}i) {{")
            self.depth += 1
        body()
        if guard:
            self.depth -= 1
            self.line("}")

    def _k_loop(self, kk: str, k_len: int, step) -> None:
        self.line(f"for (var {kk} = 0i; {kk} < {k_len}i; {kk}++) {{")
        self.depth += 1
        self.with_memo(step)
        self.depth -= 1
        self.line("}")

    def _block_step(self, res: Priv, a_vals: list[str], b_vals: list[str],
                    out_t: dt.DType) -> None:
        """One step of the inner dimension: RM x RN multiply-adds into the register block."""
        av = [self._named(v, "a") for v in a_vals]
        bv = [self._named(v, "b") for v in b_vals]
        rn = len(bv)
        for i, x in enumerate(av):
            for j, y in enumerate(bv):
                c = f"{res.name}[{i * rn + j}]"
                self.line(f"{c} = {_mac(x, y, c, out_t)};")

    def _named(self, expr: str, hint: str) -> str:
        name = self.fresh(hint)
        self.line(f"let {name} = {expr};")
        return name

    # ---- vec4 path ----

    def _dot_vec4(self, op: Operation, res: Priv) -> None:
        a, b, _ = op.operands
        m, k_len = a.type.shape
        n = b.type.shape[1]
        layout: Blocked = res.layout
        a_stride, b_stride = m + A_ROW_PAD, n  # as staged_dot_bytes counts
        plans = [(a, True, a_stride), (b, False, b_stride)]
        sources = [self._scatter_source(v) for v, _, _ in plans]
        gathers = [v for (v, _, _), src in zip(plans, sources) if src is None]
        self._stage_inputs_of(gathers, exclude=[])
        slots = []
        for (v, k_major, stride), src in zip(plans, sources):
            slot = self.smem.alloc("vec4<f32>", k_len * stride // 4)
            slots.append(slot)
            self.line(f"// {v.name or 'operand'} to workgroup memory as "
                      f"{'[k][m]' if k_major else '[k][n]'} vec4 rows")

            def write(value: str, dims: list[str], v=v, k_major=k_major, stride=stride,
                      slot=slot) -> None:
                i, j = dims
                pos = self.fresh("p")
                addr = f"{j} * {stride}i + {i}" if k_major else f"{i} * {stride}i + {j}"
                self.line(f"let {pos} = {addr};")
                value = ty.convert(value, v.type.dtype, dt.float32)
                self.line(f"{slot}[{pos} >> 2u][{pos} & 3i] = {value};")

            if src is None:
                self.element_loop(self.layouts.std(v.type.numel), v.type.shape,
                                  lambda idx, v=v, write=write: write(self.ev(v, idx), idx.dims))
            else:
                leaf, transposed = src
                priv = self.priv[leaf.id]
                self.element_loop(priv.layout, leaf.type.shape, lambda idx, p=priv, t=transposed,
                                  write=write: write(f"{p.name}[{idx.owner[1]}]",
                                                     idx.dims[::-1] if t else idx.dims))
        self.barrier()
        sa, sb = slots
        kk = self.fresh("kk")
        tm_q, tn_q = f"(lid / {layout.tn}i)", f"(lid % {layout.tn}i)"

        def step() -> None:
            av = [self._named(f"{sa}[{kk} * {a_stride // 4}i + {q * layout.tm}i + {tm_q}]", "a")
                  for q in range(layout.rm // 4)]
            bv = [self._named(f"{sb}[{kk} * {b_stride // 4}i + {q * layout.tn}i + {tn_q}]", "b")
                  for q in range(layout.rn // 4)]
            self._block_step(res, [f"{av[r // 4]}.{COMPONENTS[r % 4]}" for r in range(layout.rm)],
                             [f"{bv[c // 4]}.{COMPONENTS[c % 4]}" for c in range(layout.rn)],
                             dt.float32)

        self._guarded(layout, lambda: self._k_loop(kk, k_len, step))

    def _scatter_source(self, v: Value) -> tuple[Value, bool] | None:
        """(tile, transposed) when ``v`` is a materialized 2-D tile or its transpose."""
        if v.id in self.priv:
            return v, False
        owner = v.owner
        if owner is not None and owner.op is Op.PERMUTE and tuple(owner.attrs["dims"]) == (1, 0) \
                and owner.operands[0].id in self.priv:
            return owner.operands[0], True
        return None


def _mac(x: str, y: str, c: str, out_t: dt.DType) -> str:
    return f"fma({x}, {y}, {c})" if out_t.is_float else f"{c} + {x} * {y}"


def _describe(layout) -> str:
    if isinstance(layout, Blocked):
        kind = "vec4 " if layout.contig else ""
        return (f"{layout.tm}x{layout.tn} invocations, each a {layout.rm}x{layout.rn} "
                f"{kind}register block")
    return "one element per slot"
