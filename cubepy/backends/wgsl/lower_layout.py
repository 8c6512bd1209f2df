"""How tiles are spread over the invocations of a workgroup, and which tiles are materialized.

A cube is one workgroup of ``W`` invocations; ``lid`` is the local invocation index. A tile that
is *materialized* lives in a private array ``array<T, K>`` of every invocation, in a layout:

- ``Std(N)``: invocation ``lid`` owns the flat (row-major) elements ``e = lid + k*W``,
  ``k < K = ceil(N/W)``. Consecutive invocations own consecutive elements, so loads and stores
  coalesce. Two tiles with the same element count share this layout (a reshape is free).
- ``Quad(N)``: a 1-D tile with N a multiple of 4*W whose elements are read or written at
  consecutive addresses: invocation ``lid`` owns the quads ``4*(lid + q*W) + j``, ``j < 4``, in
  slots ``4*q + j``, so it loads and stores them as one ``vec4`` (``contiguous``).
- ``Blocked(M, N, TM, TN, RM, RN)``: a 2-D tile; invocations form a TM x TN grid and each owns
  an RM x RN register block, strided: element ``(rm*TM + lid/TN, rn*TN + lid%TN)`` is slot
  ``k = rm*RN + rn``. ``dot`` produces its result in this layout (register blocking).

Every other tile is *lazy*: an expression of its element index, computed where it is used
(arange, full, elementwise chains, broadcasts, reshapes and permutes of those).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import Block, Function, Op, Operation, Value, walk
from ...ir.ops import ELEMENTWISE

MATERIALIZED = frozenset({Op.LOAD, Op.ATOMIC, Op.ATOMIC_CAS, Op.REDUCE, Op.ARGREDUCE, Op.SCAN,
                          Op.SORT, Op.GATHER, Op.REDUCE_FN, Op.SCAN_FN, Op.DOT})
MAX_BLOCK = 64  # registers of a dot's accumulator block per invocation


@dataclass(frozen=True)
class Std:
    n: int
    w: int

    @property
    def slots(self) -> int:
        return -(-self.n // self.w)


@dataclass(frozen=True)
class Quad:
    n: int
    w: int

    @property
    def slots(self) -> int:
        return self.n // self.w


@dataclass(frozen=True)
class Blocked:
    m: int
    n: int
    tm: int
    tn: int
    rm: int
    rn: int
    contig: bool = False  # blocks of RM x RN adjacent elements (vec4 reads) instead of strided

    @property
    def slots(self) -> int:
        return self.rm * self.rn

    def row(self, rm: int) -> str:
        """The row of slot row ``rm`` of invocation ``lid`` (an i32 expression). Contiguous
        blocks are quads of 4 rows, quad q of every invocation in the q-th part of the tile."""
        if self.contig:
            return f"({(rm // 4) * 4 * self.tm + rm % 4}i + (lid / {self.tn}i) * 4i)"
        return f"({rm * self.tm}i + lid / {self.tn}i)" if rm else f"(lid / {self.tn}i)"

    def col(self, rn: int) -> str:
        if self.contig:
            return f"({(rn // 4) * 4 * self.tn + rn % 4}i + (lid % {self.tn}i) * 4i)"
        return f"({rn * self.tn}i + lid % {self.tn}i)" if rn else f"(lid % {self.tn}i)"


Layout = Std | Quad | Blocked

VEC4_DTYPES = ("float32", "int32", "uint32")


def uniform(v: Value, depth: int = 0) -> bool:
    """Whether tile (or scalar) ``v`` has the same value at every element."""
    if not v.type.shape:
        return True
    op = v.owner
    if op is None or depth > 32:
        return False
    if op.op is Op.FULL or (op.op is Op.BROADCAST and not op.operands[0].type.shape):
        return True
    if op.op in ELEMENTWISE:
        return all(uniform(x, depth + 1) for x in op.operands)
    return False


def contiguous(v: Value, depth: int = 0) -> bool:
    """Whether 1-D tile ``v`` is ``uniform + arange(start, start + N)``: element ``e`` is the
    value of element 0 plus ``e`` (so a pointer tile addresses consecutive elements)."""
    op = v.owner
    if op is None or depth > 32 or len(v.type.shape) != 1:
        return False
    if op.op is Op.ARANGE:
        return True
    if op.op in (Op.ADD, Op.PTR_ADD):
        a, b = op.operands
        return (uniform(a) and contiguous(b, depth + 1)) or \
            (contiguous(a, depth + 1) and uniform(b))
    return False


def blocked_for(m: int, n: int, w: int, vec4: bool = False) -> Layout:
    """The register-blocked layout of an m x n dot result on ``w`` invocations (``vec4``:
    contiguous blocks when they are multiples of 4, for vector reads of the operands)."""
    per = max(1, (m * n) // w)
    rn = 1 << ((per.bit_length() - 1 + 1) // 2)
    rm = per // rn
    rn, rm = min(rn, n), min(rm, m)
    if rm * rn * w < m * n and rm * rn < per:  # a thin tile: grow the other side
        rm = min(m, per // rn)
    tm, tn = m // rm, n // rn
    if tm * tn > w:
        return Std(m * n, w)
    return Blocked(m, n, tm, tn, rm, rn, vec4 and rm % 4 == 0 and rn % 4 == 0)


def numel(value: Value) -> int:
    return value.type.numel


def max_tile(fn: Function) -> tuple[int, int]:
    """(largest tile, largest dot result) element counts in ``fn``."""
    biggest, biggest_dot = 1, 0
    for op in walk(fn.body):
        for v in [*op.results, *op.operands]:
            biggest = max(biggest, v.type.numel)
        if op.op is Op.DOT:
            biggest_dot = max(biggest_dot, op.result.type.numel)
    return biggest, biggest_dot


def choose_workgroup_size(fn: Function, options: dict, max_invocations: int) -> int:
    """W: the ``workgroup_size`` option, else 32 * ``num_warps``, else from the tile sizes."""
    biggest, biggest_dot = max_tile(fn)
    if options.get("workgroup_size"):
        w = int(options["workgroup_size"])
    elif options.get("num_warps"):
        w = 32 * int(options["num_warps"])
    else:
        w = min(256, biggest)
        if biggest_dot:
            w = max(w, min(256, biggest_dot))
    w = max(w, -(-biggest_dot // MAX_BLOCK))  # at most MAX_BLOCK accumulators per invocation
    w = 1 << max(0, (w - 1).bit_length())  # a power of two
    return max(1, min(w, max_invocations, 1 << max(0, (biggest - 1).bit_length())))


class Layouts:
    """The layout of every materialized tile of a function (see the module docstring)."""

    def __init__(self, fn: Function, w: int, vec4_dot: bool = True, vec4_io: bool = True):
        self.w = w
        self.vec4_dot = vec4_dot
        self.vec4_io = vec4_io
        self.of: dict[int, Layout] = {}
        self.carried: dict[int, list[Value]] = {}  # block arg / result id -> group of values
        self._users: dict[int, list[Operation]] = {}
        for op in walk(fn.body):
            for v in op.operands:
                self._users.setdefault(v.id, []).append(op)
        self.atomic_bufs = {op.operands[0].type.ptr_base for op in walk(fn.body)
                            if op.op in (Op.ATOMIC, Op.ATOMIC_CAS)}
        self._assign(fn.body)
        self._assign(fn.body)  # again: loads see the layouts of tiles defined after them
        # buffers accessed with vec4 somewhere: declared array<vec4<T>>
        self.vec4_bufs = {op.operands[0].type.ptr_base for op in walk(fn.body)
                          if op.op in (Op.LOAD, Op.STORE) and self.vec4_ptr(op.operands[0])}

    def users(self, value: Value) -> list[Operation]:
        """The ops that read ``value`` directly."""
        return self._users.get(value.id, [])

    def std(self, n: int) -> Std:
        return Std(n, self.w)

    def _assign(self, block: Block) -> None:
        for op in block.ops:
            for region in op.regions:
                self._assign(region)
            if op.op is Op.DOT:
                m, n = op.result.type.shape
                vec4 = self.vec4_dot and op.result.type.dtype.name == "float32" and \
                    op.operands[0].type.dtype.name in ("float32", "float16")
                self.of[op.result.id] = blocked_for(m, n, self.w, vec4)
            elif op.op in (Op.LOAD, Op.ATOMIC, Op.ATOMIC_CAS) and op.result.type.shape:
                self.of[op.result.id] = self._load_layout(op.result)
            elif op.op in MATERIALIZED:
                for result in op.results:
                    if result.type.shape:
                        self.of[result.id] = self.std(numel(result))
            elif op.op in (Op.FOR, Op.WHILE, Op.IF):
                self._assign_carried(op)

    def vec4_ptr(self, ptr: Value) -> bool:
        """Whether loads and stores through pointer tile ``ptr`` can go 4 elements at a time:
        a contiguous 1-D f32/i32/u32 tile of a multiple of 4*W elements, no atomics."""
        return self.vec4_io and len(ptr.type.shape) == 1 and \
            ptr.type.numel % (4 * self.w) == 0 and ptr.type.dtype.name in VEC4_DTYPES and \
            ptr.type.ptr_base not in self.atomic_bufs and contiguous(ptr)

    def _only_elementwise(self, value: Value, seen: set[int]) -> bool:
        """Whether every (transitive) reader of ``value`` is elementwise or a store."""
        if value.id in seen:
            return True
        seen.add(value.id)
        for user in self._users.get(value.id, []):
            if user.op is Op.STORE:
                continue
            if user.op not in ELEMENTWISE or user.result.type.shape != value.type.shape or \
                    not self._only_elementwise(user.result, seen):
                return False
        return True

    def _load_layout(self, value: Value) -> Layout:
        """A loaded tile added to a register-blocked tile is loaded in its layout; a
        contiguous one only read elementwise is loaded in quads."""
        for user in self._users.get(value.id, []):
            if user.op in ELEMENTWISE:
                for other in user.operands:
                    layout = self.of.get(other.id)
                    if isinstance(layout, Blocked) and other.type.shape == value.type.shape:
                        return layout
        if value.owner.op is Op.LOAD and self.vec4_ptr(value.owner.operands[0]) and \
                self._only_elementwise(value, set()):
            return Quad(numel(value), self.w)
        return self.std(numel(value))

    def _assign_carried(self, op: Operation) -> None:
        if op.op is Op.FOR:
            inits = op.operands[3:]
            groups = [[r, op.regions[0].args[i + 1]] for i, r in enumerate(op.results)]
            yields = [op.regions[0].terminator.operands]
        elif op.op is Op.WHILE:
            inits = op.operands
            groups = [[r, op.regions[0].args[i], op.regions[1].args[i]]
                      for i, r in enumerate(op.results)]
            yields = [op.regions[1].terminator.operands]
        else:
            inits = [None] * len(op.results)
            groups = [[r] for r in op.results]
            yields = [region.terminator.operands for region in op.regions]
        for i, group in enumerate(groups):
            if not group[0].type.shape:
                continue
            layout = None
            for ys in yields:
                layout = layout or self.layout_of(ys[i])
            if layout is None and inits[i] is not None:
                layout = self.layout_of(inits[i])
            layout = layout or self.std(numel(group[0]))
            for v in group:
                self.of[v.id] = layout
                self.carried[v.id] = group

    def layout_of(self, value: Value, depth: int = 0) -> Layout | None:
        """The layout of a materialized tile, or of the first materialized tile a lazy
        elementwise chain reads element by element (None when it reads none)."""
        if value.id in self.of:
            return self.of[value.id]
        owner = value.owner
        if owner is None or depth > 64 or not value.type.shape:
            return None
        if owner.op in ELEMENTWISE:
            for operand in owner.operands:
                if operand.type.shape == value.type.shape:
                    layout = self.layout_of(operand, depth + 1)
                    if layout is not None:
                        return layout
        if owner.op in (Op.RESHAPE, Op.EXPAND_DIMS):
            layout = self.layout_of(owner.operands[0], depth + 1)
            if isinstance(layout, Std):
                return layout
        return None


@dataclass
class BufferUse:
    read: bool = False
    written: bool = False
    atomic_kinds: set[str] | None = None

    @property
    def atomic(self) -> bool:
        return bool(self.atomic_kinds)


def buffer_uses(fn: Function) -> dict[int, BufferUse]:
    """How the kernel uses each array argument (by argument index)."""
    uses = {i: BufferUse() for i, a in enumerate(fn.args) if a.type.is_ptr}
    for op in walk(fn.body):
        if op.op in (Op.LOAD, Op.STORE, Op.ATOMIC, Op.ATOMIC_CAS):
            use = uses[op.operands[0].type.ptr_base]
            if op.op is Op.LOAD:
                use.read = True
            elif op.op is Op.STORE:
                use.written = True
            else:
                use.read = use.written = True
                use.atomic_kinds = (use.atomic_kinds or set()) | {
                    op.attrs.get("kind", "cas") if op.op is Op.ATOMIC else "cas"}
    return uses
