"""Tiles on the invocations of a workgroup: element indices, lazy expressions, element loops
and staging through workgroup memory (see ``lower_layout`` for the layouts).

A consumer (a store, a load, a materialization) runs an *element loop* over a layout: for each
slot ``k`` an invocation owns, it knows the element's index and evaluates the operands there.
A lazy operand is computed from the index; a materialized operand in the same layout is read
from its private array; any other materialized operand is first staged into workgroup memory
(barrier, every invocation writes the elements it owns, barrier) and read from there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ...ir import Op, Value
from ...ir.ops import ELEMENTWISE
from . import codegen_types as ty
from .lower_layout import Blocked, Layout, Quad, Std

UNROLL = 16  # element loops with at most this many slots are unrolled (constant indices)


@dataclass
class Idx:
    """The index of one element of a tile of ``shape``: one i32 expression per dimension,
    the flat row-major index when known, and (layout, slot) when the invocation owns it."""

    shape: tuple[int, ...]
    dims: list[str]
    flat: str | None = None
    owner: tuple[Layout, str] | None = None


@dataclass
class Priv:
    """A materialized tile: a private array in a layout."""

    name: str
    layout: Layout
    wgsl: str  # element type


def strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return out[::-1]


def dims_from_flat(flat: str, shape: tuple[int, ...]) -> list[str]:
    dims = []
    for d, (size, stride) in enumerate(zip(shape, strides(shape))):
        if size == 1:
            dims.append("0i")
            continue
        q = flat if stride == 1 else f"({flat} / {stride}i)"
        dims.append(q if d == 0 else f"({q} % {size}i)")
    return dims


def flat_of(idx: Idx) -> str:
    if idx.flat is not None:
        return idx.flat
    terms = [d if s == 1 else f"{d} * {s}i"
             for d, s, n in zip(idx.dims, strides(idx.shape), idx.shape) if n != 1]
    return "(" + " + ".join(terms) + ")" if terms else "0i"


class SharedPool:
    """Workgroup arrays: each phase (barrier, writes, barrier, reads) takes slots anew; a
    slot's declared size is the largest any phase asked for."""

    def __init__(self) -> None:
        self.sizes: dict[tuple[str, int], int] = {}
        self._next: dict[str, int] = {}

    def begin(self) -> None:
        self._next = {}

    def alloc(self, wgsl: str, n: int) -> str:
        i = self._next.get(wgsl, 0)
        self._next[wgsl] = i + 1
        key = (wgsl, i)
        self.sizes[key] = max(self.sizes.get(key, 0), n)
        return _slot_name(wgsl, i)

    def bytes(self) -> int:
        size = {"i64": 8, "f64": 8, "vec4<f32>": 16}
        return sum(n * size.get(t, 4) for (t, _), n in self.sizes.items())

    def declarations(self) -> list[str]:
        return [f"var<workgroup> {_slot_name(t, i)}: array<{t}, {n}>;"
                for (t, i), n in sorted(self.sizes.items())]


def _slot_name(wgsl: str, i: int) -> str:
    return f"sh_{re.sub(r'[<>]', '', wgsl)}_{i}"


