"""The builtins of the kernel language.

These functions only have meaning inside a ``@cube.kernel`` or ``@cube.func``: the frontend
recognizes them by identity and lowers each to IR (``cubepy/frontend/builtins.py``). Called
from ordinary Python they raise an error that asks whether ``@cube.kernel`` was forgotten.
The exceptions are ``cdiv``, which also works on the host, and ``static_range`` and
``range``, which iterate as Python's ``range`` does.
"""

from __future__ import annotations

import builtins as _builtins
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import CubeError, caller_loc, format_message

_py_range = _builtins.range  # this module defines cube.range

F = TypeVar("F", bound=Callable[..., Any])


def _builtin(fn: F) -> F:
    @functools.wraps(fn)
    def outside_kernel(*args: Any, **kwargs: Any) -> Any:
        raise CubeError(format_message(
            f"cube.{fn.__name__}() can only be called inside a kernel: "
            "did you forget @cube.kernel (or @cube.func on a helper)?",
            caller_loc(), "decorate the function that calls it with @cube.kernel",
        ))

    outside_kernel.__cube_builtin__ = fn.__name__  # type: ignore[attr-defined]
    return outside_kernel  # type: ignore[return-value]


def is_builtin(obj: object) -> str | None:
    """The builtin's name if ``obj`` is one of the stubs below."""
    return getattr(obj, "__cube_builtin__", None)


class _ComptimeAlias:
    def __init__(self, inner: Any):
        self.inner = inner

    def __repr__(self) -> str:
        return f"cube.Comptime[{getattr(self.inner, '__name__', self.inner)}]"


class Comptime:
    """Marks a kernel parameter as compile-time: ``BLOCK: cube.Comptime[int]``.

    Each distinct value compiles its own specialization; ``if`` on it is folded and
    ``static_range`` over it is unrolled.

    Example:
        >>> @cube.kernel
        ... def k(x, BLOCK: cube.Comptime[int]): ...  # doctest: +SKIP
    """

    def __class_getitem__(cls, inner: Any) -> _ComptimeAlias:
        return _ComptimeAlias(inner)


def is_comptime_annotation(annotation: Any) -> bool:
    if isinstance(annotation, str):  # `from __future__ import annotations`
        return "Comptime[" in annotation or annotation in ("Comptime", "cube.Comptime")
    return isinstance(annotation, _ComptimeAlias) or annotation is Comptime


def comptime_kind(annotation: Any) -> str | None:
    """The name of the type a ``cube.Comptime[...]`` annotation asks for (``"int"``), if any.

    Example:
        >>> comptime_kind(Comptime[int]), comptime_kind("cube.Comptime[bool]")
        ('int', 'bool')
    """
    if isinstance(annotation, _ComptimeAlias):
        return getattr(annotation.inner, "__name__", None)
    if isinstance(annotation, str) and "Comptime[" in annotation:
        return annotation.split("Comptime[", 1)[1].rstrip("]").strip() or None
    return None


class _Bounds:
    """``range``'s arguments and iterations: what static_range and cube.range share."""

    def __init__(self, start: int, stop: int | None = None, step: int = 1):
        if stop is None:
            start, stop = 0, start
        self.range = _py_range(start, stop, step)

    def __iter__(self):
        return iter(self.range)


class static_range(_Bounds):  # noqa: N801 - spelled like range on purpose
    """A loop the compiler unrolls: ``for i in cube.static_range(4):`` (bounds comptime).

    Example:
        >>> list(cube.static_range(0, 8, 2))
        [0, 2, 4, 6]
    """


class range(_Bounds):  # noqa: N801, A001 - Triton's tl.range, spelled cube.range
    """A loop with scheduling hints for the compiler: ``for i in cube.range(0, n, BLOCK,
    flatten=True):``. Its iterations are those of ``range(start, stop, step)`` on every
    target; Triton reads the hints, the others ignore them (all comptime):

    - ``flatten``: fuse the loop with the loops nested in it into one software pipeline, so
      that an outer iteration's epilogue overlaps the next one's loads (a persistent
      matmul's loop over tiles, when the K loop is short).
    - ``warp_specialize``: let Triton split the loop between producer and consumer warps.
    - ``num_stages``: this loop's pipeline depth, instead of the launch's.

    Example:
        >>> list(cube.range(0, 8, 2, flatten=True))
        [0, 2, 4, 6]
    """

    def __init__(self, start: int, stop: int | None = None, step: int = 1, *,
                 flatten: bool = False, warp_specialize: bool = False,
                 num_stages: int | None = None):
        super().__init__(start, stop, step)
        self.hints = _loop_hints(flatten, warp_specialize, num_stages)


