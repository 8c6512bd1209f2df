"""cubepy: write a GPU kernel once in Python; run it through Triton, WGSL or Numba.

Example:
    >>> import numpy as np, cubepy as cube
    >>> @cube.kernel
    ... def scale(x, out, n, s, BLOCK: cube.Comptime[int]):
    ...     offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    ...     cube.store(out + offs, cube.load(x + offs, offs < n) * s, offs < n)
"""

from .autotune import Config, autotune
from .errors import (
    CompileError,
    CubeError,
    LaunchError,
    UncheckedAssertWarning,
    UnshownPrintWarning,
    UnsupportedError,
)
from .ir.dtypes import (
    DType,
    bfloat16,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint32,
)
from .ir.dtypes import bool_ as bool  # noqa: A004 - the kernel language's name for it
from .lang.builtins import *  # noqa: F403 - the kernel language's builtins
from .lang.builtins import Comptime, Func, cdiv, func, static_range
from .runtime import (
    Kernel,
    available_targets,
    cuda_available,
    kernel,
    target_info,
)
from .runtime.device_arrays import asarray, concurrent_cubes, empty, to_numpy

int1 = bool
i8, i16, i32, i64, u8, u32 = int8, int16, int32, int64, uint8, uint32
f16, bf16, f32, f64 = float16, bfloat16, float32, float64

__version__ = "0.1.0"

__all__ = [
    "CompileError", "CubeError", "LaunchError", "UncheckedAssertWarning", "UnshownPrintWarning",
    "UnsupportedError",
    "DType", "Comptime", "Func",
    "Kernel", "available_targets", "cuda_available", "kernel", "func", "target_info", "cdiv",
    "static_range", "range", "bool", "int1", "int8", "int16", "int32", "int64", "uint8", "uint32",
    "float16", "bfloat16", "float32", "float64", "Config", "autotune", "asarray", "empty",
    "to_numpy", "concurrent_cubes",
]


def __getattr__(name: str):
    if name == "DeviceArray":  # imports wgpu: only when asked for
        from .backends.wgsl.buffers import DeviceArray

        return DeviceArray
    raise AttributeError(f"module 'cubepy' has no attribute {name!r}")