class TileMixin:
    """Element loops, lazy expressions and staging; mixed into ``WgslEmitter``."""

    # ---- workgroup memory ----

    def barrier(self) -> None:
        self.line("workgroupBarrier();")
        self.dirty = False

    def phase_begin(self) -> None:
        """Start writing workgroup memory: wait until earlier readers are done."""
        if self.dirty:
            self.barrier()
        self.smem.begin()

    def phase_end(self) -> None:
        self.dirty = True

    # ---- element loops ----

    def slot_count(self, layout: Layout) -> int:
        return layout.slots

    def element_loop(self, layout: Layout, shape: tuple[int, ...],
                     body: Callable[[Idx], None]) -> None:
        """Run ``body`` for every element of ``shape`` this invocation owns in ``layout``."""
        if isinstance(layout, Blocked):
            self._blocked_loop(layout, shape, body)
            return
        if isinstance(layout, Quad):
            self.quad_loop(layout, lambda idxs: [body(idx) for idx in idxs])
            return
        n, w, k_count = layout.n, layout.w, layout.slots
        guard = n % w != 0
        if k_count > UNROLL:
            k = self.fresh("k")
            self.line(f"for (var {k} = 0i; {k} < {k_count}i; {k}++) {{")
            self.depth += 1
            self._std_slot(layout, shape, k, f"(lid + {k} * {w}i)", guard, body)
            self.depth -= 1
            self.line("}")
            return
        for k in range(k_count):
            self._std_slot(layout, shape, str(k), "lid" if k == 0 else f"(lid + {k * w}i)",
                           guard, body)

    def _std_slot(self, layout: Std, shape, slot: str, e_expr: str, guard: bool, body) -> None:
        e = self.fresh("e")
        self.line(f"let {e} = {e_expr};")
        if guard:
            self.line(f"if ({e} < {layout.n}i) {{")
            self.depth += 1
        dims = dims_from_flat(e, shape) if shape else []
        self.with_memo(lambda: body(Idx(shape, dims, e, (layout, slot))))
        if guard:
            self.depth -= 1
            self.line("}")

    def quad_loop(self, layout: Quad, body: Callable[[list[Idx]], None]) -> None:
        """Run ``body`` on the 4 consecutive elements of every quad this invocation owns."""
        quads, w = layout.n // (4 * layout.w), layout.w
        if quads * 4 > UNROLL:
            q = self.fresh("q")
            self.line(f"for (var {q} = 0i; {q} < {quads}i; {q}++) {{")
            self.depth += 1
            self._quad(layout, f"(lid + {q} * {w}i) * 4i", [f"{q} * 4i + {j}i" for j in range(4)],
                       body)
            self.depth -= 1
            self.line("}")
            return
        for q in range(quads):
            self._quad(layout, f"(lid + {q * w}i) * 4i" if q else "lid * 4i",
                       [str(4 * q + j) for j in range(4)], body)

    def _quad(self, layout: Quad, e_expr: str, slots: list[str], body) -> None:
        e = self.fresh("e")
        self.line(f"let {e} = {e_expr};")
        idxs = [Idx((layout.n,), [f"({e} + {j}i)" if j else e], None, (layout, slot))
                for j, slot in enumerate(slots)]
        for idx in idxs:
            idx.flat = idx.dims[0]
        self.with_memo(lambda: body(idxs))

    def _blocked_loop(self, layout: Blocked, shape, body) -> None:
        guard = layout.tm * layout.tn < self.w
        if guard:
            self.line(f"if (lid < {layout.tm * layout.tn}i) {{")
            self.depth += 1
        for k in range(layout.slots):
            rm, rn = divmod(k, layout.rn)
            row, col = layout.row(rm), layout.col(rn)
            flat = f"({row} * {layout.n}i + {col})"
            if shape == (layout.m, layout.n):
                dims = [row, col]
            else:
                dims = dims_from_flat(flat, shape)
            self.with_memo(lambda d=dims, f=flat, s=str(k): body(Idx(shape, d, f, (layout, s))))
        if guard:
            self.depth -= 1
            self.line("}")

    def with_memo(self, fn: Callable[[], None]) -> None:
        self.memo.append({})
        try:
            fn()
        finally:
            self.memo.pop()

    # ---- planning: which materialized tiles must be staged for a loop ----

    def needs_staging(self, roots: list[Value], layout: Layout | None) -> list[Value]:
        out: dict[int, Value] = {}
        seen: set = set()
        for root in roots:
            if root is not None:
                self._needs(root, layout, out, seen)
        return list(out.values())

    def _needs(self, v: Value, layout: Layout | None, out: dict, seen: set) -> None:
        if not v.type.shape:
            return
        key = (v.id, layout)
        if key in seen:
            return
        seen.add(key)
        priv = self.priv.get(v.id)
        if priv is not None:
            if (layout is None or priv.layout != layout) and v.id not in self.staged:
                out[v.id] = v
            return
        op = v.owner
        keep = layout
        if op.op is Op.BROADCAST and op.operands[0].type.shape != v.type.shape:
            keep = None
        elif op.op is Op.PERMUTE and tuple(op.attrs["dims"]) != tuple(range(len(v.type.shape))):
            keep = None
        elif op.op is Op.FLIP and v.type.shape[op.attrs["axis"]] > 1:
            keep = None
        for operand in op.operands:
            self._needs(operand, keep, out, seen)

    def stage(self, values: list[Value]) -> None:
        """Copy materialized tiles into workgroup memory (within the current phase)."""
        for v in values:
            priv = self.priv[v.id]
            slot = self.smem.alloc(self.shared_type(priv.wgsl), v.type.numel)
            self.line(f"// stage {priv.name} in workgroup memory")
            self.element_loop(priv.layout, v.type.shape, lambda idx, p=priv, s=slot: self.line(
                f"{s}[{flat_of(idx)}] = {self.to_shared(f'{p.name}[{idx.owner[1]}]', p.wgsl)};"))
            self.staged[v.id] = slot

    def shared_type(self, wgsl: str) -> str:
        return "u32" if wgsl == "bool" else wgsl

    def to_shared(self, expr: str, wgsl: str) -> str:
        return f"select(0u, 1u, {expr})" if wgsl == "bool" else expr

    def from_shared(self, expr: str, wgsl: str) -> str:
        return f"({expr} != 0u)" if wgsl == "bool" else expr

    def consume(self, layout: Layout, shape: tuple[int, ...], roots: list[Value | None],
                body: Callable[[Idx], None]) -> None:
        """An element loop over ``layout`` that reads ``roots``; stages what it must first."""
        todo = self.needs_staging([r for r in roots if r is not None], layout)
        staged_before = dict(self.staged)
        if todo:
            self.phase_begin()
            self.stage(todo)
            self.barrier()
        self.element_loop(layout, shape, body)
        if todo:
            self.phase_end()
        self.staged = staged_before

    def layout_for(self, roots: list[Value | None], shape: tuple[int, ...]) -> Layout:
        """The layout of the first materialized tile the roots read element by element."""
        n = 1
        for s in shape:
            n *= s
        for root in roots:
            if root is None or not root.type.shape:
                continue
            layout = self._chain_layout(root, 0)
            if layout is not None and layout_numel(layout) == n:
                return layout
        return self.layouts.std(n)

    def _chain_layout(self, v: Value, depth: int) -> Layout | None:
        priv = self.priv.get(v.id)
        if priv is not None:
            return priv.layout
        op = v.owner
        if op is None or depth > 32 or not v.type.shape:
            return None
        if op.op in ELEMENTWISE or op.op in (Op.RESHAPE, Op.EXPAND_DIMS) or (
                op.op is Op.BROADCAST and op.operands[0].type.shape == v.type.shape):
            for operand in op.operands:
                if operand.type.shape and operand.type.numel == v.type.numel:
                    layout = self._chain_layout(operand, depth + 1)
                    if layout is not None:
                        return layout
        return None

    # ---- values at an index ----

    def ev(self, v: Value, idx: Idx) -> str:
        """A WGSL expression of tile (or scalar) ``v`` at the element ``idx`` of its shape."""
        if not v.type.shape:
            return self.scalar(v)
        priv = self.priv.get(v.id)
        if priv is not None and idx.owner is not None and idx.owner[0] == priv.layout:
            return f"{priv.name}[{idx.owner[1]}]"
        slot = self.staged.get(v.id)
        if slot is not None:
            return self.from_shared(f"{slot}[{flat_of(idx)}]", ty.reg(v.type))
        if priv is not None:
            raise AssertionError(f"wgsl codegen: {priv.name} read outside its layout")
        memo = self.memo[-1] if self.memo else {}
        key = (v.id, tuple(idx.dims), idx.owner[1] if idx.owner else None)
        if key in memo:
            return memo[key]
        expr = self.lazy(v, idx)
        if not _is_simple(expr) and self.memo:
            name = self.fresh(v.name or "t")
            self.line(f"let {name} = {expr};")
            expr = name
        memo[key] = expr
        return expr

    def lazy(self, v: Value, idx: Idx) -> str:
        op = v.owner
        kind = op.op
        if kind is Op.ARANGE:
            start = op.attrs["start"]
            return idx.dims[0] if start == 0 else f"({idx.dims[0]} + {start}i)"
        if kind is Op.FULL:
            return self.scalar(op.operands[0])
        if kind in (Op.BROADCAST, Op.EXPAND_DIMS, Op.RESHAPE, Op.PERMUTE, Op.FLIP):
            src = op.operands[0]
            return self.ev(src, map_index(op, idx, src.type.shape))
        if kind in ELEMENTWISE:
            args = [self.ev(x, idx) for x in op.operands]
            return self.elementwise(op, args)
        raise AssertionError(f"wgsl codegen: {kind.value} is not lazy")


