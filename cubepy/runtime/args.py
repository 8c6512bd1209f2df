"""Launch arguments: what each is (array or scalar), its dtype, and where it lives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import LaunchError
from ..ir import dtypes as dt


@dataclass(frozen=True)
class ArgSpec:
    """The part of an argument that specializes a kernel."""

    kind: str  # "array" or "scalar"
    dtype: dt.DType
    place: str = "host"  # arrays: "host", "cuda", "wgpu"


def _array_dtype(arr: Any, name: str) -> dt.DType:
    dtype = getattr(arr, "dtype", None)
    is_torch = dtype is not None and type(dtype).__module__.startswith("torch")
    try:
        if isinstance(dtype, dt.DType):
            return dtype
        if is_torch:
            return dt.from_name(str(dtype).removeprefix("torch."))
        return dt.from_numpy(np.dtype(dtype))
    except TypeError as err:
        cast = f"{name}.to(torch.float32)" if is_torch else f"{name}.astype(np.float32)"
        raise LaunchError(f"argument '{name}': {err}", _cast_hint(name, str(dtype), cast)
                          ) from None


def _cast_hint(name: str, dtype: str, cast: str) -> str:
    if "complex" in dtype:
        return (f"cubepy has no complex dtypes: pass {name}.real and {name}.imag as two "
                "float arrays")
    return f"cast it to a supported dtype first, e.g. pass {cast}"


def is_array(value: Any) -> bool:
    """Whether ``value`` is an array a kernel takes (NumPy, CUDA, torch, cube.DeviceArray)."""
    return isinstance(value, np.ndarray) or hasattr(value, "__cube_device_array__") or \
        hasattr(value, "__cuda_array_interface__") or (
            hasattr(value, "data_ptr") and hasattr(value, "dtype"))


def classify(value: Any, name: str) -> ArgSpec:
    """ArgSpec of one runtime argument, or LaunchError naming it."""
    if isinstance(value, np.ndarray):
        return ArgSpec("array", _array_dtype(value, name), "host")
    if hasattr(value, "__cube_device_array__"):
        return ArgSpec("array", _array_dtype(value, name), value.__cube_device_array__)
    if hasattr(value, "__cuda_array_interface__") or (
            hasattr(value, "data_ptr") and getattr(value, "is_cuda", False)):
        return ArgSpec("array", _array_dtype(value, name), "cuda")
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):  # torch CPU tensors
        return ArgSpec("array", _array_dtype(value, name), "host")
    if isinstance(value, (bool, int, float, np.generic)):
        if type(value) is int and not -(2**63) <= value < 2**63:
            raise LaunchError(f"argument '{name}' is {value}, which does not fit in int64",
                              "pass an int in [-2**63, 2**63), or a float")
        try:
            return ArgSpec("scalar", dt.literal_dtype(value))
        except TypeError as err:
            raise LaunchError(f"argument '{name}': {err}", _cast_hint(
                name, str(getattr(value, "dtype", "")), f"float({name})")) from None
    raise LaunchError(f"argument '{name}' is a {type(value).__name__}; a kernel takes arrays "
                      "and scalars", _value_hint(value, name))


def _value_hint(value: Any, name: str) -> str:
    """What to pass instead of ``value``, which is neither an array nor a scalar."""
    if isinstance(value, (list, tuple, range)):
        return (f"pass an array: np.asarray({name}, dtype=np.float32), or cube.asarray(...) "
                "to place it on a device")
    if isinstance(value, str):
        return ("pass a number; strings are comptime values, for parameters annotated "
                "cube.Comptime[str]")
    return ("pass a NumPy, CuPy or torch array, a cube.DeviceArray, or an int, float or "
            "bool")


_DEVICE_NAMES = {"host": "cpu", "cuda": "cuda", "wgpu": "wgpu"}  # cube.asarray's names


def target_for(specs: dict[str, ArgSpec]) -> str | None:
    """The target the arrays imply, or None when there are no arrays."""
    places: dict[str, str] = {}
    for name, spec in specs.items():
        if spec.kind == "array":
            places.setdefault(spec.place, name)
    if len(places) > 1:
        (p1, n1), (p2, n2) = list(places.items())[:2]
        raise LaunchError(f"arguments '{n1}' ({p1}) and '{n2}' ({p2}) live on different "
                          "devices", f"move them to one device, e.g. pass cube.asarray({n2}, "
                          f"device={_DEVICE_NAMES.get(p1, p1)!r})")
    place = next(iter(places), None)
    return {"host": "cpu", "cuda": "triton", "wgpu": "wgsl", None: None}[place]
