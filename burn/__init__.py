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

from . import nn, optim, record
from .autodiff import Autodiff, Gradients
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
from .tensor import FAMILIES, Tensor

for _family in FAMILIES:
    globals().update({_name: getattr(_family, _name) for _name in _family.__all__})

__all__ = [
    "Autodiff", "Backend", "BurnError", "Cpu", "Cuda", "DType", "Gradients", "NumPy", "Tensor",
    "Wgpu", "backend_for", "bfloat16", "bool", "default_backend", "float16", "float32",
    "float64", "int8", "int16", "int32", "int64", "nn", "optim", "record", "set_default_backend",
    "uint8", "uint32",
    *(name for family in FAMILIES for name in family.__all__),
]
