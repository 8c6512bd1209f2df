"""Tensor-descriptor block copies as TMA copies (NVIDIA sm_90+), and when they may run.

A ``BLOCK_LOAD`` (``desc.load`` in a kernel) becomes ``tl.make_tensor_descriptor(...).load``,
and a ``BLOCK_STORE`` (``desc.store`` of a tile) ``.store``, in the kernel's TMA variant when
its base is an array argument and its row stride an argument or a constant, so that the
launch can check what TMA needs before choosing that variant (the base address and the row
stride in bytes both multiples of 16, the views' shapes not negative), and when its corner can
be shown never to be negative. A block store also needs an array that nothing else in the
kernel reads or writes. Descriptors whose view shape and stride are arguments or constants
are made once, at the top of the kernel; the others where they are used. Anything else, and
every launch whose arrays fail the check, runs the pointer variant, where each block copy is
its masked pointer-tile fallback.

Example:
    >>> blocks = tma_blocks(fn)         # doctest: +SKIP
    >>> guard = TmaGuard(fn, blocks)    # doctest: +SKIP
    >>> guard.allows(args)              # doctest: +SKIP
    True
"""

from __future__ import annotations

import math
from typing import Any

from ...ir import Function, Op, Operation, Value, walk

MAX_BOX = 256  # elements per block dimension a TMA copy moves
MIN_ROW_BYTES = 16  # a block row narrower than this is refused by TMA
ALIGN = 16  # bytes: the base address and the row stride


BLOCK_OPS = (Op.BLOCK_LOAD, Op.BLOCK_STORE)
#: ops whose pointer operand (the first) reads or writes an array other than by block stores
_OTHER_ACCESS = (Op.LOAD, Op.STORE, Op.ATOMIC, Op.ATOMIC_CAS, Op.BLOCK_LOAD)


def view(op: Operation) -> tuple[Value, Value, Value, Value, Value, Value]:
    """``(base, rows, cols, row_stride, row0, col0)`` of a block load or store."""
    first = 1 if op.op is Op.BLOCK_LOAD else 3
    base, rows, cols, stride, row0, col0 = op.operands[first:first + 6]
    return base, rows, cols, stride, row0, col0


def tma_blocks(fn: Function) -> list[Operation]:
    """The kernel's block loads and stores that its TMA variant runs as TMA copies: those
    whose corner is provably never negative (a TMA copy at a negative corner traps on the
    H200: bench/results/h200-tma-edge-probe.log), given that the views' shapes are not
    negative (the launch checks that). A block store also needs its array to be touched by
    block stores only: a TMA store finishes asynchronously, so a read of the array later in
    the kernel, or a pointer store to it, could be ordered before it."""
    args = {a.id for a in fn.args}
    other_access = {op.operands[0].type.ptr_base for op in walk(fn.body)
                    if op.op in _OTHER_ACCESS}
    candidates = []
    for op in walk(fn.body):
        if op.op not in BLOCK_OPS:
            continue
        base, _, _, stride, _, _ = view(op)
        dtype = base.type.dtype
        rows, cols = op.attrs["block"]
        if (base.id in args and (stride.id in args or _constant(stride) is not None)
                and dtype.name != "bool" and dtype.itemsize <= 4
                and rows <= MAX_BOX and cols <= MAX_BOX and cols * dtype.itemsize >= MIN_ROW_BYTES
                and (op.op is Op.BLOCK_LOAD or base.type.ptr_base not in other_access)):
            candidates.append(op)
    shapes = {v.id for op in candidates for v in view(op)[1:3] if v.id in args}
    bounds = lower_bounds(fn, shapes)
    return [op for op in candidates
            if all(bounds.get(v.id, -math.inf) >= 0 for v in view(op)[4:6])]


def lower_bounds(fn: Function, nonnegative_args: set[int]) -> dict[int, float]:
    """A lower bound of each integer scalar the kernel computes (-inf where unknown): a small
    interval analysis over constants, cube positions and counts, loop indices and the integer
    operations that keep a bound. ``nonnegative_args`` are arguments taken to be >= 0."""
    low: dict[int, float] = {a.id: 0 if a.id in nonnegative_args else -math.inf
                             for a in fn.args}

    def get(value: Value) -> float:
        return low.get(value.id, -math.inf)

    for op in walk(fn.body):
        if op.op is Op.FOR:
            start, _, step = op.operands[:3]
            if get(step) >= 1:
                low[op.regions[0].args[0].id] = get(start)
        if len(op.results) != 1 or op.result.type.shape or not op.result.type.dtype.is_int:
            continue
        low[op.result.id] = _bound(op, [get(v) for v in op.operands])
    return low


def _bound(op: Operation, operands: list[float]) -> float:
    kind = op.op
    if kind is Op.CONST:
        return op.attrs["value"]
    if kind is Op.CUBE_POS:
        return 0
    if kind is Op.CUBE_COUNT:
        return 1
    if kind is Op.CAST or kind is Op.HINT:
        return operands[0]
    if kind is Op.ADD:
        return operands[0] + operands[1]
    if kind is Op.SUB:  # a - b: only a constant b keeps a bound
        b = _constant(op.operands[1])
        return operands[0] - b if b is not None else -math.inf
    if kind is Op.MUL and min(operands) >= 0:
        return operands[0] * operands[1]
    if kind in (Op.FLOORDIV, Op.MOD) and min(operands) >= 0:
        return 0  # Python's floor semantics: never negative for non-negative operands
    if kind is Op.MINIMUM:
        return min(operands)
    if kind is Op.MAXIMUM:
        return max(operands)
    return -math.inf


