"""Random tensors: ``uniform``, ``normal``, ``bernoulli``, ``rand``, ``randn``, ``randint`` and
``dropout``, drawn from a seeded counter-based generator.

A ``Generator`` is a 64-bit seed plus a 64-bit counter. Every call takes a block of counters
(as many as the result has elements, twice that for float64 ``normal``) and advances the
counter past it, so two calls differ and the sequence is reproducible from the seed; the
values are a pure function of (seed, counter), the same on every backend (Threefry-2x32, see
``kernels/random.py``). ``burn.manual_seed(seed)`` reseeds the global generator that calls
use unless given ``generator=``.

Every function takes ``dtype`` (floats; ``randint`` integers; default float32 or int32) and
``backend`` (a backend or a device name; default ``burn.default_backend()``).

Example:
    >>> burn.manual_seed(0)
    Generator(seed=0, offset=0)
    >>> x = burn.rand(2, 3)
    >>> y = burn.randn((2, 3), generator=burn.Generator(7), dtype=burn.float64)
    >>> burn.randint(0, 10, (4,)).dtype, burn.dropout(x, 0.5).shape
    (cube.int32, (2, 3))
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from kernels.random import MASK32, MASK64, Stream, draws_per_element, register, state_problem

from ..backend import Backend, BurnError
from .creation import _dtype as as_dtype  # the dtype-argument parser every creation op uses
from .creation import resolve_backend
from .tensor import Tensor, tensor_method
from .views import broadcast_shapes, expand

__all__ = ["Generator", "bernoulli", "default_generator", "dropout", "manual_seed", "normal",
           "rand", "randint", "randn", "uniform"]

#: the global generator's seed until ``manual_seed`` (torch's default, for familiarity)
DEFAULT_SEED = 67280421310721


def _as_int(value: Any, op: str, name: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise BurnError(f"{op}: {name} must be an int, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise BurnError(f"{op}: {name} must be an int, got {value!r}") from None


class Generator:
    """A seed and a counter: the state of a counter-based random stream.

    Example:
        >>> g = burn.Generator(42)
        >>> a, b = burn.rand(3, generator=g), burn.rand(3, generator=g)   # different values
        >>> g.offset
        6
        >>> c = burn.rand(3, generator=burn.Generator(42))                # the same as a
    """

    def __init__(self, seed: int = DEFAULT_SEED, offset: int = 0):
        self._lock = threading.Lock()
        #: between begin_step and end_step: the device state drawn from, and the offset then
        self._step: tuple[Any, int] | None = None
        self.manual_seed(seed)
        self._offset = _as_int(offset, "Generator", "offset") & MASK64

    def manual_seed(self, seed: int) -> Generator:
        """Restart from ``seed`` (any int, taken modulo 2**64) at counter 0; returns self."""
        seed = _as_int(seed, "manual_seed", "seed") & MASK64
        with self._lock:
            self._seed, self._offset = seed, 0
        return self

    def get_state(self) -> tuple[int, int]:
        """(seed, offset): everything the stream's next draws depend on.

        Example:
            >>> g = burn.Generator(5); _ = burn.rand(4, generator=g)
            >>> state = g.get_state(); a = burn.rand(2, generator=g)
            >>> bool((burn.rand(2, generator=g.set_state(state)) == a).all())
            True
        """
        with self._lock:
            return self._seed, self._offset

    def set_state(self, state: tuple[int, int]) -> Generator:
        """Go back (or on) to a ``get_state()``: the same draws follow; returns self."""
        try:
            seed, offset = state
        except (TypeError, ValueError):
            raise BurnError(f"Generator.set_state: expected (seed, offset) as get_state() "
                            f"returns, got {state!r}") from None
        seed = _as_int(seed, "set_state", "seed") & MASK64
        offset = _as_int(offset, "set_state", "offset") & MASK64
        with self._lock:
            self._seed, self._offset = seed, offset
        return self

    def initial_seed(self) -> int:
        """The seed this generator was started from."""
        return self._seed

    @property
    def offset(self) -> int:
        """The next counter a call will use."""
        return self._offset

    def take(self, count: int) -> Stream:
        """The stream of the next ``count`` counters, which are then used up."""
        with self._lock:
            if self._step is None:
                stream = Stream(self._seed, self._offset)
            else:
                state, start = self._step
                stream = Stream(self._seed, (self._offset - start) & MASK64, state)
            self._offset = (self._offset + count) & MASK64
        return stream

    def state_words(self) -> np.ndarray:
        """The seed and the offset as four uint32 words (low word first), as the kernels
        read a stream's device ``state`` (``kernels.random.Stream``)."""
        with self._lock:
            seed, offset = self._seed, self._offset
        return np.array([seed & MASK32, seed >> 32, offset & MASK32, offset >> 32], np.uint32)

    def begin_step(self, state: Any) -> None:
        """Draw from the device buffer ``state`` until ``end_step``: kernels read the seed
        and a base offset there, and count from it, so a step's launches take the same
        numbers whatever the offset. ``state`` must hold ``state_words()`` (as of this
        call) for the draws to be the usual ones; a CUDA graph of the step then draws anew
        at each replay once the host writes the words of that replay into ``state``.

        Example:
            >>> g = burn.Generator(3); state = burn.from_numpy(g.state_words()).prim
            >>> g.begin_step(state); a = burn.rand(4, generator=g); g.end_step()
            4
            >>> bool((a == burn.rand(4, generator=burn.Generator(3))).all())
            True
        """
        problem = state_problem(state)
        if problem is not None:
            raise BurnError(f"Generator.begin_step: {problem}")
        with self._lock:
            if self._step is not None:
                raise BurnError("Generator.begin_step: this generator already draws from a "
                                "step's state; call end_step() first")
            self._step = (state, self._offset)

    def end_step(self) -> int:
        """Draw as usual again; returns how many counters the step used."""
        with self._lock:
            if self._step is None:
                raise BurnError("Generator.end_step: begin_step() was not called")
            _, start = self._step
            self._step = None
            return (self._offset - start) & MASK64

    def __repr__(self) -> str:
        return f"Generator(seed={self._seed}, offset={self._offset})"