LOOP_HINTS = ("flatten", "warp_specialize", "num_stages")  # cube.range's keywords


def _loop_hints(flatten: bool = False, warp_specialize: bool = False,
               num_stages: int | None = None) -> dict[str, Any]:
    """The hints of a ``cube.range`` loop that differ from the defaults, checked."""
    hints: dict[str, Any] = {}
    for name, value in (("flatten", flatten), ("warp_specialize", warp_specialize)):
        if not isinstance(value, bool):
            raise TypeError(f"cube.range(): {name} must be True or False, got {value!r}")
        if value:
            hints[name] = True
    if num_stages is not None:
        if isinstance(num_stages, bool) or not isinstance(num_stages, int) or num_stages < 1:
            raise TypeError(f"cube.range(): num_stages must be a positive int, got "
                            f"{num_stages!r}")
        hints["num_stages"] = num_stages
    return hints


def cdiv(a: int, b: int) -> int:
    """Ceiling division, on the host and inside kernels: ``cdiv(1000, 256) == 4``."""
    return -(-a // b)


class Func:
    """A helper decorated ``@cube.func``: inlined into the kernels that call it.

    Example:
        >>> @cube.func
        ... def square(x):
        ...     return x * x
    """

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise CubeError(format_message(
            f"@cube.func {self.fn.__name__}() can only be called from a kernel",
            caller_loc(), "call it from a @cube.kernel, or call the undecorated function",
        ))


def func(fn: Callable[..., Any]) -> Func:
    """Decorator for kernel helpers, inlined where they are called."""
    return Func(fn)


# ---- the builtins (signatures are the documentation; bodies never run) ----

@_builtin
def cube_pos(axis: int) -> Any:
    """The index of this cube along grid ``axis`` (0, 1 or 2)."""


@_builtin
def cube_count(axis: int) -> Any:
    """The number of cubes along grid ``axis``."""


@_builtin
def arange(start: int, end: int) -> Any:
    """The int32 tile ``[start, end)``; ``end - start`` must be a power of two."""


@_builtin
def zeros(shape: tuple[int, ...], dtype: Any) -> Any:
    """A tile of zeros."""


@_builtin
def full(shape: tuple[int, ...], value: Any, dtype: Any) -> Any:
    """A tile filled with ``value``."""


@_builtin
def zeros_like(x: Any) -> Any:
    """A tile of zeros with ``x``'s shape and dtype (``zeros(x.shape, x.dtype)``)."""


@_builtin
def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (),
         padding_option: str = "", cache_modifier: str = "", eviction_policy: str = "",
         volatile: bool = False) -> Any:
    """Load the elements ``pointer`` addresses; masked-off ones give ``other``. Through a
    block pointer (``make_block_ptr``), the block, elements outside the view giving 0 (NaN
    with ``padding_option="nan"``). ``cache_modifier``, ``eviction_policy`` and ``volatile``
    are accepted for Triton's signature and change nothing."""


@_builtin
def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (),
          cache_modifier: str = "", eviction_policy: str = "") -> None:
    """Store ``value`` where ``mask`` is true; through a block pointer, the elements of the
    block inside the view. The cache hints are accepted and change nothing, as ``load``'s."""


@_builtin
def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any) -> Any:
    """A 2-D view of the array ``base`` (``shape`` rows and columns, ``strides`` in elements,
    the last one 1) that reads and writes whole ``block_shape`` blocks, as Triton's
    ``tl.make_tensor_descriptor``: ``desc.load([row, col])`` returns the block whose corner is
    at ``(row, col)``, elements outside the view reading 0; ``desc.store([row, col], tile)``
    writes the block's elements that fall inside it. On Triton for NVIDIA GPUs with TMA
    (sm_90+) loads are block copies; elsewhere they are masked pointer-tile loads.

    Example:
        >>> a_desc = cube.make_tensor_descriptor(a, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
        >>> tile = a_desc.load([pid_m * BLOCK_M, k0])  # doctest: +SKIP
    """


@_builtin
def atomic_add(pointer: Any, value: Any, mask: Any = None, sem: str = "acq_rel") -> Any:
    """Atomically add; returns the old values. ``sem="relaxed"`` orders nothing but the add
    itself (cheaper on GPUs: for sums that are read only after the kernel).

    Example:
        >>> cube.atomic_add(total + bins, 1, mask=ok)  # doctest: +SKIP
        >>> cube.atomic_add(dq_sums + at, part, sem="relaxed")  # doctest: +SKIP
    """


