"""Let Triton's CPU interpreter (``TRITON_INTERPRET=1``) run on NumPy arrays, without torch.

How the interpreter treats an array argument (``triton/runtime/interpreter.py``,
``GridExecutor``), and what this adapter answers at each step:

1. Anything with a ``data_ptr`` attribute is a tensor. Before the grid runs, the interpreter
   "copies it to the host": ``arg.untyped_storage().cpu()`` gives a host storage,
   ``arg.new_empty(0, device="cpu").set_(storage, arg.storage_offset(), arg.size(),
   arg.stride())`` a host tensor over it. Our storage *is* host memory, so ``cpu()`` returns
   the storage itself and ``set_`` makes a second adapter over the same NumPy array: nothing is
   copied, and every store of the kernel lands in the caller's array at once.
2. The host tensor becomes a pointer: ``data_ptr()`` is the address of the array's first
   element and ``str(dtype)`` (``"torch.float32"``; Triton keeps the part after the last dot)
   gives the pointer's element type (``*fp32``). The interpreter then reads and writes raw
   addresses, so a kernel addresses the array by element offsets from its first element.
   That is also why non-contiguous views work in place: the pointer is the view's first
   element and the kernel walks the view's element strides (``stride()``), which the caller
   passes as ints, exactly as for a strided torch tensor.
3. After the grid, ``storage.copy_(host_storage)`` writes results back; here both are the same
   memory, so it is a no-op.

Every cubepy dtype maps to the torch spelling Triton understands: ``bool`` (``torch.bool``,
pointer type ``*u1``, one byte per element like NumPy's), ``int8/16/32/64``,
``uint8/16/32/64`` (``torch.uint32`` and friends: Triton's interpreter accepts all unsigned
widths), ``float16``, ``bfloat16`` (``ml_dtypes.bfloat16`` arrays; ``torch.bfloat16``),
``float32`` and ``float64``.

Example:
    >>> import numpy as np
    >>> x = np.arange(4, dtype=np.float32)
    >>> t = NumpyTensor(x)
    >>> str(t.dtype), t.data_ptr() == x.ctypes.data, t.stride()
    ('torch.float32', True, (1,))
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # bfloat16 NumPy arrays come from ml_dtypes; cubepy works without it
    import ml_dtypes

    _BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is a dependency of the triton extra
    _BFLOAT16 = None

#: NumPy dtype -> cubepy dtype name (the names of ``docs/language.md``).
_NUMPY_TO_CUBEPY: dict[np.dtype, str] = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.float16): "float16",
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
}
if _BFLOAT16 is not None:
    _NUMPY_TO_CUBEPY[_BFLOAT16] = "bfloat16"


class TorchLikeDtype:
    """A dtype whose ``str()`` is torch's spelling (``torch.float32``), which Triton parses.

    ``name`` is the cubepy name (``float32``, ``bfloat16``, ``bool``).

    Example:
        >>> str(TorchLikeDtype("bfloat16"))
        'torch.bfloat16'
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TorchLikeDtype) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("TorchLikeDtype", self.name))


def numpy_dtype_name(dtype: np.dtype) -> str:
    """The cubepy name of a NumPy dtype; raises ``TypeError`` for one cubepy cannot use.

    Example:
        >>> numpy_dtype_name(np.dtype("float16"))
        'float16'
    """
    name = _NUMPY_TO_CUBEPY.get(np.dtype(dtype))
    if name is None:
        supported = ", ".join(sorted(set(_NUMPY_TO_CUBEPY.values())))
        raise TypeError(
            f"NumPy dtype {np.dtype(dtype)} is not a cubepy dtype (supported: {supported})"
        )
    return name


