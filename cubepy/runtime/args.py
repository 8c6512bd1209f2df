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
    try:
        if isinstance(dtype, dt.DType):
            return dtype
        if dtype is not None and type(dtype).__module__.startswith("torch"):
            return dt.from_name(str(dtype).removeprefix("torch.").replace("bool", "bool"))
        return dt.from_numpy(np.dtype(dtype))
    except TypeError as err:
        raise LaunchError(f"argument '{name}': {err}") from None


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
        try:
            return ArgSpec("scalar", dt.literal_dtype(value))
        except TypeError as err:
            raise LaunchError(f"argument '{name}': {err}") from None
    raise LaunchError(f"argument '{name}' is a {type(value).__name__}; pass an array (NumPy, "
                      "CuPy, torch, cube.DeviceArray) or a scalar")


def target_for(specs: dict[str, ArgSpec]) -> str | None:
    """The target the arrays imply, or None when there are no arrays."""
    places: dict[str, str] = {}
    for name, spec in specs.items():
        if spec.kind == "array":
            places.setdefault(spec.place, name)
    if len(places) > 1:
        (p1, n1), (p2, n2) = list(places.items())[:2]
        raise LaunchError(f"arguments '{n1}' ({p1}) and '{n2}' ({p2}) live on different "
                          "devices; move them to one device")
    place = next(iter(places), None)
    return {"host": "cpu", "cuda": "triton", "wgpu": "wgsl", None: None}[place]
