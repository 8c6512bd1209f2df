"""Values the ``Fusion`` backend has recorded but not computed.

An elementwise op on ``Fusion`` returns a view whose storage is a ``Lazy``: the op, its
operands and the result's shape and dtype. An operand is either another ``Lazy`` of the same
shape (read in order: its value is computed inside the same kernel) or a ``View`` over real
storage, in any layout of that shape (broadcast axes have stride 0): a leaf the kernel loads.
The ``Lazy`` values reachable from one result form a small DAG; ``codegen`` turns it into one
kernel. Once computed, ``real`` holds the storage and the operands are dropped, so whatever
reads it later loads it as a leaf.

Example:
    >>> fusion = burn.Fusion(burn.Cpu())
    >>> y = (burn.ones(4, backend=fusion) * 3).exp()
    >>> type(y.prim.storage).__name__, y.prim.storage.ops
    ('Lazy', 2)
"""

from __future__ import annotations

from typing import Any, NamedTuple, Union

from cubepy.ir.dtypes import DType
from kernels.layout import View

#: ops in one fused kernel. Past it, a result's operands are computed first: the cap bounds
#: a kernel's compile time and the work a value shared by many consumers is done again.
MAX_OPS = 48


class Op(NamedTuple):
    """What one ``Lazy`` computes: ``kind`` is ``unary``, ``binary``, ``where`` or ``clamp``;
    ``name`` the elementwise op (``exp``, ``add``), or for ``clamp`` which bounds it has
    (``lo``, ``hi``, ``lohi``); ``compute`` the dtype it computes in."""

    kind: str
    name: str
    compute: DType


Operand = Union["Lazy", View]


class Lazy:
    """The storage of an elementwise result that is not computed yet (see the module)."""

    __slots__ = ("op", "head", "operands", "scalars", "dtype", "shape", "strides", "real",
                 "ops", "leaves", "__weakref__")

    def __init__(self, op: Op, operands: tuple[Operand, ...], scalars: tuple[Any, ...],
                 dtype: DType, shape: tuple[int, ...], strides: tuple[int, ...]):
        self.op = op
        self.head = (op.kind, op.name, op.compute.name)  # its step in a kernel, but the refs
        self.operands = operands
        self.scalars = scalars  # runtime kernel arguments (clamp's bounds)
        self.dtype = dtype
        self.shape = shape
        self.strides = strides  # contiguous: the layout of every view made by the backend
        self.real: Any = None
        # upper bounds of the ops and of the leaves (shared ones count once per use), which
        # the caps test first: cheap, as they are added up at every recorded op
        self.ops = 1 + sum(o.ops for o in operands if isinstance(o, Lazy))
        self.leaves = leaf_bound(operands)

    def view(self) -> View:
        """The contiguous view of this value, once ``real`` is set."""
        return View(self.real, 0, self.shape, self.strides, self.dtype)

    def __repr__(self) -> str:
        state = "computed" if self.real is not None else f"{self.ops} ops pending"
        return f"Lazy({self.op.kind} {self.op.name}, {self.dtype.name}{list(self.shape)}, {state})"


class Constant:
    """The storage of a Python number's tensor (``Backend.constant``) on ``Fusion``: fused
    kernels take its value as an argument (no load, no buffer); ``real`` is its upload, made
    the first time another op needs it."""

    __slots__ = ("array", "value", "real")

    def __init__(self, array: Any, value: Any):
        self.array = array  # the 0-d host array
        self.value = value  # the kernel argument: a NumPy scalar of the register type
        self.real: Any = None

    def __repr__(self) -> str:
        return f"Constant({self.value!r})"


def leaf_key(view: View) -> tuple[Any, ...]:
    """What makes two leaves one kernel argument: the same storage in the same layout."""
    return (id(view.storage), view.offset, view.strides, view.dtype)


def leaf_bound(operands: tuple[Operand, ...]) -> int:
    """An upper bound of the buffers a value over ``operands`` loads (constants bind none)."""
    return sum(o.leaves if isinstance(o, Lazy) else not isinstance(o.storage, Constant)
               for o in operands)


def distinct_leaves(operands: tuple[Operand, ...]) -> int:
    """The buffers a value over ``operands`` loads, each counted once (the exact count,
    walked only when ``leaf_bound`` is over a cap)."""
    keys: set[tuple[Any, ...]] = set()
    seen: set[int] = set()
    stack = list(operands)
    while stack:
        operand = stack.pop()
        if isinstance(operand, Lazy):
            if operand.real is not None:
                keys.add(leaf_key(operand.view()))
            elif id(operand) not in seen:
                seen.add(id(operand))
                stack.extend(operand.operands)
        elif not isinstance(operand.storage, Constant):
            keys.add(leaf_key(operand))
    return len(keys)


def reads_in_order(view: View, lazy: Lazy, shape: tuple[int, ...]) -> bool:
    """Whether an op over ``shape`` can compute ``view`` of ``lazy`` in its own kernel: the
    view is the whole value, in order (anything else, a transpose or a broadcast, is
    computed first and loaded as a leaf)."""
    return view.offset == 0 and view.shape == shape == lazy.shape and view.strides == lazy.strides
