"""``dot`` on the cpu target: one BLAS call per tile pair, and K loops that accumulate in place.

A loop whose carried tile only accumulates ``dot`` products (a matmul's K loop) updates it in
place, through one product buffer made before the loop: a fresh tile per step costs more than
the product itself (measured 2x on 1024³ with 256-tiles), as tiles that large come from mmap
and are page-faulted in anew each time.
"""

from __future__ import annotations

from ...ir import Block, Function, Op, Operation, Value, walk
from .registers import reg


def use_counts(fn: Function) -> dict[int, int]:
    """How many operands, anywhere in ``fn``, read each value."""
    counts: dict[int, int] = {}
    for op in walk(fn.body):
        for v in op.operands:
            counts[v.id] = counts.get(v.id, 0) + 1
    return counts


class DotAccumulation:
    """The CPU emitter's ``dot`` and its K-loop handling (a mixin of ``CpuEmitter``, whose
    ``n``, ``line``, ``fresh``, ``alias`` and ``reg``-typed names it uses)."""

    def init_dot_accumulation(self, fn: Function) -> None:
        self.uses = use_counts(fn)
        self.dot_scratch: dict[int, str] = {}  # dot result id -> its product's buffer

    def emit_for(self, op: Operation) -> None:
        """Before a K loop that accumulates in place (module docstring): its product buffers."""
        (body,) = op.regions
        for slot, carried in enumerate(body.args[1:]):
            dot = self._accumulating_dot(body, slot, carried)
            if dot is not None:
                scratch = self.fresh("product")
                self.dot_scratch[dot.result.id] = scratch
                shape, dtype = dot.result.type.shape, reg(dot.result.type.dtype)
                self.line(f"{scratch} = np.empty({shape}, {dtype})")
        super().emit_for(op)

    def carried_init(self, op: Operation, slot: int, init: Value) -> str:
        # a tile summed into in place starts as its own copy: its initial value may be
        # another tile, or a view of one, that must not change
        (body,) = op.regions
        if self._accumulating_dot(body, slot, body.args[1 + slot]) is not None:
            return f"np.copy({self.ref(init)})"
        return self.ref(init)

    def _accumulating_dot(self, body: Block, slot: int, carried: Value) -> Operation | None:
        """The float ``dot`` that is the only reader of loop slot ``slot`` and whose result
        is what the body yields to it, if there is one."""
        term = body.terminator
        if term is None or self.uses.get(carried.id) != 1:
            return None
        for op in body.ops:
            if op.op is Op.DOT and op.operands[2] is carried and term.operands[slot] is op.result:
                a, b, acc = op.operands
                same = reg(a.type.dtype) == reg(b.type.dtype) == reg(acc.type.dtype)
                return op if a.type.dtype.is_float and same else None
        return None

    def dot(self, op: Operation) -> None:
        a, b, acc = op.operands
        scratch = self.dot_scratch.get(op.result.id)
        if scratch is not None:  # see emit_for
            self.line(f"np.dot({self.n(a)}, {self.n(b)}, {scratch})")
            self.line(f"{self.n(acc)} += {scratch}")
            self.alias(op.result, self.n(acc))
            return
        res = self.n(op.result)
        if a.type.dtype.is_float:
            product = f"np.dot({self.n(a)}, {self.n(b)})"
            if reg(acc.type.dtype) != reg(a.type.dtype):
                product += f".astype({reg(acc.type.dtype)})"
            self.line(f"{res} = {self.n(acc)} + {product}")
        else:
            wide = "np.int64"
            self.line(f"{res} = dot_int({self.n(a)}.astype({wide}), {self.n(b)}.astype({wide}), "
                      f"{self.n(acc)}.astype({wide})).astype({reg(acc.type.dtype)})")

