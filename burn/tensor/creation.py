"""Creating tensors: from data, constants and ranges (random ones are in ``random.py``).

Every function takes ``dtype`` (default float32, or the data's) and ``backend`` (a backend
or a device name; default ``burn.default_backend()``).

Example:
    >>> burn.arange(0, 1, 0.25).tolist(), burn.eye(2, dtype=burn.int32).tolist()
    ([0.0, 0.25, 0.5, 0.75], [[1, 0], [0, 1]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType

from ..backend import Backend, BurnError, backend_for, default_backend
from .tensor import Tensor

__all__ = ["arange", "empty", "eye", "from_numpy", "full", "full_like", "linspace", "ones",
           "ones_like", "tensor", "zeros", "zeros_like"]


def resolve_backend(backend: Backend | str | None) -> Backend:
    return default_backend() if backend is None else backend_for(backend)


def _dtype(dtype: Any, default: DType = dt.float32) -> DType:
    if dtype is None:
        return default
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        return dt.from_name(dtype)
    return dt.from_numpy(np.dtype(dtype))


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise BurnError(f"negative size in shape {shape}")
    return shape


def from_numpy(array: np.ndarray, backend: Backend | str | None = None) -> Tensor:
    """A tensor holding a copy of ``array`` (its dtype kept)."""
    b = resolve_backend(backend)
    return Tensor(b.from_numpy(np.asarray(array)), b)


def tensor(data: Any, dtype: Any = None, backend: Backend | str | None = None) -> Tensor:
    """A tensor from nested lists or numbers: floats give float32, ints int32 (int64 when
    they do not fit), bools bool; ``dtype`` overrides."""
    array = np.asarray(data)
    if dtype is None and not isinstance(data, np.ndarray):
        if array.dtype.kind == "f":
            dtype = dt.float32
        elif array.dtype.kind in "iu":
            fits = array.size == 0 or (array.min() >= -(2**31) and array.max() < 2**31)
            dtype = dt.int32 if fits else dt.int64
    if dtype is None:
        dtype = dt.from_numpy(array.dtype)
    dtype = _dtype(dtype)
    if dtype.name in ("float16", "bfloat16") and array.dtype.kind in "iub":
        array = array.astype(np.float32)
    return from_numpy(array.astype(dtype.numpy), backend)


def full(shape: Any, value: Any, dtype: Any = None, backend: Backend | str | None = None
         ) -> Tensor:
    """A tensor of ``shape`` filled with ``value``."""
    if dtype is None:
        dtype = dt.literal_dtype(value) if not isinstance(value, float) else dt.float32
    b = resolve_backend(backend)
    dtype = _dtype(dtype)
    b.check_dtype(dtype, "full")
    return Tensor(b.full(_shape(shape), value, dtype), b)


def zeros(shape: Any, dtype: Any = None, backend: Backend | str | None = None) -> Tensor:
    """A tensor of zeros (float32 unless ``dtype``)."""
    return full(shape, 0, _dtype(dtype), backend)


def ones(shape: Any, dtype: Any = None, backend: Backend | str | None = None) -> Tensor:
    """A tensor of ones (float32 unless ``dtype``)."""
    return full(shape, 1, _dtype(dtype), backend)


def zeros_like(x: Tensor, dtype: Any = None) -> Tensor:
    return full(x.shape, 0, _dtype(dtype, x.dtype), x.backend)


def ones_like(x: Tensor, dtype: Any = None) -> Tensor:
    return full(x.shape, 1, _dtype(dtype, x.dtype), x.backend)


def full_like(x: Tensor, value: Any, dtype: Any = None) -> Tensor:
    return full(x.shape, value, _dtype(dtype, x.dtype), x.backend)


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
    dtype = _dtype(dtype)
    b.check_dtype(dtype, "arange")
    return Tensor(b.arange(start, step, n, dtype), b)


def linspace(start: float, stop: float, steps: int, dtype: Any = None,
             backend: Backend | str | None = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``stop`` (both included)."""
    if steps < 0:
        raise BurnError(f"linspace: steps must be >= 0, got {steps}")
    b = resolve_backend(backend)
    dtype = _dtype(dtype)
    b.check_dtype(dtype, "linspace")
    return Tensor(b.linspace(float(start), float(stop), int(steps), dtype), b)


def eye(n: int, m: int | None = None, dtype: Any = None,
        backend: Backend | str | None = None) -> Tensor:
    """The ``n x m`` identity (``m`` defaults to ``n``)."""
    b = resolve_backend(backend)
    dtype = _dtype(dtype)
    b.check_dtype(dtype, "eye")
    return Tensor(b.eye(int(n), int(n if m is None else m), dtype), b)


def empty(shape: Sequence[int], dtype: Any = None, backend: Backend | str | None = None
          ) -> Tensor:
    """An uninitialized tensor."""
    b = resolve_backend(backend)
    return Tensor(b.new(_shape(shape), _dtype(dtype)), b)
