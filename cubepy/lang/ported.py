"""Stubs of the Triton builtins that kernels use for shapes, index arithmetic, compile-time
printing, bitwise atomics and the reductions beyond sums, spelled as Triton spells them so
that kernels port by renaming ``tl.`` to ``cube.`` (lowered by ``cubepy/frontend/ported.py``
and ``cubepy/frontend/builtins.py``). Like the other builtins, these only have meaning inside
a ``@cube.kernel`` or ``@cube.func``."""

from __future__ import annotations

from typing import Any

from .builtins import _builtin


@_builtin
def ravel(x: Any) -> Any:
    """The tile's elements as one axis, in row-major order.

    Example:
        >>> flat = cube.ravel(block)  # (16, 8) -> (128,)  # doctest: +SKIP
    """


@_builtin
def view(x: Any, *shape: Any) -> Any:
    """``x`` with a new shape of as many elements. Triton lets ``view`` reorder the elements;
    cubepy keeps row-major order, as ``reshape`` does.

    Example:
        >>> rows = cube.view(x, (4, 32))  # doctest: +SKIP
    """


@_builtin
def broadcast(a: Any, b: Any) -> Any:
    """``a`` and ``b`` broadcast to their common shape, as NumPy broadcasts (a pair).

    Example:
        >>> rows, cols = cube.broadcast(offs_m[:, None], offs_n[None, :])  # doctest: +SKIP
    """


@_builtin
def join(a: Any, b: Any) -> Any:
    """``a`` and ``b`` (broadcast to one shape) as pairs along a new last axis of 2.

    Example:
        >>> pairs = cube.join(re, im)  # (BLOCK,) and (BLOCK,) -> (BLOCK, 2)  # doctest: +SKIP
    """


@_builtin
def split(x: Any) -> Any:
    """The two halves of a tile whose last axis is 2 (``join``'s inverse), as a pair.

    Example:
        >>> re, im = cube.split(pairs)  # doctest: +SKIP
    """


@_builtin
def interleave(a: Any, b: Any) -> Any:
    """``a`` and ``b`` alternating along their last axis, which doubles.

    Example:
        >>> mixed = cube.interleave(evens, odds)  # (64,) and (64,) -> (128,)  # doctest: +SKIP
    """


@_builtin
def cat(a: Any, b: Any, can_reorder: bool = False) -> Any:
    """``a``'s elements, then ``b``'s, along the first axis (tiles of one shape). Triton lets
    ``can_reorder=True`` mix the order; cubepy keeps it either way.

    Example:
        >>> both = cube.cat(lo, hi)  # (64,) and (64,) -> (128,)  # doctest: +SKIP
    """