_global_generator = Generator()


def default_generator() -> Generator:
    """The global generator that random functions use when not given ``generator=``."""
    return _global_generator


def manual_seed(seed: int) -> Generator:
    """Reseed the global generator (counter back to 0); returns it.

    Example:
        >>> _ = burn.manual_seed(1); a = burn.rand(4)
        >>> _ = burn.manual_seed(1); bool((burn.rand(4) == a).all())
        True
    """
    return _global_generator.manual_seed(seed)


def _shape(op: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        sizes = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise BurnError(f"{op}: shape must be ints, got {shape!r}") from None
    if any(s < 0 for s in sizes):
        raise BurnError(f"{op}: negative size in shape {sizes}")
    return sizes


def _varargs_shape(op: str, shape: tuple[Any, ...]) -> tuple[int, ...]:
    """``rand(2, 3)`` and ``rand((2, 3))`` alike."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        return _shape(op, shape[0])
    return _shape(op, shape)


def _float_dtype(op: str, dtype: Any, backend: Backend) -> DType:
    dtype = as_dtype(dtype)
    if not dtype.is_float:
        raise BurnError(f"{op}: dtype must be a float dtype, got {dtype.name}")
    backend.check_dtype(dtype, op)
    return dtype


def _largest(dtype: DType) -> float:
    # np.finfo knows no bfloat16: its largest value is (2 - 2**-7) * 2**127
    if dtype.name == "bfloat16":
        return (2 - 2**-7) * 2.0**127
    return float(np.finfo(dtype.numpy).max)


def _stream(op: str, kind: str, generator: Generator | None, shape: Sequence[int],
            dtype: DType) -> Stream:
    """The counters a ``kind`` draw of ``shape`` uses (``op`` names the caller in errors)."""
    if generator is None:
        generator = _global_generator
    elif not isinstance(generator, Generator):
        raise BurnError(f"{op}: generator must be a burn.Generator, got {generator!r}")
    return generator.take(draws_per_element(kind, dtype) * math.prod(shape))


def _finite(op: str, **values: Any) -> None:
    for name, value in values.items():
        if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(
                value):
            raise BurnError(f"{op}: {name} must be a finite number, got {value!r}")


def uniform(shape: Any, low: float = 0.0, high: float = 1.0, dtype: Any = None,
            backend: Backend | str | None = None, generator: Generator | None = None
            ) -> Tensor:
    """Floats uniform in ``[low, high)`` (never ``high``, even after rounding to ``dtype``).

    Example:
        >>> burn.uniform((2, 2), -1.0, 1.0).shape
        (2, 2)
    """
    return _uniform("uniform", _shape("uniform", shape), low, high, dtype, backend, generator)


def normal(shape: Any, mean: float = 0.0, std: float = 1.0, dtype: Any = None,
           backend: Backend | str | None = None, generator: Generator | None = None
           ) -> Tensor:
    """Floats from the normal distribution with ``mean`` and ``std`` (Box-Muller; float32
    draws reach about 5.8 standard deviations, float64 about 8.6).

    Example:
        >>> burn.normal(3, mean=10.0, std=0.1).dtype
        cube.float32
    """
    return _normal("normal", _shape("normal", shape), mean, std, dtype, backend, generator)


def _uniform(op: str, shape: tuple[int, ...], low: float, high: float, dtype: Any,
             backend: Backend | str | None, generator: Generator | None) -> Tensor:
    b = resolve_backend(backend)
    dtype = _float_dtype(op, dtype, b)
    _finite(op, low=low, high=high)
    if not low < high:
        raise BurnError(f"{op}: low must be less than high, got low={low}, high={high}")
    largest = _largest(dtype)
    if max(-low, high) > largest or high - low > _largest(register(dtype)):
        raise BurnError(f"{op}: [{low}, {high}) does not fit {dtype.name} (largest value "
                        f"{largest:g})")
    stream = _stream(op, "uniform", generator, shape, dtype)
    return Tensor(b.random_uniform(shape, float(low), float(high), dtype, stream), b)


def _normal(op: str, shape: tuple[int, ...], mean: float, std: float, dtype: Any,
            backend: Backend | str | None, generator: Generator | None) -> Tensor:
    b = resolve_backend(backend)
    dtype = _float_dtype(op, dtype, b)
    _finite(op, mean=mean, std=std)
    if std < 0:
        raise BurnError(f"{op}: std must be >= 0, got {std}")
    stream = _stream(op, "normal", generator, shape, dtype)
    return Tensor(b.random_normal(shape, float(mean), float(std), dtype, stream), b)


def rand(*shape: Any, dtype: Any = None, backend: Backend | str | None = None,
         generator: Generator | None = None) -> Tensor:
    """Floats uniform in ``[0, 1)``: ``rand(2, 3)`` or ``rand((2, 3))``.

    Example:
        >>> burn.rand(2, 3).shape
        (2, 3)
    """
    return _uniform("rand", _varargs_shape("rand", shape), 0.0, 1.0, dtype, backend, generator)


def randn(*shape: Any, dtype: Any = None, backend: Backend | str | None = None,
          generator: Generator | None = None) -> Tensor:
    """Standard normal floats: ``randn(2, 3)`` or ``randn((2, 3))``.

    Example:
        >>> burn.randn(4).shape
        (4,)
    """
    return _normal("randn", _varargs_shape("randn", shape), 0.0, 1.0, dtype, backend, generator)


def randint(low: int, high: Any = None, shape: Any = (), dtype: Any = None,
            backend: Backend | str | None = None, generator: Generator | None = None
            ) -> Tensor:
    """Integers uniform in ``[low, high)``; ``randint(high, shape)`` counts from 0, as torch.

    ``high - low`` may be at most ``2**32`` (``2**63 - 1`` for int64); a span that is not a
    power of two favours small offsets by at most ``span / 2**32`` (``span / 2**63`` for
    int64), as in torch.

    Example:
        >>> burn.randint(0, 6, (2, 5)).shape, burn.randint(6, (3,), dtype=burn.int64).dtype
        ((2, 5), cube.int64)
    """
    if high is None:  # randint(high, shape=...)
        low, high = 0, low
    elif isinstance(high, (tuple, list)):  # randint(high, shape)
        low, high, shape = 0, low, high
    shape, b = _shape("randint", shape), resolve_backend(backend)
    dtype = as_dtype(dtype, dt.int32)
    if not dtype.is_int:
        raise BurnError(f"randint: dtype must be an integer dtype, got {dtype.name}")
    b.check_dtype(dtype, "randint")
    low, high = _as_int(low, "randint", "low"), _as_int(high, "randint", "high")
    _check_int_range(dtype, low, high)
    stream = _stream("randint", "randint", generator, shape, dtype)
    return Tensor(b.random_randint(shape, low, high, dtype, stream), b)


def _check_int_range(dtype: DType, low: int, high: int) -> None:
    info = np.iinfo(dtype.numpy)
    if not info.min <= low < high <= info.max + 1:
        raise BurnError(f"randint: [{low}, {high}) is not a non-empty range of {dtype.name} "
                        f"values ({info.min} to {info.max})")
    most = 2**63 - 1 if dtype.name == "int64" else 2**32
    if high - low > most:
        raise BurnError(f"randint: high - low = {high - low} is more than {most}, the widest "
                        f"span {dtype.name} draws support")


@tensor_method
def bernoulli(p: Any, shape: Any = None, dtype: Any = None,
              backend: Backend | str | None = None, generator: Generator | None = None
              ) -> Tensor:
    """1 with probability ``p``, else 0: ``p`` a float tensor of probabilities (broadcast to
    ``shape`` if given) or a number with a ``shape``. The result has ``p``'s dtype (float32
    for a number) unless ``dtype``; probabilities outside ``[0, 1]`` act as 0 or 1 (NaN as 0).

    Example:
        >>> burn.bernoulli(0.3, (2, 4)).shape, burn.bernoulli(burn.full((3,), 0.5)).dtype
        ((2, 4), cube.float32)
        >>> burn.bernoulli(0.5, 4, dtype=burn.bool).dtype
        cube.bool
    """
    if isinstance(p, Tensor):
        probs = _probability_tensor(p, shape, backend)
    else:
        probs = _probability_number(p, shape, dtype, backend)
    b = probs.backend
    dtype = as_dtype(dtype, probs.dtype)
    b.check_dtype(dtype, "bernoulli")
    stream = _stream("bernoulli", "bernoulli", generator, probs.shape, dtype)
    return Tensor(b.random_bernoulli(probs.prim, dtype, stream), b)


def _probability_tensor(p: Tensor, shape: Any, backend: Backend | str | None) -> Tensor:
    if not p.dtype.is_float:
        raise BurnError(f"bernoulli: p must be a float tensor of probabilities, got "
                        f"{p.dtype.name} of shape {p.shape}")
    if backend is not None and resolve_backend(backend) != p.backend:
        raise BurnError(f"bernoulli: p is on {p.device}, but backend={backend!r} was given")
    if shape is None:
        return p
    shape = _shape("bernoulli", shape)
    if broadcast_shapes("bernoulli", p.shape, shape) != shape:
        raise BurnError(f"bernoulli: p of shape {p.shape} does not broadcast to shape {shape}")
    return expand(p, *shape)


def _probability_number(p: Any, shape: Any, dtype: Any, backend: Backend | str | None
                        ) -> Tensor:
    _finite("bernoulli", p=p)
    if not 0 <= p <= 1:
        raise BurnError(f"bernoulli: p must be in [0, 1], got {p}")
    shape = _shape("bernoulli", () if shape is None else shape)
    b = resolve_backend(backend)
    wide = dtype is not None and as_dtype(dtype) == dt.float64
    # one element broadcast with stride 0: the kernel reads p without a filled tensor
    value = np.asarray(p, np.float64 if wide else np.float32)
    return expand(Tensor(b.from_numpy(value), b), *shape)


def dropout(x: Tensor, p: float = 0.5, training: bool = True,
            generator: Generator | None = None) -> Tensor:
    """Each element zeroed with probability ``p`` and the others scaled by ``1 / (1 - p)``
    (as ``torch.nn.functional.dropout``); ``x`` itself when not ``training`` or ``p == 0``.

    Example:
        >>> sorted(set(burn.dropout(burn.ones(1000), 0.25).tolist()))  # 0 or 1 / 0.75
        [0.0, 1.3333333730697632]
    """
    if not isinstance(x, Tensor):
        raise BurnError(f"dropout: x must be a tensor, got {type(x).__name__}")
    if not x.dtype.is_float:
        raise BurnError(f"dropout: x must be a float tensor, got {x.dtype.name} of shape "
                        f"{x.shape}")
    _finite("dropout", p=p)
    if not 0 <= p <= 1:
        raise BurnError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    stream = _stream("dropout", "dropout", generator, x.shape, x.dtype)
    return Tensor(x.backend.random_dropout(x.prim, float(p), stream), x.backend)
