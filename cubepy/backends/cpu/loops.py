"""Kernels on tiles of one lane axis as scalar loops over lanes (the ``cpu`` target's fast
path).

A kernel whose tiles all hold either ``B`` lanes along one axis (``(B,)``, ``(1, B)``,
``(B, 1)``) or a single element, and whose tile ops are elementwise, layout changes among
those shapes, reductions or ``cumsum`` (no ``dot``, no tile atomics), is emitted as runs of
lane loops instead of NumPy operations on whole tiles::

    m = 0                                   # a segment: tile ops up to a reduction's use
    for lane in range(B):
        x[lane] = load(...)                 # x is used by a later segment: kept in an array
        if x[lane] > m or x[lane] != x[lane]: m = x[lane]
    for lane in range(B):                   # the next segment
        e[lane] = exp(x[lane] - m)          # summed: kept in an array, then added as a tree
    s = rsum(e)                             # 128 running sums then a tree, as the tile form

A segment is a run of tile ops; it ends before an op that reads a reduction of its own, before
control flow, and before a scalar op with side effects (memory order is kept). A tile value
used outside its segment (or carried by a loop, or yielded by an ``if``) is kept in an array;
every other tile value is one lane's scalar. Single-element tiles (a row index of a
``(1, B)`` tile) are scalars computed once, outside the lane loops, and a reduction over an
axis of size 1 is the identity. Numba compiles such loops several times faster than array
expressions (an array expression costs ~1 s of LLVM time) and runs them without temporaries:
a reduction's rows run at NumPy's speed rather than ~10x slower (BENCHMARKS.md, "burn Cpu
reductions vs NumPy"). Masked lanes neither load nor store, exactly as the tile form.

Example:
    >>> loop_width(fn)  # 1024 for a (1, 1024) softmax tile; None for a matmul  # doctest: +SKIP
"""

from __future__ import annotations

import math
from itertools import count

from ...ir import Block, Function, Op, Operation, Value, walk
from ...ir.ops import CONTROL, NOT_PURE
from ...ir.rules import reduce_dtype
from .codegen import BINARY_PY, NUMPY_UNARY, CpuEmitter
from .registers import reg

ELEMENTWISE = frozenset({
    Op.CONST, Op.CUBE_POS, Op.CUBE_COUNT, Op.ARANGE, Op.FULL, Op.BROADCAST, Op.MAXIMUM,
    Op.MINIMUM, Op.NEG, Op.NOT, Op.RSQRT, Op.SIGMOID, Op.ERF, Op.FMA, Op.WHERE, Op.CAST,
    Op.PTR_ADD, Op.LOAD, Op.STORE, *BINARY_PY, *NUMPY_UNARY,
})
REDUCTIONS = frozenset({Op.REDUCE, Op.ARGREDUCE})
# among (B,), (1, B), (B, 1), ... a reshape keeps every lane where it was
LAYOUT = frozenset({Op.EXPAND_DIMS, Op.RESHAPE, Op.PERMUTE})
LANE_OPS = ELEMENTWISE | REDUCTIONS | LAYOUT | {Op.SCAN}
SCALAR_ONLY = frozenset({Op.ATOMIC, Op.ATOMIC_CAS, Op.PRINT})


def _is_tile_op(op: Operation) -> bool:
    return any(not v.type.is_scalar for v in (*op.results, *op.operands))


def _block_args(fn: Function) -> list[Value]:
    return [a for op in walk(fn.body) for region in op.regions for a in region.args]


def loop_width(fn: Function) -> int | None:
    """The lane count ``B`` when ``fn`` can run as lane loops, else None."""
    shapes: set[tuple[int, ...]] = set()
    for op in walk(fn.body):
        tile = _is_tile_op(op)
        if op.op in CONTROL or op.op is Op.YIELD or op.op in SCALAR_ONLY and not tile:
            pass
        elif op.op not in LANE_OPS:
            return None
        if tile and op.op not in CONTROL and op.op is not Op.YIELD:
            shapes.update(v.type.shape for v in (*op.results, *op.operands)
                          if not v.type.is_scalar)
    shapes.update(a.type.shape for a in _block_args(fn) if not a.type.is_scalar)
    sizes = {math.prod(s) for s in shapes}
    width = max(sizes, default=0)
    # every tile is B lanes along one axis or a single element ((2, B/2) is neither)
    if not shapes or sizes - {1, width} or any(math.prod(s) > 1 and width not in s
                                               for s in shapes):
        return None
    return width