@_builtin
def swizzle2d(i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> Any:
    """The position ``(i, j)`` of a row-major ``size_i`` x ``size_j`` grid takes in the order
    that runs down the columns of each band of ``size_g`` rows (the last band may be shorter):
    the grouped order a matmul gives its tiles so that tiles running at once share rows and
    columns. Returns ``(new_i, new_j)``; scalars or int tiles.

    Example:
        >>> m, n = cube.swizzle2d(pid // cols, pid % cols, rows, cols, 8)  # doctest: +SKIP
    """


@_builtin
def static_print(*values: Any) -> None:
    """Print at compile time, once per specialization: comptime values as they are, run-time
    values as their dtype and shape.

    Example:
        >>> cube.static_print("BLOCK", BLOCK, x)  # doctest: +SKIP
    """


@_builtin
def atomic_and(pointer: Any, value: Any, mask: Any = None, sem: str = "acq_rel") -> Any:
    """Atomic bitwise and on an integer array; returns the old values. ``sem`` as for
    ``atomic_add``.

    Example:
        >>> cube.atomic_and(flags + word, ~(1 << bit), mask=mask)  # doctest: +SKIP
    """


@_builtin
def atomic_or(pointer: Any, value: Any, mask: Any = None, sem: str = "acq_rel") -> Any:
    """Atomic bitwise or on an integer array (set bits); returns the old values.

    Example:
        >>> seen = cube.atomic_or(bitmap + word, 1 << bit, mask=mask)  # doctest: +SKIP
    """


@_builtin
def atomic_xor(pointer: Any, value: Any, mask: Any = None, sem: str = "acq_rel") -> Any:
    """Atomic bitwise exclusive or on an integer array (flip bits); returns the old values.

    Example:
        >>> cube.atomic_xor(parity + slot, bits, mask=mask)  # doctest: +SKIP
    """


@_builtin
def cumprod(x: Any, axis: int = 0, reverse: bool = False, dtype: Any = None) -> Any:
    """Inclusive cumulative product along ``axis`` (small integers in int32, as ``cumsum``;
    ``reverse`` and ``dtype`` as ``cumsum``'s).

    Example:
        >>> survival = cube.cumprod(1.0 - hazard, axis=1)  # doctest: +SKIP
    """


@_builtin
def xor_sum(x: Any, axis: int | None = None, keep_dims: bool = False) -> Any:
    """Bitwise exclusive or of the integer elements along ``axis`` (all axes when None).

    Example:
        >>> parity = cube.xor_sum(words, axis=0)  # doctest: +SKIP
    """


@_builtin
def reduce_or(x: Any, axis: int | None = None, keep_dims: bool = False) -> Any:
    """Bitwise or of the integer elements along ``axis`` (all axes when None).

    Example:
        >>> seen = cube.reduce_or(flags, axis=1)  # doctest: +SKIP
    """


@_builtin
def flip(x: Any, dim: int | None = None) -> Any:
    """The elements in reverse order along ``dim`` (the last axis when None), as Triton's.

    Example:
        >>> descending = cube.flip(ascending, 0)  # doctest: +SKIP
    """


@_builtin
def sort(x: Any, dim: int | None = None, descending: bool = False) -> Any:
    """``x`` sorted along ``dim`` (the last axis when None), ascending unless ``descending``.
    NaNs go last (first when descending), as in NumPy; -0.0 comes before +0.0, and a NaN
    comes out with its sign bit cleared.

    Example:
        >>> ranked = cube.sort(scores, descending=True)  # doctest: +SKIP
    """


@_builtin
def topk(x: Any, k: int, dim: int | None = None, descending: bool = True) -> Any:
    """The ``k`` largest elements along ``dim`` (the last axis when None), largest first;
    the ``k`` smallest, smallest first, when ``descending`` is False. ``k`` is a compile-time
    power of two; NaNs count as the largest, as in ``sort``.

    Example:
        >>> best = cube.topk(logits, 8)  # (ROWS, 128) -> (ROWS, 8)  # doctest: +SKIP
    """


@_builtin
def squeeze(x: Any, dim: int) -> Any:
    """``x`` without its axis ``dim``, which must have length 1 (a 1-D tile of one element
    gives a scalar). The inverse of ``unsqueeze``.

    Example:
        >>> row = cube.squeeze(block, 0)  # (1, 64) -> (64,)  # doctest: +SKIP
    """


@_builtin
def unsqueeze(x: Any, dim: int) -> Any:
    """``x`` with a new axis of length 1 at ``dim`` (``expand_dims``).

    Example:
        >>> column = cube.unsqueeze(offs, 1)  # (64,) -> (64, 1)  # doctest: +SKIP
    """


@_builtin
def softmax(x: Any, dim: int | None = None, keep_dims: bool = False,
            ieee_rounding: bool = False) -> Any:
    """``exp(x - max) / sum(exp(x - max))`` along ``dim``: axis 0 when None, as Triton's (not
    the last axis, as torch's). The shape is kept either way, and the division is ``/``
    (within 2.5 ulp on every target): ``keep_dims`` and ``ieee_rounding`` are accepted for
    Triton's signature and change nothing.

    Example:
        >>> p = cube.softmax(scores, dim=1)  # doctest: +SKIP
    """


@_builtin
def gather(src: Any, index: Any, axis: int) -> Any:
    """``src``'s elements at ``index`` along ``axis``: ``out[i, j] = src[index[i, j], j]`` for
    axis 0. ``index`` is an integer tile of ``src``'s rank and shape but along ``axis``; an
    index past either end reads that end.

    Example:
        >>> picked = cube.gather(table, rows_wanted, 0)  # doctest: +SKIP
    """


@_builtin
def histogram(input: Any, num_bins: int, mask: Any = None) -> Any:  # noqa: A002
    """An int32 tile of ``num_bins`` counts (a compile-time power of two): bin ``b`` counts the
    elements of the 1-D integer tile ``input`` equal to ``b`` (and, given ``mask``, where it is
    true). Elements outside ``0 .. num_bins - 1`` count nowhere.

    Example:
        >>> counts = cube.histogram(expert_ids, 64)  # doctest: +SKIP
    """


@_builtin
def debug_barrier() -> None:
    """Waits until every lane of the cube is here: its loads and stores before the barrier
    happen before those after it (Triton's; ``workgroupBarrier`` on WGSL).

    Example:
        >>> cube.store(scratch + offs, partial)  # doctest: +SKIP
        >>> cube.debug_barrier()  # doctest: +SKIP
        >>> total = cube.load(scratch + flipped_offs)  # doctest: +SKIP
    """


@_builtin
def device_assert(cond: Any, msg: str = "", mask: Any = None) -> None:
    """Stops the launch with ``msg`` (and the kernel's file and line) where ``cond`` is false
    (and ``mask`` true). Checked on cpu, cpu:debug and Triton's interpreter; on a GPU through
    Triton only in Triton's debug mode (``TRITON_DEBUG=1``), as Triton's; not on wgsl, which
    says so with a ``cube.UncheckedAssertWarning``. A Python ``assert cond, "msg"`` on run-time
    values is the same.

    Example:
        >>> cube.device_assert(idx < n, "index out of range")  # doctest: +SKIP
    """


@_builtin
def assume(cond: Any) -> None:
    """A promise that the scalar condition ``cond`` holds, which Triton's compiler may use
    (``tl.assume``); Triton's interpreter checks it, the other targets drop it. A broken
    promise gives wrong results on a GPU.

    Example:
        >>> cube.assume(stride > 0)  # doctest: +SKIP
    """


@_builtin
def reduce(input: Any, axis: int | None, combine_fn: Any, keep_dims: bool = False) -> Any:  # noqa: A002
    """``input`` (a tile, or a tuple of tiles of one shape) reduced along ``axis`` (all axes
    when None) by ``combine_fn``, a ``@cube.func`` that takes the earlier elements' values
    then the later ones' (``2n`` scalars for ``n`` tiles) and returns ``n`` values of the
    inputs' dtypes. Elements are combined in order, in any grouping: the function should be
    associative. As Triton's ``tl.reduce``.

    Example:
        >>> @cube.func
        ... def larger_magnitude(a, b):
        ...     return cube.where(abs(b) > abs(a), b, a)
        >>> peak = cube.reduce(x, 1, larger_magnitude)  # doctest: +SKIP
    """


@_builtin
def associative_scan(input: Any, axis: int, combine_fn: Any, reverse: bool = False) -> Any:  # noqa: A002
    """The inclusive scan of ``input`` (a tile, or a tuple of tiles of one shape) along
    ``axis`` by ``combine_fn`` (as in ``reduce``); from the end when ``reverse``. As
    Triton's ``tl.associative_scan``.

    Example:
        >>> running_max = cube.associative_scan(x, 0, larger)  # doctest: +SKIP
    """


@_builtin
def div_rn(x: Any, y: Any) -> Any:
    """``x / y`` rounded correctly (to nearest even) in the floats' dtype, as Triton's
    ``tl.div_rn``; plain ``/`` may be off by up to 2.5 ulp on a GPU. Not on wgsl (an error
    says so): WGSL promises no correctly rounded division.

    Example:
        >>> q = cube.div_rn(num, den)  # doctest: +SKIP
    """


@_builtin
def sqrt_rn(x: Any) -> Any:
    """The square root rounded correctly, as Triton's ``tl.sqrt_rn``; not on wgsl.

    Example:
        >>> r = cube.sqrt_rn(var)  # doctest: +SKIP
    """


@_builtin
def fdiv(x: Any, y: Any, ieee_rounding: bool = False, approx: bool = False) -> Any:
    """``x / y``; rounded correctly with ``ieee_rounding`` (``div_rn``). ``approx`` allows
    an approximate quotient, which ``/`` already is. As Triton's ``tl.fdiv``.

    Example:
        >>> p = cube.fdiv(e, total, ieee_rounding=True)  # doctest: +SKIP
    """


@_builtin
def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any = None) -> Any:
    """A block pointer, as Triton's: the block of ``block_shape`` (compile-time powers of two)
    whose corner is at ``offsets`` in the view of ``base`` (an array argument, plus a scalar
    offset) with ``shape`` and ``strides`` (in elements). ``cube.load``/``cube.store`` of it
    read and write the block (every axis bounds-checked: elements outside the view read 0 and
    are not written), ``cube.advance`` moves it, and a loop may carry it. ``order`` is
    accepted for Triton's signature.

    Example:
        >>> a_blocks = cube.make_block_ptr(a, (M, K), (K, 1), (row0, 0), (BM, BK), (1, 0))
        ... # doctest: +SKIP
    """


@_builtin
def advance(base: Any, offsets: Any) -> Any:
    """The block pointer ``base`` with its corner moved by ``offsets`` (one per axis).

    Example:
        >>> a_blocks = cube.advance(a_blocks, (0, BK))  # doctest: +SKIP
    """
