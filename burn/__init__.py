"""burn: a deep-learning framework whose every op is a cubepy kernel.

Tensors live on a backend: ``Cpu`` (Numba), ``Cuda`` (Triton, CUDA or ROCm), ``Wgpu``
(WGSL on Vulkan/Metal/DX12) or ``NumPy`` (the plain reference). Without one named, tensors go
to ``default_backend()``: CUDA if present, then WebGPU, then the CPU.

Example:
    >>> import burn
    >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], backend="cpu")
    >>> (x * 2 + 1).exp().shape
    (2, 2)
"""

import importlib
from typing import Any

from cubepy import (
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
from cubepy import bool as bool  # noqa: A004 - burn.bool is the dtype, as torch.bool

from . import data, nn, optim, record, train
from .autodiff import Autodiff, Gradients, checkpoint
from .backend import (
    Backend,
    BurnError,
    Cpu,
    Cuda,
    NumPy,
    Wgpu,
    backend_for,
    default_backend,
    set_default_backend,
)
from .fusion import Fusion
from .tensor import Tensor, family_functions

_FUNCTIONS = family_functions()
globals().update(_FUNCTIONS)


def __getattr__(name: str) -> Any:
    # burn.onnx (its operator tables, about 40 ms) is imported on first use
    if name == "onnx":
        return importlib.import_module(".onnx", __name__)
    raise AttributeError(f"module 'burn' has no attribute {name!r}")


__all__ = [
    "Autodiff", "Backend", "BurnError", "Cpu", "Cuda", "DType", "Fusion", "Gradients", "NumPy",
    "Tensor", "Wgpu", "backend_for", "bfloat16", "bool", "checkpoint", "data", "default_backend",
    "float16",
    "float32", "float64", "int8", "int16", "int32", "int64", "nn", "onnx", "optim", "record",
    "set_default_backend", "train", "uint8", "uint32",
    *_FUNCTIONS,
]
