"""Kernels on tiles of one lane axis as scalar loops over lanes (the ``cpu`` target's fast
path).

A kernel whose tiles all hold either ``B`` lanes along one axis (``(B,)``, ``(1, B)``,
``(B, 1)``) or a single element, and whose tile ops are elementwise, layout changes among
those shapes, reductions or ``cumsum`` (no ``dot``, no tile atomics), is emitted as runs of
lane loops instead of NumPy operations on whole tiles::

    for lane_from in range(0, B, 16):       # a segment: tile ops up to a reduction's use
        for lane_in in range(16):           # (a max, min or arg- one: in chunks of 16 lanes)
            lane = lane_from + lane_in
            x[lane] = load(...)             # x is used by a later segment: kept in an array
            m_chunk[lane_in] = x[lane] if first chunk or x[lane] > m_chunk[lane_in] or NaN ...
    m = best of m_chunk
    for lane in range(B):                   # the next segment
        e[lane] = exp(x[lane] - m)          # summed: kept in an array, then added as a tree
    part[k] = e[k] (+ e[128 + k] ...); part[k] += part[k + 64]; ...; s = part[0]

A segment is a run of tile ops; it ends before an op that reads a reduction of its own, before
control flow, and before a scalar op with side effects (memory order is kept). A tile value
used outside its segment (or carried by a loop, or yielded by an ``if``) is kept in an array;
every other tile value is one lane's scalar. Single-element tiles (a row index of a
``(1, B)`` tile) are scalars computed once, outside the lane loops, and a reduction over an
axis of size 1 is the identity. Numba compiles such loops several times faster than array
expressions (an array expression costs ~1 s of LLVM time) and runs them without temporaries:
a reduction's rows run at NumPy's speed rather than ~10x slower (BENCHMARKS.md, "burn Cpu
reductions vs NumPy"). Masked lanes neither load nor store, exactly as the tile form.

What keeps a cube's fixed cost low (a row of 64 values is a cube's whole work): every array is
allocated once per call, before the loop over cubes; a loop-carried tile is updated in place
where nothing reads its old value after the new one is computed, else copied lane by lane
(never rebound: a rebound array costs reference counting per step); float sums add their
lanes as the tile form's ``rsum`` does, written out for the width; loads and stores address
in unsigned 64 bits, so that LLVM vectorizes them. float32 ``exp`` and ``exp2`` are
``lane_exp``'s straight-line code, which vectorizes where libm's ``expf`` does not.

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
from .lane_exp import TABLE_LINE, exp_lines
from .registers import reg

ELEMENTWISE = frozenset({
    Op.CONST, Op.CUBE_POS, Op.CUBE_COUNT, Op.ARANGE, Op.FULL, Op.BROADCAST, Op.MAXIMUM,
    Op.MINIMUM, Op.NEG, Op.NOT, Op.RSQRT, Op.SIGMOID, Op.ERF, Op.UMULHI, Op.FMA, Op.WHERE,
    Op.CAST, Op.BITCAST, Op.PTR_ADD, Op.LOAD, Op.STORE, *BINARY_PY, *NUMPY_UNARY,
})
REDUCTIONS = frozenset({Op.REDUCE, Op.ARGREDUCE})
# among (B,), (1, B), (B, 1), ... a reshape keeps every lane where it was
LAYOUT = frozenset({Op.EXPAND_DIMS, Op.RESHAPE, Op.PERMUTE})
LANE_OPS = ELEMENTWISE | REDUCTIONS | LAYOUT | {Op.SCAN}
# (an ASSERT keeps a kernel in the tile form, whose compiled code raises its AssertionError)
SCALAR_ONLY = frozenset({Op.ATOMIC, Op.ATOMIC_CAS, Op.PRINT, Op.ASSUME, Op.BARRIER})
# lanes per chunk of a max/min/argmax/argmin loop (see LoopEmitter.chunked): an AVX-512
# register of float32
CHUNK = 16


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
        elif op.op not in LANE_OPS or op.attrs.get("rounding"):  # lanes: fast-math
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
        # max, min, argmax and argmin keep CHUNK partial results, one per lane of a chunk:
        # a float compare-and-select reduction does not vectorize (LLVM needs no-NaNs for
        # that), an elementwise one over a chunk's lanes does
        self.chunked = {id(op) for op in ops if id(op) in self.across and (
            op.op is Op.ARGREDUCE or op.op is Op.REDUCE and op.attrs["kind"] in ("max", "min"))}
        # tiles that loops carry and `if`s yield: each has a buffer, assigned lane by lane
        tile_args = {a.id for a in _block_args(fn) if a.id in self.lanes}
        tile_args |= {r.id for op in ops if op.op in CONTROL for r in op.results
                      if r.id in self.lanes}
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
        self.chunk = min(width, CHUNK)
        self.lane = self.fresh("lane")
        self.buffers: set[str] = set()  # carried tiles' names
        self.uses_lane_exp = False  # then the module defines lane_exp's table
        self.scratch: dict[str, str] = {}  # a tree sum's partial sums, per dtype
        self.in_segment = False
        self.plans: dict[int, list[tuple[str, object]]] = {}
        self.segment_of: dict[int, int] = {}
        self._segments = count()
        self._plan(fn.body)
        self.arrays = tile_args | summed | self._crossing(fn, self.lanes)
        self.allocated: set[str] = set()
        self._share_carried_buffers(fn)

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

    def _share_carried_buffers(self, fn: Function) -> None:
        """Names each tile a loop carries shares, where that is safe, with its initial value
        (when the loop is that value's only reader) and with the value the body yields for it
        (when nothing in the body reads the carried tile after the lane op that computes the
        new one: that op reads each lane before writing it, as every lane op does), so that
        neither is copied."""
        ops = list(walk(fn.body))
        uses: dict[int, int] = {}
        for op in ops:
            for v in op.operands:
                uses[v.id] = uses.get(v.id, 0) + 1
        for block in [fn.body, *(region for op in ops for region in op.regions)]:
            lane_ops = {r.id for op in block.ops if id(op) in self.segment_of
                        for r in op.results}
            for loop in block.ops:
                if loop.op is not Op.FOR:
                    continue
                (body,) = loop.regions
                inits, yielded = loop.operands[3:], body.terminator.operands
                for arg, init, new, result in zip(body.args[1:], inits, yielded, loop.results):
                    if arg.id not in self.arrays or arg.type.is_ptr:
                        continue
                    shared = self.name(result)
                    self.alias(arg, shared)
                    if init.id in lane_ops and uses[init.id] == 1:
                        self.alias(init, shared)
                    if yielded.count(new) == 1 and self._last_read_before(arg, new, body):
                        self.alias(new, shared)

    def _last_read_before(self, arg: Value, new: Value, body: Block) -> bool:
        """Whether ``new`` is computed by a lane op of ``body`` after which nothing reads
        ``arg`` (a tree sum of that op's segment reads after the segment's loop)."""
        position = next((i for i, op in enumerate(body.ops) if new in op.results), None)
        if position is None or id(body.ops[position]) not in self.segment_of:
            return False
        segment = self.segment_of[id(body.ops[position])]
        for i, op in enumerate(body.ops):
            nested = [inner for region in op.regions for inner in walk(region)]
            reads = {v.id for inner in (op, *nested) for v in inner.operands}
            late = i > position or (id(op) in self.tree_sums
                                    and self.segment_of.get(id(op)) == segment)
            if late and arg.id in reads:  # the yield too: it may pass `arg` to another slot
                return False
        return True

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

    def module_globals(self, debug: bool) -> list[str]:
        return [*super().module_globals(debug), *([TABLE_LINE] if self.uses_lane_exp else [])]

    def index(self, ptr: Value) -> str:
        # An affine pointer tile is addressed from its form, in 64 bits: consecutive lanes read
        # consecutive elements, which LLVM vectorizes (the int32 offsets the IR computes, each
        # wrapped, it could only gather). Unsigned, because Numba wraps a signed index that is
        # negative around the array's end: that select, per lane, made LLVM gather too.
        # Row-wise loads of the tile form do the same.
        form = self.affine.forms.get(ptr.id)
        if form is None:
            return self.n(ptr)
        base = f"np.int64({form.base[0]})"
        if ptr.id not in self.lane_axis:
            return f"np.uint64({base})"
        stride = form.strides[self.lane_axis[ptr.id]]
        stride_text = stride if isinstance(stride, int) else f"np.int64({stride[0]})"
        return f"np.uint64({base} + {self.lane}_raw * {stride_text})"

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

    def _buffer(self, name: str, dtype: str, size: int | None = None) -> None:
        # Allocated once per call, before its loop over cubes: each cube writes a tile's
        # buffer before reading it, and a carried tile is copied into its own buffer rather
        # than rebound (a rebound array costs an allocation and reference counting per step)
        if name not in self.allocated:
            self.allocated.add(name)
            self.before_cubes.append(f"{self.indent_unit}{name} = np.empty("
                                     f"{size or self.width}, {dtype})")

    @staticmethod
    def _dtype(v: Value) -> str:
        return "np.int64" if v.type.is_ptr else reg(v.type.dtype)  # pointers: element offsets

    def carried_names(self, op: Operation) -> list[str]:
        names = [self.name(r) for r in op.results]  # some shared (_share_carried_buffers)
        for result, name in zip(op.results, names):
            if result.id in self.arrays:
                self._buffer(name, self._dtype(result))
                self.buffers.add(name)
        return names

    def assign_carried(self, targets: list[str], values: list[str]) -> None:
        copies = [(t, v) for t, v in zip(targets, values) if t in self.buffers and t != v]
        if copies:  # at once, lane by lane: a swap of two carried tiles stays a swap
            lane = f"{self.lane}_raw"
            self.line(f"for {lane} in range({self.width}):")
            self.line(f"{self.indent_unit}{', '.join(f'{t}[{lane}]' for t, _ in copies)} = "
                      f"{', '.join(f'{v}[{lane}]' for _, v in copies)}")
        super().assign_carried([t for t in targets if t not in self.buffers],
                       [v for t, v in zip(targets, values) if t not in self.buffers])

    def _segment(self, ops: list[Operation]) -> None:
        for op in ops:
            for v in op.results:
                if v.id in self.arrays:
                    self._buffer(self.name(v), self._dtype(v))
            if id(op) in self.chunked:
                acc, dtype = self.name(op.result), reg(op.operands[0].type.dtype)
                self._buffer(f"{acc}_chunk", dtype, self.chunk)
                if op.op is Op.ARGREDUCE:
                    self._buffer(f"{acc}_chunk_at", "np.int32", self.chunk)
            elif id(op) in self.across and id(op) not in self.tree_sums:
                self._accumulator_init(op)
        looped = [op for op in ops if id(op) not in self.tree_sums]
        self.last_line = None
        if looped:
            lane = f"{self.lane}_raw"
            nested = any(id(op) in self.chunked for op in looped)
            if nested:
                # lanes in chunks: a chunk's lanes are the inner loop that LLVM vectorizes
                self.line(f"for {self.lane}_from in range(0, {self.width}, {self.chunk}):")
                self.line(f"{self.indent_unit}for {self.lane}_in in range({self.chunk}):")
                self.depth += 2
                self.line(f"{lane} = {self.lane}_from + {self.lane}_in")
            else:
                self.line(f"for {lane} in range({self.width}):")
                self.depth += 1
            self.in_segment = True
            self.line(f"{self.lane} = np.int32({lane})")
            for op in looped:
                self.source_comment(op)
                self.render(op)
            self.in_segment = False
            self.depth -= 2 if nested else 1
        for op in ops:
            if id(op) in self.tree_sums:
                self.source_comment(op)
                self._tree_sum(op)
            elif id(op) in self.chunked:
                self._combine_chunk(op)
        self.last_line = None

    def _tree_sum(self, op: Operation) -> None:
        """The lanes' sum as the tile form's ``rsum`` adds a row of ``width`` (a power of two):
        ``min(width, 128)`` running sums, then halves added, written out for this width (a
        call to a helper cost as much as a 64-lane row's loads and adds)."""
        dtype, values = reg(op.result.type.dtype), self.n(op.operands[0])
        part, k = self.scratch.get(dtype), f"{self.lane}_raw"
        if part is None:
            part = self.scratch[dtype] = self.fresh("partial_sums")
            self._buffer(part, dtype, min(self.width, 128))
        parts = min(self.width, 128)
        self.line(f"for {k} in range({parts}):")
        self.line(f"{self.indent_unit}{part}[{k}] = {values}[{k}]")
        if self.width > parts:
            self.line(f"for {self.lane}_from in range({parts}, {self.width}, {parts}):")
            self.line(f"{self.indent_unit}for {k} in range({parts}):")
            self.line(f"{self.indent_unit * 2}{part}[{k}] += {values}[{self.lane}_from + {k}]")
        half = parts // 2
        while half:
            self.line(f"for {k} in range({half}):")
            self.line(f"{self.indent_unit}{part}[{k}] += {part}[{k} + {half}]")
            half //= 2
        self.line(f"{self.n(op.result)} = {dtype}({part}[0])")

    def _accumulator_init(self, op: Operation) -> None:
        (x,) = op.operands
        if op.op is Op.SCAN:
            acc_dtype = reduce_dtype(x.type.dtype)
            start = 1 if op.attrs["kind"] == "cumprod" else 0
            self.line(f"{self.name(op.result)}_run = {reg(acc_dtype)}({start})")
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
        elif (kind in (Op.EXP, Op.EXP2) and op.result.type.dtype.name == "float32"
              and id(op) in self.tile_ops):
            self.uses_lane_exp = True
            tmp = self.fresh("exp")
            for line in exp_lines(self.n(op.result), self.n(op.operands[0]), tmp,
                                  base2=kind is Op.EXP2):
                self.line(line)
        elif kind in REDUCTIONS or kind is Op.SCAN:
            if id(op) in self.across:
                self._lane_reduction(op)
            else:  # over one element: the element (argmax/argmin: its index, 0)
                self.set(op, "0" if kind is Op.ARGREDUCE else self.n(op.operands[0]))
        else:
            super().render(op)

    def _lane_reduction(self, op: Operation) -> None:
        (x,) = op.operands
        value, acc = self.n(x), self.name(op.result)
        if op.op is Op.SCAN:
            sign = "*" if op.attrs["kind"] == "cumprod" else "+"
            self.line(f"{acc}_run = {reg(reduce_dtype(x.type.dtype))}({acc}_run {sign} {value})")
            self.line(f"{self.n(op.result)} = {reg(op.result.type.dtype)}({acc}_run)")
        elif op.attrs["kind"] in ("sum", "xor", "or"):
            sign = {"sum": "+", "xor": "^", "or": "|"}[op.attrs["kind"]]
            self.line(f"{acc} = {reg(op.result.type.dtype)}({acc} {sign} {value})")
        else:
            self._chunk_step(op, value, acc)

    def _chunk_step(self, op: Operation, value: str, acc: str) -> None:
        """One lane into its chunk slot: max/min keep the best value, argmax/argmin also its
        lane (the first best; a NaN beats any number, the first NaN any later one)."""
        slot, at = f"{acc}_chunk[{self.lane}_in]", f"{acc}_chunk_at[{self.lane}_in]"
        better = "<" if op.attrs["kind"] in ("min", "argmin") else ">"
        first = f"{self.lane}_from == 0"  # the first chunk fills the slots
        if op.op is Op.REDUCE:
            nan = f" or {value} != {value}" if op.operands[0].type.dtype.is_float else ""
            self.line(f"{slot} = {value} if {first} or {value} {better} {slot}{nan} else {slot}")
            return
        nan = (f" or ({value} != {value} and {slot} == {slot})"
               if op.operands[0].type.dtype.is_float else "")
        self.line(f"{acc}_better = {first} or {value} {better} {slot}{nan}")
        self.line(f"{at} = {self.lane} if {acc}_better else {at}")
        self.line(f"{slot} = {value} if {acc}_better else {slot}")

    def _combine_chunk(self, op: Operation) -> None:
        """The chunk slots of ``op`` into its result, by the same rules."""
        acc = self.name(op.result)
        slot, at = f"{acc}_chunk[{self.lane}_in]", f"{acc}_chunk_at[{self.lane}_in]"
        better = "<" if op.attrs["kind"] in ("min", "argmin") else ">"
        is_float = op.operands[0].type.dtype.is_float
        if op.op is Op.REDUCE:
            self.line(f"{acc} = {acc}_chunk[0]")
            nan = f" or {slot} != {slot}" if is_float else ""
            self.line(f"for {self.lane}_in in range(1, {self.chunk}):")
            self.line(f"{self.indent_unit}if {slot} {better} {acc}{nan}: {acc} = {slot}")
            return
        best = f"{acc}_best"
        self.line(f"{best}, {acc} = {acc}_chunk[0], {acc}_chunk_at[0]")
        take = f"{slot} {better} {best} or ({slot} == {best} and {at} < {acc})"
        if is_float:
            take += f" or ({slot} != {slot} and ({best} == {best} or {at} < {acc}))"
        self.line(f"for {self.lane}_in in range(1, {self.chunk}):")
        self.line(f"{self.indent_unit}if {take}:")
        self.line(f"{self.indent_unit * 2}{best}, {acc} = {slot}, {at}")
