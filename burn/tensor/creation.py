"""Creating tensors: from data, constants and ranges (random ones are in ``random.py``).

Every function takes ``dtype`` (default float32, or the data's) and ``backend`` (a backend
or a device name; default ``burn.default_backend()``).

Example:
    >>> burn.arange(0, 1, 0.25).tolist(), burn.eye(2, dtype=burn.int32).tolist()
    ([0.0, 0.25, 0.5, 0.75], [[1, 0], [0, 1]])
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType

from ..backend import Backend, BurnError, backend_for, bounds, default_backend
from .elementwise import Scalar, check_scalar
from .tensor import Tensor, int_arg

__all__ = ["arange", "empty", "eye", "from_numpy", "full", "full_like", "linspace", "ones",
           "ones_like", "tensor", "zeros", "zeros_like"]


def resolve_backend(backend: Backend | str | None) -> Backend:
    return default_backend() if backend is None else backend_for(backend)


def _dtype(dtype: Any, default: DType = dt.float32, op: str | None = None) -> DType:
    if dtype is None:
        return default
    if isinstance(dtype, DType):
        return dtype
    try:
        return dt.from_name(dtype) if isinstance(dtype, str) else dt.from_numpy(np.dtype(dtype))
    except TypeError as error:
        where = f"{op}: " if op else ""
        # zeros(2, 3) passes 3 as the dtype: torch's spelling of a shape, not burn's
        hint = (f"; a shape is one argument, a tuple: {op}((2, 3)), not {op}(2, 3)"
                if op and isinstance(dtype, (int, np.integer)) else "")
        raise BurnError(f"{where}{dtype!r} is not a dtype ({error}){hint}") from None


def _shape(shape: Any, op: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if isinstance(shape, str) or not isinstance(shape, Iterable):
        raise BurnError(f"{op}: a shape must be an int or a sequence of ints, got {shape!r}")
    shape = tuple(int_arg(s, op, "sizes") for s in shape)  # 2.5 is refused, not truncated
    if any(s < 0 for s in shape):
        raise BurnError(f"{op}: negative size in shape {shape}")
    return shape


def from_numpy(array: np.ndarray, backend: Backend | str | None = None) -> Tensor:
    """A tensor holding a copy of ``array`` (its dtype kept)."""
    b = resolve_backend(backend)
    return Tensor(b.from_numpy(np.asarray(array)), b)


def tensor(data: Any, dtype: Any = None, backend: Backend | str | None = None) -> Tensor:
    """A tensor from nested lists or numbers: floats give float32, ints int32 (int64 when
    they do not fit), bools bool; NumPy arrays and scalars keep their dtype; ``dtype``
    overrides. Python ints out of the dtype's range are refused, as ``np.array`` does."""
    try:
        array = np.asarray(data)
    except ValueError as error:  # ragged nesting: [[1, 2], [3]]
        raise BurnError(f"tensor: cannot make a tensor of {reprlib.repr(data)}: the nested lists "
                        f"have different lengths ({error})") from None
    from_python = not isinstance(data, (np.ndarray, np.generic))
    if dtype is None and from_python:
        if array.dtype.kind == "f":
            dtype = dt.float32
        elif array.dtype.kind in "iu":
            fits = array.size == 0 or (array.min() >= -(2**31) and array.max() < 2**31)
            dtype = dt.int32 if fits else dt.int64
    if dtype is None:
        try:
            dtype = dt.from_numpy(array.dtype)
        except TypeError as error:  # strings, None, ints beyond 64 bits
            raise BurnError(f"tensor: cannot make a tensor of {data!r}: {error}") from None
    dtype = _dtype(dtype, op="tensor")
    if from_python and array.size and array.dtype.kind in "iu" and dtype.kind in "iu":
        fix = "pass a dtype that holds it, e.g. dtype=burn.int64"
        check_scalar("tensor", int(array.min()), dtype, fix)  # -1 as uint8 would wrap around
        check_scalar("tensor", int(array.max()), dtype, fix)
    if dtype.name in ("float16", "bfloat16") and array.dtype.kind in "iub":
        array = array.astype(np.float32)
    return from_numpy(array.astype(dtype.numpy), backend)


