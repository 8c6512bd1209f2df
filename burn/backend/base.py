"""What every burn backend is: a place tensors live, an allocator, and the op families.

A backend's tensors are ``kernels.layout.View`` values: flat storage native to the backend, an
element offset, a shape and element strides. Views (reshape, permute, slicing, expand, flip)
are computed once in ``burn.tensor`` on those layouts; backends only run ops, each defined by
the protocol classes in ``burn.backend.ops``.

Example:
    >>> b = burn.backend.NumPy()
    >>> v = b.from_numpy(np.arange(6.0).reshape(2, 3))
    >>> b.to_numpy(v.with_layout(0, (3, 2), (1, 3))).tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from cubepy.runtime import trace
from kernels.layout import View, check_int32, contiguous_strides, new_view

from . import bounds

#: distinct constants a backend keeps on its device before it starts over
CONSTANT_CACHE_SIZE = 4096


class BurnError(ValueError):
    """Bad input to a burn op: the message names the op, the shapes and the dtypes."""


class Backend(ABC):
    """Storage and data movement; the op families come from the mixins in ``ops``."""

    name: str = "backend"
    #: dtypes this backend can store and compute (the op table in the README lists the rest)
    dtypes: frozenset[str] = frozenset(d.name for d in dt.ALL)

    @property
    def device(self) -> str:
        """The device string tensors of this backend report (``"cpu"``, ``"cuda:0"``, ...)."""
        return self.name

    @abstractmethod
    def allocate(self, numel: int, dtype: DType) -> Any:
        """Flat storage for ``numel`` elements of ``dtype`` (contents undefined)."""

    @abstractmethod
    def storage_from_numpy(self, flat: np.ndarray) -> Any:
        """Flat storage holding a copy of the 1-D contiguous host array ``flat``."""

    @abstractmethod
    def storage_to_numpy(self, storage: Any, dtype: DType) -> np.ndarray:
        """The 1-D host array of ``storage``'s elements (a copy or the storage itself)."""

    def new(self, shape: Sequence[int], dtype: DType) -> View:
        """A fresh contiguous view of ``shape``."""
        self.check_dtype(dtype, "new tensor")
        return new_view(self.allocate, shape, dtype, "a tensor")

    def from_numpy(self, array: np.ndarray) -> View:
        """A contiguous tensor view holding a copy of ``array``."""
        try:
            dtype = dt.from_numpy(array.dtype)
        except TypeError as error:  # strings, objects, complex, uint64: name the op
            raise BurnError(f"from_numpy: {error}") from None
        self.check_dtype(dtype, "from_numpy")
        # kernels read storage in native byte order: a big-endian array (read from a file
        # with dtype '>f4') is converted, not reinterpreted
        flat = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("=")).reshape(-1)
        check_int32(flat.size, "a tensor")
        if flat.size == 0:  # storage is never empty: kernels take its address
            flat = np.zeros(1, array.dtype)
        storage = self.storage_from_numpy(flat)
        if dtype.is_int and array.size:  # index checks then need not read it back
            bounds.remember(storage, flat)
        return View(storage, 0, tuple(array.shape), contiguous_strides(array.shape), dtype)

    def constant(self, scalar: np.ndarray) -> View:
        """A 0-d view holding the 0-d array ``scalar``, shared by every call with the same
        dtype and bits. Tensors are never mutated, so one copy serves them all: a Python
        number in ``x * 0.5`` reaches the device once, not at every call (on a GPU each
        upload would wait for the work queued before it)."""
        if trace.active is not None:  # a replay would read this same number again
            trace.note("a number as a tensor", value=scalar.item())
        return self._kept("_constants", (scalar.dtype.name, scalar.tobytes()),
                          lambda: self.constant_view(scalar))

    def number(self, value: int | float, dtype: DType) -> View:
        """``constant`` of the Python int or float ``value`` as ``dtype``, found by the number
        itself when seen before (``x * 0.5`` in a loop): the NumPy scalar ``constant`` is
        keyed by costs a few microseconds an op to build.

        Example:
            >>> b = burn.Cpu()
            >>> b.number(0.5, burn.float32) is b.number(0.5, burn.float32)
            True
        """
        if trace.active is not None:  # a captured step notes every number: no shortcut
            return self.constant(number_array(value, dtype))
        # by type and bits: 1 and 1.0, and 0.0 and -0.0, are different constants
        key = (dtype.name, type(value), value.hex() if type(value) is float else value)
        return self._kept("_numbers", key, lambda: self.constant(number_array(value, dtype)))

    def _kept(self, table: str, key: Any, make: Callable[[], View]) -> View:
        """The view kept under ``key`` in this backend's cache ``table``, made by ``make`` on a
        miss (the table emptied when it holds ``CONSTANT_CACHE_SIZE``)."""
        cache = self.__dict__.setdefault(table, {})
        view = cache.get(key)
        if view is None:
            if len(cache) >= CONSTANT_CACHE_SIZE:
                cache.clear()
            view = cache[key] = make()
        return view

    def constant_view(self, scalar: np.ndarray) -> View:
        """A new 0-d view holding ``scalar`` (``constant`` keeps them)."""
        return self.from_numpy(scalar)

    def to_numpy(self, view: View) -> np.ndarray:
        """A host copy of ``view`` with its shape."""
        flat = self.storage_to_numpy(view.storage, view.dtype)
        return np.array(strided_numpy(flat, view), copy=True)

    @property
    def wraps(self) -> Backend | None:
        """The backend this one wraps (``Autodiff``, ``Fusion``), or None."""
        return None

    def unwrapped_view(self, view: View) -> View:
        """``view`` as a view of ``self.wraps``: wrappers whose storage differs override it."""
        return View(view.storage, view.offset, view.shape, view.strides, view.dtype)

    def adopt(self, view: View, source: Backend) -> View | None:
        """``view`` of ``source`` as a view of this backend without a copy, or None when the
        two do not share storage. Wrappers share it with the backends they wrap, so
        ``Tensor.to`` moves between ``Autodiff(Fusion(Cuda()))`` and ``Cuda()`` without a
        round trip through the host."""
        inner = self.wraps
        while inner is not None:  # into a wrapper: an inner view is a view of the wrapper
            if inner == source:
                return View(view.storage, view.offset, view.shape, view.strides, view.dtype)
            inner = inner.wraps
        while source.wraps is not None:  # out of a wrapper, one level at a time
            view, source = source.unwrapped_view(view), source.wraps
            if source == self:
                return view
        return None

    def check_dtype(self, dtype: DType, op: str) -> None:
        """Raise ``BurnError`` if this backend cannot hold ``dtype``."""
        if dtype.name not in self.dtypes:
            raise BurnError(f"{op}: dtype {dtype.name} is not supported on the {self.name} "
                            f"backend; it supports {', '.join(sorted(self.dtypes))}")

    def __eq__(self, other: object) -> bool:
        # `backend=burn.Cpu()` twice makes two objects over one pool and device: their
        # tensors mix (``same_backend``), as those of ``backend="cpu"`` do
        return (isinstance(other, Backend) and type(self) is type(other)
                and self.device == other.device)

    def __hash__(self) -> int:
        return hash((type(self), self.device))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class WrapperBackend(Backend):
    """A backend over another (``Autodiff``, ``Fusion``): the inner backend's device, dtypes
    and storage; two wrappers of one kind over equal backends are equal."""

    def __init__(self, inner: Backend, prefix: str):
        self.inner = inner
        self.name = f"{prefix}-{inner.name}"
        self.dtypes = inner.dtypes

    @property
    def device(self) -> str:
        return self.inner.device

    @property
    def wraps(self) -> Backend:
        return self.inner

    def allocate(self, numel: int, dtype: DType) -> Any:
        return self.inner.allocate(numel, dtype)

    def storage_from_numpy(self, flat: np.ndarray) -> Any:
        return self.inner.storage_from_numpy(flat)

    def storage_to_numpy(self, storage: Any, dtype: DType) -> np.ndarray:
        return self.inner.storage_to_numpy(storage, dtype)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.inner == other.inner  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.inner))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


def strided_numpy(flat: np.ndarray, view: View) -> np.ndarray:
    """``view`` over the host array ``flat`` as a NumPy view (no copy)."""
    if view.numel == 0:
        return np.empty(view.shape, flat.dtype)
    item = flat.dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat[view.offset:], view.shape,
                                           [s * item for s in view.strides])


def number_array(value: int | float, dtype: DType) -> np.ndarray:
    """``value`` as a 0-d array of ``dtype`` (16-bit floats through float32, as NumPy has no
    bfloat16 conversion from a Python float)."""
    array = np.asarray(value, dtype=np.float64 if dtype.is_float else None)
    if dtype.name in ("float16", "bfloat16"):
        array = array.astype(np.float32)
    return array.astype(dtype.numpy).reshape(())
