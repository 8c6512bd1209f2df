"""Kernels on 1-D tiles as scalar loops over lanes (the ``cpu`` target's fast path).

A kernel whose tiles all have one 1-D shape ``(B,)`` and whose tile ops are elementwise,
reductions to a scalar, or ``cumsum`` (no ``dot``, layout changes or tile atomics) is emitted
as runs of lane loops instead of NumPy operations on whole tiles::

    m = 0                                   # a segment: tile ops up to a reduction
    for lane in range(B):
        x[lane] = load(...)                 # x is used by a later segment: kept in an array
        if lane == 0 or x[lane] > m: m = x[lane]
    s = 0
    for lane in range(B):                   # the next segment
        e = exp(x[lane] - m)                # used only here: a scalar
        ...

A segment is a run of tile ops; it ends after a reduction (its result exists only once every
lane is seen), before control flow, and before a scalar op with side effects (memory order is
kept). A tile value used outside its segment (or carried by a loop, or yielded by an ``if``) is
kept in an array; every other tile value is one lane's scalar. Numba compiles such loops
several times faster than array expressions (an array expression costs ~1 s of LLVM time) and
runs them without temporaries. Masked lanes neither load nor store, exactly as the tile form.

Example:
    >>> loop_width(fn)  # 1024 for softmax with BLOCK=1024; None for a matmul  # doctest: +SKIP
"""

from __future__ import annotations

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
LANE_OPS = ELEMENTWISE | REDUCTIONS | {Op.SCAN}
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
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    return shape[0] if len(shape) == 1 else None


class LoopEmitter(CpuEmitter):
    """``CpuEmitter`` for a kernel that ``loop_width`` accepts (see the module docstring)."""

    def __init__(self, fn: Function, width: int):
        self.tile_ops = {id(op) for op in walk(fn.body)
                         if _is_tile_op(op) and op.op not in CONTROL and op.op is not Op.YIELD}
        tiles = {v.id for op in walk(fn.body) for v in op.results if not v.type.is_scalar}
        tile_args = {a.id for a in _block_args(fn) if not a.type.is_scalar}
        for op in walk(fn.body):  # from here on, every tile is typed as one lane's scalar
            for v in op.results:
                v.type = v.type.scalar()
            for region in op.regions:
                for a in region.args:
                    a.type = a.type.scalar()
        super().__init__(fn)
        self.width = width
        self.lane = self.fresh("lane")
        self.in_segment = False
        self.plans: dict[int, list[tuple[str, object]]] = {}
        self.segment_of: dict[int, int] = {}
        self._segments = count()
        self._plan(fn.body)
        self.arrays = tile_args | self._crossing(fn, tiles)

    # ---- planning ----

    def _plan(self, block: Block) -> None:
        items: list[tuple[str, object]] = []
        current: list[Operation] = []

        def flush() -> None:
            if current:
                items.append(("segment", list(current)))
                current.clear()

        for op in block.ops:
            if op.op is Op.YIELD:
                continue
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
                if op.op in REDUCTIONS:
                    flush()
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

    def needs_erf_ufunc(self) -> bool:
        return False  # lanes call the scalar erf

    def n(self, v: Value) -> str:
        name = super().n(v)
        return f"{name}[{self.lane}_raw]" if self.in_segment and v.id in self.arrays else name

    ref = n

    def block(self, block: Block) -> None:  # type: ignore[override]
        for kind, item in self.plans[id(block)]:
            if kind == "segment":
                self._segment(item)  # type: ignore[arg-type]
            else:
                self.emit(item)  # type: ignore[arg-type]

    def _segment(self, ops: list[Operation]) -> None:
        for op in ops:
            for v in op.results:
                if v.id in self.arrays:  # pointers are int64 element offsets
                    dtype = "np.int64" if v.type.is_ptr else reg(v.type.dtype)
                    self.line(f"{self.name(v)} = np.empty({self.width}, {dtype})")
            if op.op in REDUCTIONS or op.op is Op.SCAN:
                self._accumulator_init(op)
        self.last_line = None
        self.line(f"for {self.lane}_raw in range({self.width}):")
        self.depth += 1
        self.in_segment = True
        self.line(f"{self.lane} = np.int32({self.lane}_raw)")
        for op in ops:
            self.source_comment(op)
            self.render(op)
        self.in_segment = False
        self.depth -= 1
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
        if kind is Op.ARANGE:
            self.line(f"{self.n(op.result)} = np.int32({self.lane} + {op.attrs['start']})")
        elif kind in (Op.FULL, Op.BROADCAST):
            self.line(f"{self.n(op.result)} = {reg(op.result.type.dtype)}"
                      f"({self.n(op.operands[0])})")
        elif kind is Op.ERF:
            self.set(op, f"erf_scalar({self.n(op.operands[0])})")
        elif kind in REDUCTIONS or kind is Op.SCAN:
            self._lane_reduction(op)
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