def _constant(value: Value) -> Any:
    owner = value.owner
    return owner.attrs["value"] if owner is not None and owner.op is Op.CONST else None


def hoistable(op: Operation, args: set[int]) -> bool:
    """Whether the descriptor of ``op`` can be made at the kernel's top."""
    _, rows, cols, stride, _, _ = view(op)
    return all(v.id in args or _constant(v) is not None for v in (rows, cols, stride))


def descriptor_key(op: Operation) -> tuple:
    """Block copies with equal keys share one descriptor."""
    base, rows, cols, stride, _, _ = view(op)
    return (base.id, rows.id, cols.id, stride.id, tuple(op.attrs["block"]))


def make_descriptor(op: Operation, name_of: Any) -> str:
    """The ``tl.make_tensor_descriptor`` call for ``op``; ``name_of`` renders an operand."""
    base, rows, cols, stride, _, _ = view(op)
    block_rows, block_cols = op.attrs["block"]
    return (f"tl.make_tensor_descriptor({name_of(base)}, shape=[{name_of(rows)}, "
            f"{name_of(cols)}], strides=[{name_of(stride)}, 1], "
            f"block_shape=[{block_rows}, {block_cols}])")


class BlockCopyEmitter:
    """The Triton emitter's part for block copies: descriptors, and each ``BLOCK_LOAD`` or
    ``BLOCK_STORE`` as a TMA copy (``self.tma``) or as its pointer-tile fallback. Mixed into
    ``codegen.TritonEmitter``, whose naming and line methods it uses."""

    fn: Function
    tma: set[int]
    descriptors: dict[tuple, str]

    def hoist_descriptors(self) -> None:
        """Descriptors made once, before the body (see the module docstring)."""
        args = {a.id for a in self.fn.args}
        for op in walk(self.fn.body):
            key = descriptor_key(op) if id(op) in self.tma else None
            if key is not None and key not in self.descriptors and hoistable(op, args):
                name = self.descriptors[key] = self.fresh("desc")
                self.line(f"{name} = {make_descriptor(op, self.operand_text)}")

    def operand_text(self, value: Value) -> str:
        owner = value.owner
        return str(int(owner.attrs["value"])) if owner is not None and \
            owner.op is Op.CONST else self.n(value)

    def block_load(self, op: Operation) -> None:
        if id(op) not in self.tma:  # the pointer variant: the masked load beside it
            self.alias(op.result, self.n(op.operands[0]))
            return
        *_, row0, col0 = view(op)
        self.assign(op, f"{self.descriptor(op)}.load([{self.n(row0)}, {self.n(col0)}])")

    def block_store(self, op: Operation) -> None:
        ptr, value, mask = op.operands[:3]
        if id(op) not in self.tma:  # the pointer variant: the masked store it carries
            self.store_tile(ptr, value, mask)
            return
        *_, row0, col0 = view(op)  # the value has the array's dtype (the frontend cast it)
        self.line(f"{self.descriptor(op)}.store([{self.n(row0)}, {self.n(col0)}], "
                  f"{self.n(value)})")

    def descriptor(self, op: Operation) -> str:
        """The name of ``op``'s descriptor: hoisted to the top, or made here."""
        desc = self.descriptors.get(descriptor_key(op))
        if desc is None:
            desc = self.fresh("desc")
            self.line(f"{desc} = {make_descriptor(op, self.operand_text)}")
        return desc


class TmaGuard:
    """Checks, per launch, that every TMA block copy's base and row stride are aligned."""

    def __init__(self, fn: Function, blocks: list[Operation]):
        position = {a.id: i for i, a in enumerate(fn.args)}
        # tma_blocks took the views' shapes to be >= 0: a launch that breaks that runs pointers
        self.shapes = sorted({position[v.id] for op in blocks for v in view(op)[1:3]
                              if v.id in position})
        checks = set()
        for op in blocks:
            base, _, _, stride, _, _ = view(op)
            stride_source = ("arg", position[stride.id]) if stride.id in position else (
                "const", int(_constant(stride)))
            checks.add((position[base.id], stride_source, base.type.dtype.itemsize))
        self.checks = sorted(checks)

    def allows(self, args: list[Any]) -> bool:
        if not ensure_allocator() or any(int(args[i]) < 0 for i in self.shapes):
            return False
        for base_index, (kind, stride), itemsize in self.checks:
            row_bytes = (int(args[stride]) if kind == "arg" else stride) * itemsize
            if row_bytes % ALIGN or device_address(args[base_index]) % ALIGN:
                return False
        return True


def device_address(array: Any) -> int:
    """The device address of a torch tensor, a CuPy array or any CUDA array interface."""
    pointer = getattr(array, "data_ptr", None)
    if callable(pointer):
        return int(pointer())
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is not None:
        return int(interface["data"][0])
    return 1  # not a device array: never aligned, so the pointer variant explains the error


_allocator: Any = None  # (triton.set_allocator, our allocator) once looked up; False: no torch


def ensure_allocator() -> bool:
    """Device-side descriptors need global scratch memory from an allocator given to Triton;
    ours takes it from torch. Triton keeps the allocator in a context variable, which threads
    do not share (the autotuner launches from worker threads), so it is set on every call.
    False when torch is missing (the pointer variant runs)."""
    global _allocator
    if _allocator is None:  # looked up once: a failing import on every launch would be slow
        try:
            import torch
        except ImportError:
            _allocator = False
        else:
            import triton

            def allocate(size: int, alignment: int, stream: Any) -> Any:
                return torch.empty(size, dtype=torch.int8, device="cuda")

            _allocator = (triton.set_allocator, allocate)
    if not _allocator:
        return False
    set_allocator, allocate = _allocator
    set_allocator(allocate)
    return True
