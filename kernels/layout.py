"""What every kernel launcher in ``kernels/`` takes: strided views and a launch context.

A ``View`` is an n-d array as kernels see it: a flat storage array native to the target (a
1-D NumPy array for ``cpu`` and Triton's interpreter, a 1-D CUDA tensor for ``triton`` on a
GPU, a 1-D ``cube.DeviceArray`` for ``wgsl``), an element offset, a shape and element strides
(0 for broadcast axes, negative for flipped ones). Kernels address element ``i`` of a view as
``storage + offset + sum(i_k * strides_k)``: the pointer base is always the storage argument.

A ``Context`` is where launchers run and allocate: the cubepy target name passed to every
launch, and a function that allocates flat storage (burn's backends give their pool's).

Index arithmetic is int32: views over more than 2**31 - 1 elements are refused by
``check_int32``.

Example:
    >>> import numpy as np
    >>> ctx = Context("cpu", lambda n, dtype: np.empty(n, dtype.numpy))
    >>> v = ctx.new((2, 3), cube.float32)
    >>> v.shape, v.strides, v.is_contiguous
    ((2, 3), (3, 1), True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import cubepy as cube
from cubepy.ir.dtypes import DType

INT32_MAX = 2**31 - 1
MAX_RANK = 4  # strided kernels index up to 4 (collapsed) axes; see ``launch_plan``
# The cpu target's one block for 1-D kernels (``Context.block``): 1024 lanes run as fast as
# 4096 on 4M elements, and waste less on small tensors.
CPU_BLOCK = 1024


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major element strides of ``shape``."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class View:
    """An n-d array over flat ``storage``: element offset, shape and element strides."""

    storage: Any
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: DType

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @functools.cached_property
    def is_contiguous(self) -> bool:
        """Row-major and dense (size-1 axes may have any stride)."""
        expected = contiguous_strides(self.shape)
        return all(n == 1 or s == e for n, s, e in zip(self.shape, self.strides, expected))

    def with_layout(self, offset: int, shape: Sequence[int], strides: Sequence[int]) -> View:
        """The same storage seen through another layout."""
        return View(self.storage, int(offset), tuple(shape), tuple(strides), self.dtype)


class Context:
    """A launch target plus an allocator of flat storage (``allocate(numel, dtype)``)."""

    def __init__(self, target: str, allocate: Callable[[int, DType], Any]):
        self.target = target
        self.allocate = allocate

    def new(self, shape: Sequence[int], dtype: DType) -> View:
        """A fresh contiguous view (contents undefined)."""
        return new_view(self.allocate, shape, dtype, "a result")

    def block(self, n: int) -> int:
        """The elements per cube for a 1-D kernel over ``n`` elements on this target.

        GPU targets fit the block to small ``n`` (16 to 1024, a power of two). The cpu target
        takes ``CPU_BLOCK`` whatever ``n``: each new block is a new specialization, compiled
        by Numba in 0.1-1 s, while the masked lanes of a full block cost about 1.5 us on a
        tensor of 10 elements, and big tensors run at the same speed (BENCHMARKS.md, "One
        block for the cpu's 1-D kernels").

        Example:
            >>> Context("triton", None).block(100), Context("cpu", None).block(100)
            (128, 1024)
        """
        if self.target.startswith("cpu"):
            return CPU_BLOCK
        return max(16, min(1024, 1 << max(0, (max(n, 1) - 1).bit_length())))

    def __repr__(self) -> str:
        return f"Context({self.target!r})"


def new_view(allocate: Callable[[int, DType], Any], shape: Sequence[int], dtype: DType,
             what: str) -> View:
    """A contiguous view of ``shape`` over fresh storage from ``allocate`` (never empty:
    kernels take its address); ``what`` names it in the int32 size check's error."""
    shape = tuple(map(int, shape))
    numel = math.prod(shape)
    check_int32(numel, what)
    return View(allocate(max(numel, 1), dtype), 0, shape, contiguous_strides(shape), dtype)


def check_int32(numel: int, what: str) -> None:
    if numel > INT32_MAX:
        raise cube.LaunchError(f"{what} has {numel} elements; kernels index with int32, "
                               f"so at most {INT32_MAX} are supported")


def collapse(shape: Sequence[int], *strides: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 axes and merge neighbours that are contiguous in every operand.

    Returns the collapsed shape and each operand's strides for it (the shapes of operands
    and result are equal; broadcast axes have stride 0).

    Example:
        >>> collapse((2, 3, 4), (12, 4, 1), (0, 0, 1))
        ([6, 4], [[4, 1], [0, 1]])
    """
    axes = [i for i, n in enumerate(shape) if n != 1]
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for i in axes:
        if out_shape and all(s[-1] == st[i] * shape[i] for s, st in zip(out_strides, strides)):
            out_shape[-1] *= shape[i]
            for s, st in zip(out_strides, strides):
                s[-1] = st[i]
            continue
        out_shape.append(shape[i])
        for s, st in zip(out_strides, strides):
            s.append(st[i])
    return out_shape, out_strides


@dataclass(frozen=True)
class StridedArgs:
    """The collapsed layout of one elementwise launch: padded to ``MAX_RANK`` axes.

    ``rank`` is 0 when every operand is dense and in order (plain ``storage + offset + i``);
    otherwise the number of significant axes, counted from the innermost. ``dims`` are the
    three inner sizes ``d1, d2, d3`` (``d0`` follows from the element count); ``strides[j]``
    are operand ``j``'s four strides.
    """

    rank: int
    dims: tuple[int, int, int]
    strides: tuple[tuple[int, int, int, int], ...]


@dataclass(frozen=True)
class LaunchPart:
    """One launch of a strided elementwise kernel: where its slice of the result starts,
    each operand's element offset, the element count and the collapsed layout."""

    out_offset: int
    offsets: tuple[int, ...]
    numel: int
    layout: StridedArgs


def launch_plan(shape: Sequence[int], operands: Sequence[View]) -> list[LaunchPart]:
    """The launches that compute a contiguous result of ``shape`` from strided ``operands``.

    Each operand must already have ``shape`` (broadcast axes with stride 0). Normally one
    launch; a layout of more than ``MAX_RANK`` collapsed axes becomes one launch per index of
    its outer axes (rare: a permutation of five or more axes that no neighbours merge).

    Example:
        >>> v = View(None, 0, (4, 8), (1, 4), cube.float32)   # a transposed 8x4 array
        >>> launch_plan((4, 8), [v])[0].layout
        StridedArgs(rank=2, dims=(1, 4, 8), strides=((0, 0, 1, 4),))
    """
    offsets = tuple(v.offset for v in operands)
    if all(v.is_contiguous for v in operands):
        dense = StridedArgs(0, (1, 1, 1), tuple((0, 0, 0, 1) for _ in operands))
        return [LaunchPart(0, offsets, math.prod(shape), dense)]
    layout, outer_dims, outer_strides = _strided_layout(tuple(shape),
                                                        tuple(v.strides for v in operands))
    inner_numel = math.prod(shape) // max(1, math.prod(outer_dims))
    if not outer_dims:
        return [LaunchPart(0, offsets, inner_numel, layout)]
    parts = []
    for flat, index in enumerate(_indices(outer_dims)):
        moved = tuple(o + sum(i * s for i, s in zip(index, st))
                      for o, st in zip(offsets, outer_strides))
        parts.append(LaunchPart(flat * inner_numel, moved, inner_numel, layout))
    return parts


@functools.lru_cache(maxsize=4096)
def _strided_layout(shape: tuple[int, ...], strides: tuple[tuple[int, ...], ...]
                    ) -> tuple[StridedArgs, tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """The collapsed layout of ``launch_plan``, its outer axes and each operand's strides on
    them; a training step launches the same layouts again and again, so they are kept."""
    dims, collapsed = collapse(shape, *strides)
    outer = max(0, len(dims) - MAX_RANK)
    inner_dims = dims[outer:]
    pad = MAX_RANK - len(inner_dims)
    padded_dims = [1] * pad + inner_dims
    layout = StridedArgs(
        len(inner_dims),
        (padded_dims[1], padded_dims[2], padded_dims[3]),
        tuple(tuple([0] * pad + s[outer:]) for s in collapsed),  # type: ignore[misc]
    )
    return layout, tuple(dims[:outer]), tuple(tuple(s[:outer]) for s in collapsed)


def _indices(dims: Sequence[int]) -> list[tuple[int, ...]]:
    result: list[tuple[int, ...]] = [()]
    for n in dims:
        result = [r + (i,) for r in result for i in range(n)]
    return result


def view_strides(old_shape: Sequence[int], old_strides: Sequence[int],
                  new_shape: Sequence[int]) -> list[int] | None:
    """Strides giving ``new_shape`` over the same elements, or None if a copy is needed:
    both shapes are walked in chunks of equal element count; each chunk's old axes must be
    contiguous with each other (a reshape's view, and a pending value's leaves read through
    a reshape of it under ``burn.Fusion``).

    Example:
        >>> view_strides((2, 3, 4), (12, 4, 1), (6, 4)), view_strides((2, 3), (1, 2), (6,))
        ([4, 1], None)
    """
    old = [(n, s) for n, s in zip(old_shape, old_strides) if n != 1]
    new = [n for n in new_shape]
    strides = [0] * len(new)
    oi, ni = 0, 0
    while oi < len(old) and ni < len(new):
        if new[ni] == 1:
            ni += 1
            continue
        # a chunk: old axes oi..oj and new axes ni..nj with equal products
        o_prod, n_prod = old[oi][0], new[ni]
        oj, nj = oi, ni
        while o_prod != n_prod:
            if o_prod < n_prod:
                oj += 1
                if oj >= len(old):
                    return None
                o_prod *= old[oj][0]
            else:
                nj += 1
                if nj >= len(new):
                    return None
                n_prod *= new[nj]
        for k in range(oi, oj):
            if old[k][1] != old[k + 1][1] * old[k + 1][0]:
                return None
        step = old[oj][1]
        for k in range(nj, ni - 1, -1):
            strides[k] = step
            step *= new[k]
        oi, ni = oj + 1, nj + 1
    return strides


def float_register(dtype: DType) -> DType:
    """The dtype kernels compute ``dtype`` in: float32 for 16-bit floats, else ``dtype``."""
    return cube.float32 if dtype.name in ("float16", "bfloat16") else dtype


def register(dtype: DType) -> DType:
    """``float_register``, and int32 for bool and integers narrower than 32 bits (for
    arithmetic and comparisons that must not wrap at 8 or 16 bits)."""
    if dtype.is_bool or (dtype.is_int and dtype.bits < 32):
        return cube.int32
    return float_register(dtype)


def scalar(value: Any, dtype: DType) -> Any:
    """``value`` as a NumPy scalar of ``dtype``'s register type, for a kernel argument (a
    float16/bfloat16 scalar travels as float32, as kernels compute those in float32)."""
    import numpy as np

    if dtype.name in ("float16", "bfloat16"):
        return np.float32(value)
    return dtype.numpy.type(value)
