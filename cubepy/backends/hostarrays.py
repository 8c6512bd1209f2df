"""Host (NumPy) arrays as kernels see them: a flat buffer from the first element."""

from __future__ import annotations

import numpy as np

from ..errors import LaunchError
from ..ir import dtypes as dt


def check_strides(strides: tuple[int, ...], itemsize: int, name: str,
                  copy: str = "np.ascontiguousarray({name})") -> None:
    """A kernel addresses an array by element offsets from its first element, which cannot
    reach elements before it (negative strides) or between elements (odd byte strides)."""
    if any(s < 0 for s in strides):
        raise LaunchError(f"argument '{name}' has negative strides",
                          f"pass {copy.format(name=name)}: a contiguous copy")
    if itemsize and any(s % itemsize for s in strides):
        raise LaunchError(f"argument '{name}' has strides that are not a multiple of its "
                          "element size", f"pass {copy.format(name=name)}: a contiguous copy")


def host_view(arr: np.ndarray, name: str, half_as_uint16: bool = True) -> np.ndarray:
    """A 1-D view from the array's first element over every element it reaches (writes
    through it land in ``arr``); 16-bit floats viewed as uint16 unless told otherwise."""
    check_strides(arr.strides, arr.dtype.itemsize, name)
    if arr.flags.c_contiguous:
        flat = arr.reshape(-1)
    else:
        span = 1 + sum((n - 1) * s // arr.dtype.itemsize for n, s in zip(arr.shape, arr.strides)) \
            if arr.size else 0
        flat = np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(arr.dtype.itemsize,))
    if half_as_uint16 and dt.from_numpy(arr.dtype).name in ("float16", "bfloat16"):
        flat = flat.view(np.uint16)
    return flat
