"""Device arrays without picking a library: ``cube.asarray``, ``cube.empty``, ``cube.to_numpy``.

``device`` is ``"cpu"`` (NumPy), ``"cuda"`` / ``"cuda:N"`` (torch if installed, else CuPy; the
``triton`` target) or ``"wgpu"`` (``cube.DeviceArray``; the ``wgsl`` target).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any

import numpy as np

from ..errors import LaunchError
from ..ir import dtypes as dt


def _dtype(dtype: Any) -> dt.DType:
    if isinstance(dtype, dt.DType):
        return dtype
    if isinstance(dtype, str):
        return dt.from_name(dtype)
    return dt.from_numpy(np.dtype(dtype))


@functools.cache
def _cuda_library() -> str:
    for name in ("torch", "cupy"):
        if importlib.util.find_spec(name) is not None:
            return name
    raise LaunchError("device 'cuda' needs torch or cupy installed")


def asarray(x: Any, device: str = "cpu", dtype: Any = None) -> Any:
    """``x`` as an array on ``device`` (copied when it lives elsewhere).

    Example:
        >>> a = cube.asarray(np.arange(4, dtype=np.float32), device="cpu")
        >>> a.dtype
        dtype('float32')
    """
    host = to_numpy(x) if not isinstance(x, np.ndarray) else x
    if dtype is not None:
        host = host.astype(_dtype(dtype).numpy)
    host = np.ascontiguousarray(host)
    if device == "cpu":
        return host
    if device == "wgpu":
        from ..backends.wgsl.buffers import DeviceArray

        return DeviceArray.from_numpy(host)
    if device.startswith("cuda"):
        if _cuda_library() == "torch":
            import torch

            if dt.from_numpy(host.dtype) == dt.bfloat16:
                return torch.from_numpy(host.astype(np.float32)).to(device, torch.bfloat16)
            return torch.from_numpy(host).to(device)
        import cupy

        with cupy.cuda.Device(int(device.partition(":")[2] or 0)):
            return cupy.asarray(host)
    raise LaunchError(f"unknown device {device!r}; use 'cpu', 'cuda', 'cuda:N' or 'wgpu'")


def empty(shape: tuple[int, ...] | int, dtype: Any, device: str = "cpu") -> Any:
    """An uninitialized array: ``cube.empty((1024,), cube.float32, device="cuda")``."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = _dtype(dtype)
    if device == "wgpu":
        from ..backends.wgsl.buffers import DeviceArray

        return DeviceArray.empty(shape, dtype.name)
    if device.startswith("cuda") and _cuda_library() == "torch":
        import torch

        return torch.empty(shape, dtype=getattr(torch, dtype.name), device=device)
    return asarray(np.empty(shape, dtype.numpy), device)


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy (or the array itself) of any array cubepy accepts."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__cube_device_array__"):
        return x.numpy()
    module = type(x).__module__
    if module.startswith("torch"):
        if str(x.dtype) == "torch.bfloat16":
            return x.float().cpu().numpy().astype(dt.bfloat16.numpy)
        return x.detach().cpu().numpy()
    if module.startswith("cupy"):
        return x.get()
    return np.asarray(x)


_MULTIPROCESSORS: dict[tuple[str, int], int] = {}  # (library, device index) -> count


def concurrent_cubes(array: Any) -> int:
    """How many cubes a persistent kernel (one that loops over its work) should launch for
    ``array``: one per multiprocessor of the CUDA GPU holding it (a torch tensor or CuPy
    array; asked once per device), else four per CPU core.

    Example:
        >>> cube.concurrent_cubes(np.zeros(4)) == 4 * (os.cpu_count() or 1)
        True
    """
    library = type(array).__module__.partition(".")[0]
    device = getattr(array, "device", None)
    if library == "torch" and getattr(device, "type", None) == "cuda":
        index = device.index
    elif library == "cupy":
        index = device.id
    else:
        return 4 * (os.cpu_count() or 1)
    count = _MULTIPROCESSORS.get((library, index))
    if count is None:
        count = _MULTIPROCESSORS[library, index] = _ask_multiprocessors(library, index)
    return count


def _ask_multiprocessors(library: str, index: int) -> int:
    if library == "torch":
        import torch

        return torch.cuda.get_device_properties(index).multi_processor_count
    import cupy

    return cupy.cuda.Device(index).attributes["MultiProcessorCount"]