def layout_numel(layout: Layout) -> int:
    return layout.m * layout.n if isinstance(layout, Blocked) else layout.n


_SIMPLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(\[[A-Za-z0-9_]+\])?|-?[0-9][0-9.eE+-]*[a-z]*)$")


def _is_simple(expr: str) -> bool:
    return bool(_SIMPLE.match(expr))


def map_index(op, idx: Idx, src_shape: tuple[int, ...]) -> Idx:
    """The index in the operand of a layout op that gives the result's element ``idx``."""
    kind = op.op
    if not src_shape:
        return Idx((), [], None, None)
    if kind is Op.BROADCAST:
        if src_shape == idx.shape:
            return idx
        lead = len(idx.shape) - len(src_shape)
        dims = ["0i" if s == 1 else idx.dims[lead + d] for d, s in enumerate(src_shape)]
        return Idx(src_shape, dims)
    if kind is Op.EXPAND_DIMS:
        axis = op.attrs["axis"] % len(idx.shape)
        dims = idx.dims[:axis] + idx.dims[axis + 1:]
        return Idx(src_shape, dims, idx.flat, idx.owner)
    if kind is Op.RESHAPE:
        flat = flat_of(idx)
        return Idx(src_shape, dims_from_flat(flat, src_shape), flat, idx.owner)
    if kind is Op.FLIP:
        axis, dims = op.attrs["axis"], list(idx.dims)
        dims[axis] = f"({src_shape[axis] - 1}i - {dims[axis]})"
        return Idx(src_shape, dims)
    perm = tuple(op.attrs["dims"])
    if perm == tuple(range(len(perm))):
        return idx
    dims = [""] * len(perm)
    for j, p in enumerate(perm):
        dims[p] = idx.dims[j]
    return Idx(src_shape, dims)