@_builtin
def atomic_max(pointer: Any, value: Any, mask: Any = None, sem: str = "acq_rel") -> Any:
    """Atomic maximum; returns the old values. ``sem`` as for ``atomic_add``."""


@_builtin
def atomic_min(pointer: Any, value: Any, mask: Any = None, sem: str = "acq_rel") -> Any:
    """Atomic minimum; returns the old values. ``sem`` as for ``atomic_add``."""


@_builtin
def atomic_xchg(pointer: Any, value: Any, mask: Any = None, sem: str = "acq_rel") -> Any:
    """Atomic exchange; returns the old values. ``sem`` as for ``atomic_add``."""


@_builtin
def atomic_cas(pointer: Any, cmp: Any, value: Any) -> Any:
    """Compare-and-swap: store ``value`` where the old value equals ``cmp``; returns old."""


def _math(name: str, doc: str) -> Callable[..., Any]:
    def stub(x: Any) -> Any:
        pass

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = doc
    return _builtin(stub)


exp = _math("exp", "e**x, elementwise.")
exp2 = _math("exp2", "2**x, elementwise.")
log = _math("log", "Natural logarithm.")
log2 = _math("log2", "Base-2 logarithm.")
sqrt = _math("sqrt", "Square root.")
rsqrt = _math("rsqrt", "1 / sqrt(x).")
sin = _math("sin", "Sine.")
cos = _math("cos", "Cosine.")
tanh = _math("tanh", "Hyperbolic tangent.")
erf = _math("erf", "The error function.")
sigmoid = _math("sigmoid", "1 / (1 + exp(-x)); exp(x) / (1 + exp(x)) below 0, which keeps "
                "subnormal results (sigmoid(-92) in float32) where the other form overflows.")
abs = _math("abs", "Absolute value.")  # noqa: A001 - the kernel language's name
floor = _math("floor", "Round down.")
ceil = _math("ceil", "Round up.")


@_builtin
def pow(x: Any, y: Any) -> Any:  # noqa: A001
    """x ** y on floats."""


@_builtin
def maximum(x: Any, y: Any) -> Any:
    """Elementwise maximum."""


@_builtin
def minimum(x: Any, y: Any) -> Any:
    """Elementwise minimum."""


@_builtin
def fma(x: Any, y: Any, z: Any) -> Any:
    """x * y + z."""


@_builtin
def where(cond: Any, x: Any, y: Any) -> Any:
    """``x`` where ``cond`` else ``y``, broadcast."""


@_builtin
def clamp(x: Any, min: Any, max: Any) -> Any:  # noqa: A002 - Triton's parameter names
    """``x`` limited to ``[min, max]``, broadcast: ``minimum(maximum(x, min), max)``, so a
    NaN anywhere gives NaN, as NumPy's ``clip``."""


@_builtin
def umulhi(x: Any, y: Any) -> Any:
    """The high 32 bits of the 64-bit product of ``x`` and ``y`` (int32 or uint32, taken as
    their unsigned bit patterns, as Triton's ``umulhi``), in their dtype.

    Example:
        >>> hi = cube.umulhi(words, 0xD2511F53)  # words: a uint32 tile  # doctest: +SKIP
    """


@_builtin
def multiple_of(x: Any, values: Any) -> Any:
    """``x``, with the promise that it is a multiple of ``values`` (a tile: one int per axis,
    which Triton reads as the divisibility of the first element of each contiguous run, so
    ``multiple_of(start + arange(0, B), B)`` promises that ``start`` is). Triton uses it to
    vectorize loads; the other targets ignore it. A broken promise gives wrong results there.

    Example:
        >>> start = cube.multiple_of(cube.cube_pos(0) * BLOCK, BLOCK)  # doctest: +SKIP
    """


@_builtin
def max_contiguous(x: Any, values: Any) -> Any:
    """``x``, with the promise that its elements run in steps of one over groups of
    ``values`` (one int per axis). Triton uses it to vectorize loads; the others ignore it.

    Example:
        >>> offs = cube.max_contiguous(start + cube.arange(0, BLOCK), BLOCK)  # doctest: +SKIP
    """


@_builtin
def max_constancy(x: Any, values: Any) -> Any:
    """``x``, with the promise that its elements are equal over groups of ``values`` (one
    int per axis: ``offs // 64`` where ``offs`` runs on from a multiple of 64). Triton uses it;
    the other targets ignore it.

    Example:
        >>> rows = cube.max_constancy(offs // 64, 64)  # doctest: +SKIP
    """