def element_strides(array: np.ndarray) -> tuple[int, ...]:
    """The strides of ``array`` in elements; raises ``ValueError`` if a stride is not whole.

    Example:
        >>> element_strides(np.zeros((3, 4), np.float32)[:, ::2])
        (4, 2)
    """
    itemsize = array.itemsize
    strides = []
    for stride in array.strides:
        if stride % itemsize:
            raise ValueError(
                f"array strides {array.strides} (bytes) are not multiples of its element size "
                f"{itemsize}; copy it first (np.ascontiguousarray)"
            )
        strides.append(stride // itemsize)
    return tuple(strides)


class _HostStorage:
    """The interpreter's view of an array's memory: already on the host, so ``cpu()`` is itself."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def data_ptr(self) -> int:
        return int(self.array.ctypes.data)

    def cpu(self) -> _HostStorage:
        return self

    def copy_(self, other: _HostStorage) -> _HostStorage:
        # The interpreter copies host results back here. Both sides are the same memory for
        # arrays this module made; copying anyway keeps any other pairing correct.
        if other.array is not self.array and other.data_ptr() != self.data_ptr():
            np.copyto(self.array, other.array)
        return self


class NumpyTensor:
    """A NumPy array dressed as the torch tensor Triton's interpreter expects (see the module doc).

    The array is used in place: no copy is made, and the kernel's stores land in it. Pointer
    arithmetic in the kernel is in elements from ``array``'s first element.

    Example:
        >>> a = np.zeros((4, 8), np.float32)
        >>> NumpyTensor(a[1:, ::2]).stride()
        (8, 2)
    """

    def __init__(self, array: np.ndarray) -> None:
        if not isinstance(array, np.ndarray):
            raise TypeError(f"NumpyTensor wraps a NumPy array, got {type(array).__name__}")
        self.array = array
        self.dtype = TorchLikeDtype(numpy_dtype_name(array.dtype))
        self._strides = element_strides(array)
        self.device = "cpu"
        self.is_cuda = False

    # -- the calls Triton's interpreter makes -------------------------------------------------
    def data_ptr(self) -> int:
        """Address of the first element (what a kernel's pointer argument points at)."""
        return int(self.array.ctypes.data)

    def untyped_storage(self) -> _HostStorage:
        """The memory, keyed by its address; its ``cpu()`` is itself (no copy)."""
        return _HostStorage(self.array)

    def new_empty(self, *size: Any, **kwargs: Any) -> NumpyTensor:
        """An adapter the interpreter then points at a storage with ``set_``."""
        return NumpyTensor(self.array)

    def set_(
        self, storage: _HostStorage, offset: int = 0, size: Any = None, stride: Any = None
    ) -> NumpyTensor:
        """View ``storage``; offsets are never non-zero since ``storage_offset()`` is 0."""
        if offset:
            raise ValueError(f"NumpyTensor.set_: unexpected storage offset {offset}")
        self.array = storage.array
        self._strides = element_strides(storage.array)
        return self

    def storage_offset(self) -> int:
        """Always 0: each adapter's storage starts at its first element."""
        return 0

    def size(self, dim: int | None = None) -> Any:
        """The shape (or one extent), as torch's ``size()``."""
        return self.array.shape if dim is None else self.array.shape[dim]

    def stride(self, dim: int | None = None) -> Any:
        """The strides in elements (or one of them), as torch's ``stride()``."""
        return self._strides if dim is None else self._strides[dim]

    def element_size(self) -> int:
        """Bytes per element."""
        return int(self.array.itemsize)

    # -- conveniences a few Triton helpers (TensorWrapper, reinterpret) read ----------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def data(self) -> np.ndarray:
        return self.array

    def numel(self) -> int:
        return int(self.array.size)

    def dim(self) -> int:
        return int(self.array.ndim)

    def cpu(self) -> NumpyTensor:
        return self

    def copy_(self, other: NumpyTensor) -> NumpyTensor:
        if other.data_ptr() != self.data_ptr():
            np.copyto(self.array, other.array)
        return self

    def __repr__(self) -> str:
        shape, dtype = self.array.shape, self.dtype.name
        return f"NumpyTensor(shape={shape}, dtype={dtype}, strides={self._strides})"


def to_interpreter_arg(value: Any) -> Any:
    """Wrap a NumPy array for Triton's interpreter; other values are returned unchanged.

    Example:
        >>> type(to_interpreter_arg(np.zeros(2))).__name__, to_interpreter_arg(3)
        ('NumpyTensor', 3)
    """
    return NumpyTensor(value) if isinstance(value, np.ndarray) else value
