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
def view(x: Any, shape: tuple[int, ...]) -> Any:
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
def cumprod(x: Any, axis: int = 0) -> Any:
    """Inclusive cumulative product along ``axis`` (small integers in int32, as ``cumsum``).

    Example:
        >>> survival = cube.cumprod(1.0 - hazard, axis=1)  # doctest: +SKIP
    """


@_builtin
def xor_sum(x: Any, axis: int | None = None) -> Any:
    """Bitwise exclusive or of the integer elements along ``axis`` (all axes when None).

    Example:
        >>> parity = cube.xor_sum(words, axis=0)  # doctest: +SKIP
    """


@_builtin
def flip(x: Any, dim: int | None = None) -> Any:
    """The elements in reverse order along ``dim`` (the last axis when None), as Triton's.

    Example:
        >>> descending = cube.flip(ascending, 0)  # doctest: +SKIP
    """