@_builtin
def cast(x: Any, dtype: Any, bitcast: bool = False) -> Any:
    """``x`` converted to ``dtype`` (same as ``x.to(dtype)``); with ``bitcast=True`` its bits
    read as ``dtype``, which must have the same width (float32 <-> int32 or uint32, float16 or
    bfloat16 <-> int16, float64 <-> int64, int8 <-> uint8), as ``x.to(dtype, bitcast=True)``.

    Example:
        >>> bits = cube.cast(x, cube.uint32, bitcast=True)  # doctest: +SKIP
        >>> sign = (bits >> 31) == 1  # doctest: +SKIP
    """


@_builtin
def reshape(x: Any, *shape: Any, can_reorder: bool = False) -> Any:
    """The same elements in row-major order with a new shape, given as one tuple or as ints
    (``reshape(x, (M, N))`` or ``reshape(x, M, N)``, as Triton's); ``can_reorder`` is accepted
    and the order stays row-major."""


@_builtin
def permute(x: Any, *dims: Any) -> Any:
    """Axes reordered: result axis i is input axis ``dims[i]`` (a tuple or ints)."""


@_builtin
def trans(x: Any, *dims: Any) -> Any:
    """Transpose of a 2-D tile; with ``dims`` (a tuple or ints), ``permute(x, dims)``."""


@_builtin
def expand_dims(x: Any, axis: Any) -> Any:
    """Insert a size-1 axis at ``axis``, or one at each of a tuple of axes (positions in
    the result)."""


@_builtin
def broadcast_to(x: Any, *shape: Any) -> Any:
    """Broadcast to ``shape`` (a tuple or ints; NumPy rules)."""


@_builtin
def sum(x: Any, axis: int | None = None, keep_dims: bool = False,  # noqa: A001
        dtype: Any = None) -> Any:
    """Sum along ``axis`` (all axes when None); ``keep_dims`` keeps the reduced axes as 1s;
    given ``dtype``, ``x`` is cast to it first and the sum is of that dtype (Triton's)."""


@_builtin
def max(x: Any, axis: int | None = None, return_indices: bool = False,  # noqa: A001
        return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Maximum along ``axis`` (all axes when None); with ``return_indices``, the pair of it and
    the index of its first occurrence (``argmax``), as Triton's."""


@_builtin
def min(x: Any, axis: int | None = None, return_indices: bool = False,  # noqa: A001
        return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Minimum along ``axis`` (all axes when None); with ``return_indices``, the pair of it and
    the index of its first occurrence (``argmin``), as Triton's."""


@_builtin
def argmax(x: Any, axis: int, tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Index of the first maximum along ``axis`` (int32; the first even when
    ``tie_break_left`` is False, which allows any)."""


@_builtin
def argmin(x: Any, axis: int, tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Index of the first minimum along ``axis`` (int32; the first even when
    ``tie_break_left`` is False, which allows any)."""


@_builtin
def cumsum(x: Any, axis: int = 0, reverse: bool = False, dtype: Any = None) -> Any:
    """Inclusive cumulative sum along ``axis`` (from its end when ``reverse``; of ``dtype``,
    ``x`` cast to it first, when given)."""


@_builtin
def dot(a: Any, b: Any, acc: Any = None) -> Any:
    """Matrix product of 2-D tiles, plus ``acc`` when given."""


@_builtin
def static_assert(cond: Any, msg: str = "") -> None:
    """A compile-time assertion on comptime values."""


@_builtin
def device_print(prefix: str, *values: Any) -> None:
    """Print from inside a kernel (each cube prints)."""


program_id = cube_pos
num_programs = cube_count

# the random and the further Triton builtins' stubs live beside this module; imported last,
# as they use _builtin
from .ported import (  # noqa: E402, F401
    advance,
    associative_scan,
    assume,
    atomic_and,
    atomic_or,
    atomic_xor,
    broadcast,
    cat,
    cumprod,
    debug_barrier,
    device_assert,
    div_rn,
    fdiv,
    flip,
    gather,
    histogram,
    interleave,
    join,
    make_block_ptr,
    ravel,
    reduce,
    reduce_or,
    softmax,
    sort,
    split,
    sqrt_rn,
    squeeze,
    static_print,
    swizzle2d,
    topk,
    unsqueeze,
    view,
    xor_sum,
)
from .random import philox, rand, rand4x, randint, randint4x, randn, randn4x  # noqa: E402, F401
