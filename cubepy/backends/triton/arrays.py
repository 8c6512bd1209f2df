"""Array arguments of a ``triton`` launch: what they are, where they live, what Triton gets.

A launch argument is one of:

- a NumPy array: on the interpreter it becomes an ``adapter.NumpyTensor`` (used in place);
  on a real GPU it is an error naming the argument (a host pointer would fault on the device);
- a torch tensor (anything with ``data_ptr()`` and ``dtype``): passed unchanged, since that
  is what ``triton.jit``'s launcher reads (``data_ptr()`` for the address, ``str(dtype)``
  for the pointer type);
- an object with ``__cuda_array_interface__`` (CuPy, Numba, JAX on CUDA): wrapped in a
  ``DevicePointer``, a tiny object with those two members;
- an object with only ``__dlpack__``/``__dlpack_device__``: its DLPack capsule is read with
  ``ctypes`` (no framework needed) into a ``DevicePointer`` that keeps the capsule alive;
  a DLPack array on the CPU becomes a NumPy view (``np.from_dlpack``), then as above.

Everything else (ints, floats, ``None``) is not an array and passes through.

Example:
    >>> import numpy as np
    >>> x = np.zeros(4, np.float32)
    >>> args = prepare_launch_args({"x": x, "n": 4}, interpreter=True)
    >>> type(args["x"]).__name__, args["n"], array_device(x), array_dtype_name(x)
    ('NumpyTensor', 4, 'cpu', 'float32')
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import LaunchError
from ..hostarrays import check_strides
from .adapter import NumpyTensor, TorchLikeDtype, numpy_dtype_name

INT32_MAX = 2**31 - 1

# DLPack device types (dlpack.h)
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_ROCM, _DL_ROCM_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 10, 11, 13
# DLPack dtype codes: kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool
_DL_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@dataclass(frozen=True)
class DevicePointer:
    """What Triton's launcher needs of a device array: ``data_ptr()`` and ``dtype``.

    ``owner`` keeps the array (or its DLPack capsule) alive while the launch uses the address.

    Example:
        >>> p = DevicePointer(0x7F0000000000, TorchLikeDtype("float16"), (4,), (1,), "cuda:0", None)
        >>> str(p.dtype), p.data_ptr() == 0x7F0000000000
        ('torch.float16', True)
    """

    address: int
    dtype: TorchLikeDtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    device: str
    owner: Any

    def data_ptr(self) -> int:
        return self.address


def _dtype_from_typestr(typestr: str) -> str:
    try:
        return numpy_dtype_name(np.dtype(typestr))
    except TypeError:
        raise
    except Exception as err:  # e.g. "<V2" for a bfloat16 buffer
        raise TypeError(f"array type {typestr!r} is not a cubepy dtype") from err


def _dlpack_dtype(code: int, bits: int, lanes: int) -> str:
    kind = _DL_CODES.get(code)
    if kind is None or lanes != 1:
        raise TypeError(
            f"DLPack dtype (code={code}, bits={bits}, lanes={lanes}) is not a cubepy dtype"
        )
    if kind == "bool":
        return "bool"
    if kind == "bfloat":
        if bits != 16:
            raise TypeError(f"DLPack bfloat{bits} is not a cubepy dtype")
        return "bfloat16"
    return f"{kind}{bits}"


def _device_name(device_type: int, device_id: int) -> str:
    if device_type in (_DL_CPU, _DL_CUDA_HOST, _DL_ROCM_HOST):
        return "cpu"
    if device_type in (_DL_CUDA, _DL_CUDA_MANAGED, _DL_ROCM):
        return f"cuda:{device_id}"  # torch's convention: ROCm devices are "cuda" too
    raise TypeError(f"DLPack device type {device_type} is neither the CPU nor a CUDA/ROCm GPU")


def read_dlpack(obj: Any) -> DevicePointer:
    """Read an object's DLPack capsule (``__dlpack__()``) without any framework.

    The capsule is not consumed: it stays in ``owner``, and the producer's memory stays alive
    as long as the returned ``DevicePointer`` (dropping the capsule calls its deleter).

    Example:
        >>> import numpy as np
        >>> p = read_dlpack(np.arange(6, dtype=np.int16).reshape(2, 3)[:, 1:])
        >>> p.shape, p.strides, p.device, p.dtype.name
        ((2, 2), (3, 1), 'cpu', 'int16')
    """
    capsule = obj.__dlpack__()
    address = _capsule_get_pointer(capsule, b"dltensor")
    if not address:  # pragma: no cover - PyCapsule_GetPointer sets the Python error itself
        raise TypeError(f"{type(obj).__name__}.__dlpack__() did not return a DLPack tensor capsule")
    # DLManagedTensor starts with its DLTensor, so the capsule's pointer is the DLTensor's.
    tensor = _DLTensor.from_address(address)
    ndim = int(tensor.ndim)
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    if tensor.strides:
        strides = tuple(int(tensor.strides[i]) for i in range(ndim))
    else:  # NULL strides: compact row-major
        strides, step = [], 1
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= extent
        strides = tuple(strides)
    name = _dlpack_dtype(tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
    return DevicePointer(
        address=int(tensor.data or 0) + int(tensor.byte_offset),
        dtype=TorchLikeDtype(name),
        shape=shape,
        strides=strides,
        device=_device_name(tensor.device.device_type, tensor.device.device_id),
        owner=(obj, capsule),
    )


def _is_torch_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "data_ptr")


def is_array(value: Any) -> bool:
    """Whether ``value`` is an array argument (NumPy, torch, CUDA array interface, DLPack).

    Example:
        >>> is_array(np.zeros(1)), is_array(3), is_array(np.float32(1))
        (True, False, False)
    """
    return (
        isinstance(value, (np.ndarray, NumpyTensor, DevicePointer))
        or _is_torch_tensor(value)
        or hasattr(value, "__cuda_array_interface__")
        or (hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"))
    )


def array_dtype_name(arr: Any) -> str:
    """The cubepy dtype name of an array argument: ``"float32"``, ``"bfloat16"``, ``"bool"``...

    Example:
        >>> import ml_dtypes
        >>> array_dtype_name(np.zeros(2, ml_dtypes.bfloat16))
        'bfloat16'
    """
    if isinstance(arr, np.ndarray):
        return numpy_dtype_name(arr.dtype)
    if isinstance(arr, (NumpyTensor, DevicePointer)):
        return arr.dtype.name
    if _is_torch_tensor(arr):
        name = str(arr.dtype).rpartition(".")[2]
        return {"half": "float16", "float": "float32", "double": "float64"}.get(name, name)
    cai = getattr(arr, "__cuda_array_interface__", None)
    if cai is not None:
        return _dtype_from_typestr(cai["typestr"])
    if hasattr(arr, "__dlpack__"):
        return read_dlpack(arr).dtype.name
    raise TypeError(f"{type(arr).__name__} is not an array")


def array_device(arr: Any) -> str:
    """``"cpu"`` or ``"cuda:N"`` for an array argument.

    Example:
        >>> array_device(np.zeros(2))
        'cpu'
    """
    if isinstance(arr, (np.ndarray, NumpyTensor)):
        return "cpu"
    if isinstance(arr, DevicePointer):
        return arr.device
    if _is_torch_tensor(arr):
        device = arr.device
        return "cpu" if device.type == "cpu" else f"cuda:{device.index or 0}"
    if hasattr(arr, "__dlpack_device__"):
        device_type, device_id = arr.__dlpack_device__()
        return _device_name(int(device_type), int(device_id))
    if hasattr(arr, "__cuda_array_interface__"):
        device = getattr(arr, "device", None)  # CuPy's Device has .id; the interface has none
        return f"cuda:{int(getattr(device, 'id', 0) or 0)}"
    raise TypeError(f"{type(arr).__name__} is not an array")


def _shape_strides(arr: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(arr, np.ndarray):
        itemsize = arr.itemsize
        return tuple(arr.shape), tuple(s // itemsize for s in arr.strides)
    if isinstance(arr, (NumpyTensor, DevicePointer)):
        return tuple(arr.shape), tuple(
            arr.stride() if isinstance(arr, NumpyTensor) else arr.strides
        )
    if _is_torch_tensor(arr):
        return tuple(arr.shape), tuple(arr.stride())
    cai = getattr(arr, "__cuda_array_interface__", None)
    if cai is not None:
        return _cai_shape_strides(cai)
    pointer = read_dlpack(arr)
    return pointer.shape, pointer.strides


def _cai_shape_strides(cai: Mapping[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = tuple(int(s) for s in cai["shape"])
    itemsize = np.dtype(cai["typestr"]).itemsize
    if cai.get("strides") is None:  # C-contiguous
        strides, step = [], 1
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= extent
        return shape, tuple(strides)
    return shape, tuple(int(s) // itemsize for s in cai["strides"])


def needs_int64(arr: Any) -> bool:
    """Whether element offsets into ``arr`` can pass ``2**31 - 1`` (its span is larger).

    The span is one more than the largest element offset from the first element:
    ``1 + sum((extent - 1) * |stride|)``. Kernels index in elements, so this decides whether
    their offset arithmetic must be int64.

    Example:
        >>> from numpy.lib.stride_tricks import as_strided
        >>> needs_int64(np.zeros(8)), needs_int64(as_strided(np.zeros(1), (2,), (2**31 * 8,)))
        (False, True)
    """
    shape, strides = _shape_strides(arr)
    if any(extent == 0 for extent in shape):
        return False
    span = 1 + sum((extent - 1) * abs(stride) for extent, stride in zip(shape, strides))
    return span > INT32_MAX


def host_array_on_gpu_error(name: str) -> LaunchError:
    """The error for a NumPy array launched on a real GPU."""
    return LaunchError(
        f"argument {name!r} is a NumPy (host) array; pass a CUDA array (cupy/torch) or "
        f"cube.asarray({name}, device='cuda')"
    )


def to_launch_arg(name: str, value: Any, *, interpreter: bool) -> Any:
    """The object ``triton.jit`` gets for one argument (non-arrays are returned unchanged).

    Example:
        >>> try:
        ...     to_launch_arg("x", np.zeros(2), interpreter=False)
        ... except LaunchError as err:
        ...     print(err)  # doctest: +ELLIPSIS
        argument 'x' is a NumPy (host) array; pass a CUDA array (cupy/torch) or cube.asarray(...)
    """
    if isinstance(value, np.ndarray):
        if not interpreter:
            raise host_array_on_gpu_error(name)
        check_strides(value.strides, value.dtype.itemsize, name)
        return NumpyTensor(value)
    if isinstance(value, (NumpyTensor, DevicePointer)) or _is_torch_tensor(value):
        # torch tensors go as they are on both paths: Triton's interpreter copies CUDA tensors
        # to the host and back itself.
        return value
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        if interpreter:
            raise LaunchError(
                f"argument {name!r} is a CUDA array but the triton target runs on the interpreter "
                "(no GPU driver, or CUBEPY_TRITON_INTERPRET=1); pass a NumPy array"
            )
        shape, strides = _cai_shape_strides(cai)
        # the strides are in elements here: only their signs are left to check
        check_strides(strides, 1, name, "cupy.ascontiguousarray({name})")
        return DevicePointer(
            address=int(cai["data"][0] or 0),
            dtype=TorchLikeDtype(_dtype_from_typestr(cai["typestr"])),
            shape=shape,
            strides=strides,
            device=array_device(value),
            owner=value,
        )
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        pointer = read_dlpack(value)
        if pointer.device == "cpu":
            return to_launch_arg(name, np.from_dlpack(value), interpreter=interpreter)
        if interpreter:
            raise LaunchError(
                f"argument {name!r} is a {pointer.device} array but the triton target runs on the "
                "interpreter; pass a NumPy array"
            )
        check_strides(pointer.strides, 1, name, "{name}.contiguous() or its library's own")
        return pointer
    return value


def check_same_device(arrays: Mapping[str, Any]) -> str | None:
    """The one device of all array arguments (None when there are none); raises naming two
    arguments that disagree.

    Example:
        >>> check_same_device({"x": np.zeros(1), "y": np.zeros(1), "n": 3})
        'cpu'
    """
    first: tuple[str, str] | None = None
    for name, value in arrays.items():
        if not is_array(value):
            continue
        device = array_device(value)
        if first is None:
            first = (name, device)
        elif device != first[1]:
            raise LaunchError(
                f"arguments {first[0]!r} ({first[1]}) and {name!r} ({device}) are on different "
                "devices; move them to one device before the launch"
            )
    return None if first is None else first[1]


def prepare_launch_args(args: Mapping[str, Any], *, interpreter: bool) -> dict[str, Any]:
    """Check that the arrays share a device and convert each argument for ``triton.jit``.

    ``args`` maps parameter names to values in order; the result keeps that order.

    Example:
        >>> args = prepare_launch_args({"x": np.zeros(2), "n": 2}, interpreter=True)
        >>> type(args["x"]).__name__, args["n"]
        ('NumpyTensor', 2)
    """
    if not interpreter:
        for name, value in args.items():
            if isinstance(value, np.ndarray):
                raise host_array_on_gpu_error(name)
    check_same_device(args)
    return {
        name: to_launch_arg(name, value, interpreter=interpreter) for name, value in args.items()
    }