def full(shape: Any, value: Any, dtype: Any = None, backend: Backend | str | None = None
         ) -> Tensor:
    """A tensor of ``shape`` filled with ``value``."""
    return _full("full", shape, value, dtype, backend)


def _full(op: str, shape: Any, value: Any, dtype: Any, backend: Backend | str | None
          ) -> Tensor:
    if not isinstance(value, Scalar):
        raise BurnError(f"{op}: the fill value must be a number, got {type(value).__name__}")
    if dtype is None:
        dtype = dt.literal_dtype(value) if not isinstance(value, float) else dt.float32
    b = resolve_backend(backend)
    dtype = _dtype(dtype, op=op)
    b.check_dtype(dtype, op)
    # full(3, -1, dtype=burn.uint8) is refused, as NumPy does, not wrapped around
    check_scalar(op, value, dtype, "pass a dtype that holds it, e.g. dtype=burn.int64")
    return Tensor(b.full(_shape(shape, op), value, dtype), b)


def zeros(shape: Any, dtype: Any = None, backend: Backend | str | None = None) -> Tensor:
    """A tensor of zeros (float32 unless ``dtype``)."""
    return _full("zeros", shape, 0, _dtype(dtype, op="zeros"), backend)


def ones(shape: Any, dtype: Any = None, backend: Backend | str | None = None) -> Tensor:
    """A tensor of ones (float32 unless ``dtype``)."""
    return _full("ones", shape, 1, _dtype(dtype, op="ones"), backend)


def zeros_like(x: Tensor, dtype: Any = None) -> Tensor:
    return _full("zeros_like", x.shape, 0, _dtype(dtype, x.dtype, "zeros_like"), x.backend)


def ones_like(x: Tensor, dtype: Any = None) -> Tensor:
    return _full("ones_like", x.shape, 1, _dtype(dtype, x.dtype, "ones_like"), x.backend)


def full_like(x: Tensor, value: Any, dtype: Any = None) -> Tensor:
    return _full("full_like", x.shape, value, _dtype(dtype, x.dtype, "full_like"), x.backend)


def arange(start: float, stop: float | None = None, step: float = 1, dtype: Any = None,
           backend: Backend | str | None = None) -> Tensor:
    """``start, start + step, ...`` below ``stop`` (``arange(n)`` counts from 0); int32 when
    every argument is an int, else float32."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise BurnError("arange: step must not be 0")
    n = max(0, math.ceil((stop - start) / step))
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dtype = dt.int32 if ints else dt.float32
    b = resolve_backend(backend)
    dtype = _dtype(dtype, op="arange")
    b.check_dtype(dtype, "arange")
    result = Tensor(b.arange(start, step, n, dtype), b)
    if n and not dtype.is_float:  # its bounds, so an index check reads nothing back
        ends = (int(start), int(start + (n - 1) * step))
        bounds.remember_range(getattr(result.prim, "storage", None), min(ends), max(ends))
    return result


def linspace(start: float, stop: float, steps: int, dtype: Any = None,
             backend: Backend | str | None = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``stop`` (both included)."""
    steps = int_arg(steps, "linspace", "steps")
    if steps < 0:
        raise BurnError(f"linspace: steps must be >= 0, got {steps}")
    b = resolve_backend(backend)
    dtype = _dtype(dtype, op="linspace")
    b.check_dtype(dtype, "linspace")
    return Tensor(b.linspace(float(start), float(stop), int(steps), dtype), b)


def eye(n: int, m: int | None = None, dtype: Any = None,
        backend: Backend | str | None = None) -> Tensor:
    """The ``n x m`` identity (``m`` defaults to ``n``)."""
    rows, cols = int_arg(n, "eye", "n"), int_arg(n if m is None else m, "eye", "m")
    if rows < 0 or cols < 0:
        raise BurnError(f"eye: sizes must be >= 0, got n={rows}, m={cols}")
    b = resolve_backend(backend)
    dtype = _dtype(dtype, op="eye")
    b.check_dtype(dtype, "eye")
    return Tensor(b.eye(rows, cols, dtype), b)


def empty(shape: Sequence[int], dtype: Any = None, backend: Backend | str | None = None
          ) -> Tensor:
    """An uninitialized tensor."""
    b = resolve_backend(backend)
    return Tensor(b.new(_shape(shape, "empty"), _dtype(dtype, op="empty")), b)
