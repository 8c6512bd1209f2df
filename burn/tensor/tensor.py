"""``Tensor``: a strided view on a backend, immutable; every op returns a new tensor.

Op families add their methods with ``@tensor_method`` from their own modules
(``elementwise.py``, ``views.py``, ``reduce.py``, ...), so this file stays the core: dtype,
shape, device, conversion and printing.

Example:
    >>> t = burn.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> t.shape, t.dtype, t.T.shape
    ((2, 3), cube.float32, (3, 2))
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from kernels.layout import View

from ..backend.base import Backend, BurnError


class Tensor:
    """An n-d array on a backend (see the module docstring)."""

    __slots__ = ("prim", "backend", "__weakref__")
    __array_priority__ = 1000  # NumPy defers `ndarray <op> Tensor` to the tensor

    def __init__(self, view: View, backend: Backend):
        self.prim = view
        self.backend = backend

    # ---- what it is ----

    @property
    def shape(self) -> tuple[int, ...]:
        return self.prim.shape

    @property
    def dtype(self) -> DType:
        return self.prim.dtype

    @property
    def ndim(self) -> int:
        return len(self.prim.shape)

    @property
    def device(self) -> str:
        return self.backend.device

    def numel(self) -> int:
        """The number of elements."""
        return self.prim.numel

    def size(self, axis: int | None = None) -> Any:
        """The shape, or the size of one axis."""
        return self.shape if axis is None else self.shape[normalize_axis(axis, self.ndim, "size")]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def is_contiguous(self) -> bool:
        return self.prim.is_contiguous

    # ---- conversion ----

    def numpy(self) -> np.ndarray:
        """A NumPy copy (bfloat16 as ``ml_dtypes.bfloat16``)."""
        return self.backend.to_numpy(self.prim)

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise BurnError(f"item(): the tensor has {self.numel()} elements (shape "
                            f"{self.shape}); only one-element tensors convert to a number")
        return self.numpy().reshape(-1)[0].item()

    def to(self, target: Any) -> Tensor:
        """A copy on another backend/device (``"cpu"``, ``"cuda"``, ``"wgpu"``, ``"numpy"``
        or a backend; between an ``Autodiff`` backend and the one it wraps, the same storage,
        untracked), or converted to a dtype (``burn.float16``, ``"float16"`` or a NumPy
        dtype such as ``np.float16``, as the creation functions accept)."""
        dtype = _dtype_of(target)
        if dtype is not None:
            if dtype == self.dtype:
                return self
            # refused here, naming the dtype, as creating such a tensor is (not deep in a kernel)
            self.backend.check_dtype(dtype, f"to({dtype.name})")
            return Tensor(self.backend.cast(self.prim, dtype), self.backend)
        from ..backend import backend_for

        try:
            backend = backend_for(target)
        except BurnError as error:
            if not isinstance(target, str):
                raise
            raise BurnError(f"to({target!r}): neither a device nor a dtype ({error}; dtypes are "
                            f"{', '.join(d.name for d in dt.ALL)})") from None
        if backend == self.backend:  # the same device, maybe another Backend object
            return self
        adopted = backend.adopt(self.prim, self.backend)  # into or out of a wrapper backend
        if adopted is not None:
            return Tensor(adopted, backend)
        return Tensor(backend.from_numpy(self.numpy()), backend)

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="Tensor(")
        return f"Tensor({body}, dtype={self.dtype.name}, backend={self.backend.name})"

    def __bool__(self) -> bool:
        if self.numel() != 1:  # `if x > 0:` on a whole tensor: say what to write instead
            raise BurnError(f"the truth value of a tensor of {self.numel()} elements (shape "
                            f"{self.shape}) is ambiguous; use .any() or .all()")
        return bool(self.item())

    def __setitem__(self, key: Any, value: Any) -> None:
        raise BurnError("tensors are immutable: x[...] = value is not supported; build a new "
                        "tensor with burn.where(mask, value, x), x.masked_fill(mask, value) or "
                        "x.scatter_add(axis, index, src)")

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_float:
            raise TypeError("only integer tensors can be used as an index")
        return int(self.item())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def _dtype_of(target: Any) -> DType | None:
    """``target`` as a dtype (a ``DType``, its name, a NumPy dtype or scalar type), or None."""
    if isinstance(target, DType):
        return target
    if isinstance(target, str):
        return dt.BY_NAME.get(target)
    if isinstance(target, np.dtype) or (isinstance(target, type) and
                                        issubclass(target, np.generic)):
        try:
            return dt.from_numpy(target)
        except TypeError as error:
            raise BurnError(f"to: {error}") from None
    return None


def wrap(view: View, backend: Backend) -> Tensor:
    """A tensor of ``view`` on ``backend`` (for op modules)."""
    return Tensor(view, backend)


def tensor_method(fn: Callable[..., Any], *names: str) -> Callable[..., Any]:
    """Attach ``fn`` to ``Tensor`` under its own name (and ``names``); returns ``fn``.

    Example:
        >>> @tensor_method
        ... def double(x): return x * 2
    """
    for name in (fn.__name__, *names):
        setattr(Tensor, name, fn)
    return fn


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """``axis`` in ``range(ndim)`` (negative counts from the end), or ``BurnError``."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise BurnError(f"{op}: axis must be an int, got {axis!r}")
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise BurnError(f"{op}: axis {axis} is out of range for a tensor of {ndim} dimensions")
    return int(axis) % max(ndim, 1)


def normalize_axes(axes: Any, ndim: int, op: str) -> tuple[int, ...]:
    """``None`` (every axis), an int or a sequence of ints, as sorted distinct axes."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    if not isinstance(axes, Iterable):
        raise BurnError(f"{op}: axis must be an int, a sequence of ints or None, got {axes!r}")
    result = sorted({normalize_axis(a, ndim, op) for a in axes})
    if len(result) != len(tuple(axes)):
        raise BurnError(f"{op}: repeated axis in {tuple(axes)}")
    return tuple(result)


def int_arg(value: Any, op: str, what: str) -> int:
    """``value`` as an int (a Python or NumPy integer, or anything with ``__index__``), or
    ``BurnError``: a float or a string is refused, never truncated or parsed."""
    if isinstance(value, (bool, np.bool_)):
        raise BurnError(f"{op}: {what} must be an int, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise BurnError(f"{op}: {what} must be an int, got {value!r}") from None


def same_backend(op: str, *tensors: Tensor) -> Backend:
    """The one backend of ``tensors``, or ``BurnError`` naming the op and both devices."""
    backend = tensors[0].backend
    for t in tensors[1:]:
        if t.backend is backend:  # the common case, without Backend.__eq__'s call
            continue
        if t.backend != backend and t.backend.device == backend.device:
            # one device, two backends: an Autodiff backend's tensor and its inner one's
            raise BurnError(f"{op}: tensors are on different backends ({backend!r} and "
                            f"{t.backend!r}) of one device; create both on one backend, or use "
                            ".detach() / .inner() to leave the Autodiff backend's graph")
        if t.backend != backend:
            raise BurnError(f"{op}: tensors are on different devices ({backend.device} and "
                            f"{t.backend.device}); move one with .to({backend.name!r})")
    return backend
