"""The cubepy backends: every op is a kernel from ``kernels/``.

- ``Cpu()``: the ``cpu`` target (Numba).
- ``Cuda()``: the ``triton`` target, on a CUDA or ROCm GPU (or Triton's interpreter when no
  GPU is present, as in CI).
- ``Wgpu()``: the ``wgsl`` target on any WebGPU adapter (Vulkan, Metal, DX12).
"""

from __future__ import annotations

from ..ops import BackendOps
from .core import CubeCore, CudaCore, WgpuCore
from .creation import CubeCreation
from .elementwise import CubeElementwise
from .index import CubeIndex
from .linalg import CubeLinalg
from .optim import CubeOptim
from .random import CubeRandom
from .reduce import CubeReduce


class _CubeOps(CubeElementwise, CubeCreation, CubeReduce, CubeIndex, CubeLinalg, CubeRandom,
               CubeOptim, BackendOps):
    pass


class Cpu(_CubeOps, CubeCore):
    """Tensors in host memory; kernels compiled by Numba, the grid on every core.

    Example:
        >>> (burn.ones(3, backend=burn.Cpu()) * 2).tolist()
        [2.0, 2.0, 2.0]
    """

    name = "cpu"


class Cuda(_CubeOps, CudaCore):
    """Tensors on the CUDA (or ROCm) GPU; kernels compiled by Triton.

    Example:
        >>> burn.ones(3, backend=burn.Cuda()).device  # doctest: +SKIP
        'cuda:0'
    """

    name = "cuda"


class Wgpu(_CubeOps, WgpuCore):
    """Tensors in WebGPU buffers; kernels compiled to WGSL.

    Example:
        >>> burn.ones(3, backend=burn.Wgpu()).device  # doctest: +SKIP
        'wgpu'
    """

    name = "wgpu"


__all__ = ["Cpu", "Cuda", "Wgpu"]