class LoopEmitter(CpuEmitter):
    """``CpuEmitter`` for a kernel that ``loop_width`` accepts (see the module docstring)."""

    def __init__(self, fn: Function, width: int):
        ops = list(walk(fn.body))
        self.lanes = {v.id for op in ops for v in op.results if v.type.numel > 1}
        self.lanes |= {a.id for a in _block_args(fn) if a.type.numel > 1}
        self.tile_ops = {id(op) for op in ops if op.op not in CONTROL and op.op is not Op.YIELD
                         and any(v.id in self.lanes for v in (*op.results, *op.operands))}
        # reductions across the lanes (not over a size-1 axis, which keeps every lane)
        self.across = {id(op) for op in ops if op.op in REDUCTIONS and op.operands[0].id in
                       self.lanes and op.results[0].id not in self.lanes}
        self.across |= {id(op) for op in ops if op.op is Op.SCAN and
                        op.operands[0].type.shape[op.attrs["axis"]] > 1}
        # float sums add their lanes as the tile form's rsum does (accuracy unoptimized)
        self.tree_sums = {id(op) for op in ops if id(op) in self.across and op.op is Op.REDUCE
                          and op.attrs["kind"] == "sum" and op.results[0].type.dtype.is_float}
        summed = {op.operands[0].id for op in ops if id(op) in self.tree_sums}
        tile_args = {a.id for a in _block_args(fn) if a.id in self.lanes}
        # where each pointer tile's lanes lie (the axis of size `width`), for `index`
        self.lane_axis = {v.id: v.type.shape.index(width) for op in ops for v in op.results
                          if v.type.is_ptr and v.id in self.lanes}
        super().__init__(fn)  # the affine forms of the tiles as they are
        for op in ops:  # from here on, every tile is typed as one lane's scalar
            for v in op.results:
                v.type = v.type.scalar()
            for region in op.regions:
                for a in region.args:
                    a.type = a.type.scalar()
        self.width = width
        self.lane = self.fresh("lane")
        self.in_segment = False
        self.plans: dict[int, list[tuple[str, object]]] = {}
        self.segment_of: dict[int, int] = {}
        self._segments = count()
        self._plan(fn.body)
        self.arrays = tile_args | summed | self._crossing(fn, self.lanes)

    # ---- planning ----

    def _plan(self, block: Block) -> None:
        items: list[tuple[str, object]] = []
        current: list[Operation] = []
        pending: set[int] = set()  # reductions of the current segment, known after its loop

        def flush() -> None:
            if current:
                items.append(("segment", list(current)))
                current.clear()
            pending.clear()

        for op in block.ops:
            if op.op is Op.YIELD:
                continue
            if any(v.id in pending for v in op.operands):
                flush()
            if op.op in CONTROL:
                flush()
                items.append(("op", op))
                for region in op.regions:
                    self._plan(region)
            elif id(op) in self.tile_ops:
                if not current:
                    number = next(self._segments)
                self.segment_of[id(op)] = number
                current.append(op)
                if id(op) in self.across and op.op is not Op.SCAN:
                    pending.update(r.id for r in op.results)
            else:
                if op.op in NOT_PURE:
                    flush()  # keep its order with the segment's loads and stores
                items.append(("op", op))
        flush()
        self.plans[id(block)] = items

    def _crossing(self, fn: Function, tiles: set[int]) -> set[int]:
        """Tile values used outside the segment that defines them."""
        defined_in = {v.id: self.segment_of.get(id(op)) for op in walk(fn.body)
                      for v in op.results if v.id in tiles}
        crossing = set()
        for op in walk(fn.body):
            user = self.segment_of.get(id(op))
            for v in op.operands:
                if v.id in defined_in and (user is None or user != defined_in[v.id]):
                    crossing.add(v.id)
        return crossing

    # ---- emission ----

    uniform_terms = True  # one-element tiles are scalar variables here

    def needs_erf_ufunc(self) -> bool:
        return False  # lanes call the scalar erf

    def index(self, ptr: Value) -> str:
        # An affine pointer tile is addressed in int64 from its form: consecutive lanes read
        # consecutive elements, which LLVM vectorizes (the int32 offsets the IR computes, each
        # wrapped, it could only gather). Row-wise loads of the tile form do the same.
        form = self.affine.forms.get(ptr.id)
        if form is None:
            return self.n(ptr)
        base = f"np.int64({form.base[0]})"
        if ptr.id not in self.lane_axis:
            return base
        stride = form.strides[self.lane_axis[ptr.id]]
        stride_text = stride if isinstance(stride, int) else f"np.int64({stride[0]})"
        return f"{base} + {self.lane}_raw * {stride_text}"

    def n(self, v: Value) -> str:
        name = super().n(v)
        return f"{name}[{self.lane}_raw]" if self.in_segment and v.id in self.arrays else name

    ref = n

    def block(self, block: Block) -> None:  # type: ignore[override]
        for kind, item in self.plans[id(block)]:
            if kind == "segment":
                self._segment(item, block is self.fn.body)  # type: ignore[arg-type]
            else:
                self.emit(item)  # type: ignore[arg-type]

    def _segment(self, ops: list[Operation], top: bool) -> None:
        for op in ops:
            for v in op.results:
                if v.id in self.arrays:  # pointers are int64 element offsets
                    dtype = "np.int64" if v.type.is_ptr else reg(v.type.dtype)
                    allocation = f"{self.name(v)} = np.empty({self.width}, {dtype})"
                    if top:  # written once per cube before any read: one buffer serves all
                        self.before_cubes.append(self.indent_unit + allocation)
                    else:
                        self.line(allocation)
            if id(op) in self.across and id(op) not in self.tree_sums:
                self._accumulator_init(op)
        looped = [op for op in ops if id(op) not in self.tree_sums]
        self.last_line = None
        if looped:
            self.line(f"for {self.lane}_raw in range({self.width}):")
            self.depth += 1
            self.in_segment = True
            self.line(f"{self.lane} = np.int32({self.lane}_raw)")
            for op in looped:
                self.source_comment(op)
                self.render(op)
            self.in_segment = False
            self.depth -= 1
        for op in ops:
            if id(op) in self.tree_sums:
                self.source_comment(op)
                dtype = reg(op.result.type.dtype)
                self.line(f"{self.n(op.result)} = {dtype}(rsum({self.n(op.operands[0])}"
                          f".reshape((1, {self.width})), {dtype})[0])")
        self.last_line = None

    def _accumulator_init(self, op: Operation) -> None:
        (x,) = op.operands
        if op.op is Op.SCAN:
            acc_dtype = reduce_dtype(x.type.dtype)
            self.line(f"{self.name(op.result)}_run = {reg(acc_dtype)}(0)")
        elif op.op is Op.ARGREDUCE:
            self.line(f"{self.name(op.result)}_best = {reg(x.type.dtype)}(0)")
            self.line(f"{self.name(op.result)} = np.int32(0)")
        elif op.attrs["kind"] in ("max", "min") and x.type.dtype.is_float:
            # the identity, so lanes need no "first lane?" test (which blocks vectorizing)
            start = "-np.inf" if op.attrs["kind"] == "max" else "np.inf"
            self.line(f"{self.name(op.result)} = {reg(op.result.type.dtype)}({start})")
        else:
            self.line(f"{self.name(op.result)} = {reg(op.result.type.dtype)}(0)")

    def render(self, op: Operation) -> None:
        kind = op.op
        if kind not in NOT_PURE and op.results and not any(r.id in self.needed
                                                            for r in op.results):
            return  # a pointer tile that loads and stores address by its affine form
        if kind is Op.ARANGE:
            lane = self.lane if op.result.id in self.lanes else "0"
            self.line(f"{self.n(op.result)} = np.int32({lane} + {op.attrs['start']})")
        elif kind in (Op.FULL, Op.BROADCAST):
            # pointers are int64 element offsets, not values of their dtype
            dtype = "np.int64" if op.result.type.is_ptr else reg(op.result.type.dtype)
            self.line(f"{self.n(op.result)} = {dtype}({self.n(op.operands[0])})")
        elif kind in LAYOUT:
            self.set(op, self.n(op.operands[0]))
        elif kind is Op.ERF:
            self.set(op, f"erf_scalar({self.n(op.operands[0])})")
        elif kind in REDUCTIONS or kind is Op.SCAN:
            if id(op) in self.across:
                self._lane_reduction(op)
            else:  # over one element: the element (argmax/argmin: its index, 0)
                self.set(op, "0" if kind is Op.ARGREDUCE else self.n(op.operands[0]))
        else:
            super().render(op)

    def _lane_reduction(self, op: Operation) -> None:
        (x,) = op.operands
        value, acc, first = self.n(x), self.name(op.result), f"{self.lane}_raw == 0"
        kind = op.attrs["kind"]
        if op.op is Op.SCAN:
            self.line(f"{acc}_run = {reg(reduce_dtype(x.type.dtype))}({acc}_run + {value})")
            self.line(f"{self.n(op.result)} = {reg(op.result.type.dtype)}({acc}_run)")
        elif kind == "sum":
            self.line(f"{acc} = {reg(op.result.type.dtype)}({acc} + {value})")
        elif kind in ("max", "min"):
            better = ">" if kind == "max" else "<"
            # NaN wins, as NumPy's max/min and the tile form's helpers; floats start from the
            # identity (-inf for max), integers from the first lane
            head = "" if x.type.dtype.is_float else f"{first} or "
            self.line(f"if {head}{value} {better} {acc} or {value} != {value}: {acc} = {value}")
        else:  # argmax / argmin: the first best lane, or the first NaN (as NumPy's)
            better = ">" if kind == "argmax" else "<"
            test = f"{value} {better} {acc}_best"
            if x.type.dtype.is_float:  # a NaN, unless the best is one already
                test += f" or ({value} != {value} and {acc}_best == {acc}_best)"
            self.line(f"if {first} or {test}:")
            self.line(f"    {acc}_best = {value}")
            self.line(f"    {acc} = {self.lane}")
