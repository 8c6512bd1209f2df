"""What the examples share: command line, arrays on the target's device, checks against NumPy.

A kernel takes the arrays of the device it runs on: NumPy arrays on ``cpu``/``cpu:debug`` (and
on ``triton`` without a GPU, where Triton's interpreter runs), torch CUDA tensors on ``triton``
with a GPU, ``DeviceArray`` buffers on ``wgsl``. ``to_device`` and ``to_numpy`` move data
between NumPy and those; ``empty`` allocates beside an existing array.

Example:
    >>> x = to_device(np.arange(4, dtype=np.float32), "cpu")
    >>> to_numpy(empty((2,), "float32", like=x)).shape
    (2,)
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

import cubepy as cube

# Mesa's Vulkan driver (the wgsl target on the CPU) complains on stderr without this.
if not os.environ.get("XDG_RUNTIME_DIR"):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubepy-xdg-")

DTYPES = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
          "float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}


def parse_args(description: str, argv: list[str] | None = None,
               extra: Callable[[argparse.ArgumentParser], object] | None = None
               ) -> argparse.Namespace:
    """``--target`` (default: ``cpu``) plus whatever ``extra(parser)`` adds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--target", default="cpu",
                        help=f"one of {', '.join(cube.available_targets())} (present here)")
    if extra is not None:
        extra(parser)
    return parser.parse_args(argv)


def small(target: str) -> bool:
    """True where kernels run on an interpreter or a CPU Vulkan driver: use small problems."""
    if target == "cpu":
        return False
    if target == "triton":
        return not cube.cuda_available()
    if target == "wgsl":
        from cubepy.backends.wgsl.device import get_device

        return "llvmpipe" in get_device().adapter_summary.lower()
    return True  # cpu:debug runs plain Python


def np_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a cubepy float dtype name (``bfloat16`` is ml_dtypes')."""
    return DTYPES[name]


def _on_gpu(target: str) -> bool:
    return target == "triton" and cube.cuda_available()


def to_device(host: np.ndarray, target: str) -> Any:
    """A copy of ``host`` on the device ``target`` runs on (raises UnsupportedError on a dtype
    the target cannot store, e.g. bfloat16 on wgsl)."""
    host = np.ascontiguousarray(host)
    if target == "wgsl":
        from cubepy.backends.wgsl.buffers import DeviceArray

        return DeviceArray.from_numpy(host)
    if _on_gpu(target):
        import torch

        if host.dtype == DTYPES["bfloat16"]:
            return torch.from_numpy(host.view(np.int16)).view(torch.bfloat16).cuda()
        return torch.from_numpy(host).cuda()
    return host


def to_numpy(array: Any) -> np.ndarray:
    """A NumPy copy of a NumPy array, a torch tensor or a DeviceArray."""
    if isinstance(array, np.ndarray):
        return array.copy()
    if hasattr(array, "__cube_device_array__"):
        return array.numpy()
    import torch  # anything else here is a torch tensor

    array = array.detach().cpu()
    if array.dtype == torch.bfloat16:
        return array.view(torch.int16).numpy().view(DTYPES["bfloat16"])
    return array.numpy()


def dtype_name(array: Any) -> str:
    """The dtype of a NumPy array, torch tensor or device array, as a name ("float16")."""
    return str(array.dtype).removeprefix("torch.")


def empty(shape: tuple[int, ...], dtype: str, like: Any) -> Any:
    """An uninitialized array of ``shape`` and ``dtype`` on the device of ``like``."""
    if isinstance(like, np.ndarray):
        return np.empty(shape, np_dtype(dtype))
    if hasattr(like, "__cube_device_array__"):
        from cubepy.backends.wgsl.buffers import DeviceArray

        return DeviceArray.empty(shape, dtype)
    import torch

    return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)


def max_error(got: Any, want: np.ndarray) -> float:
    """The largest absolute difference, in float64 (NaN anywhere gives inf)."""
    diff = np.abs(np.asarray(to_numpy(got), np.float64) - want)
    return float(np.max(diff)) if np.all(np.isfinite(diff)) else float("inf")


def report(name: str, error: float, tol: float) -> bool:
    """Print one PASS/FAIL line; True when ``error <= tol``."""
    ok = error <= tol
    print(f"  {name:<44} max err {error:9.2e} (tol {tol:.0e})  {'PASS' if ok else 'FAIL'}")
    return ok


def run_dtypes(names: list[str], check: Callable[[str], bool]) -> bool:
    """``check(dtype)`` for each dtype; one the target lacks is skipped with a printed note."""
    ok = True
    for name in names:
        try:
            ok &= bool(check(name))
        except cube.UnsupportedError as err:
            first = str(err).strip().splitlines()[0]
            print(f"  {name}: skipped, not supported on this target ({first})")
    return ok
