"""Storage and launch context of the cubepy backends (``Cpu``, ``Cuda``, ``Wgpu``).

Each backend owns a ``kernels.layout.Context``: the cubepy target its kernels launch on and an
allocator drawing flat storage from the target's pool: the host pool for ``cpu`` (and for
Triton's interpreter when no GPU is present), torch's caching allocator (or CuPy's pool) on a
CUDA or ROCm GPU, and the wgpu buffer pool for ``wgsl``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import cubepy as cube
from cubepy.ir.dtypes import DType
from cubepy.runtime.pool import host_pool
from kernels.layout import Context

from ..base import Backend


class CubeCore(Backend):
    """A backend whose ops are cubepy kernels launched on ``target``."""

    target = "cpu"

    def __init__(self) -> None:
        self.ctx = Context(self.target, self.allocate)

    def allocate(self, numel: int, dtype: DType) -> Any:
        return host_pool().empty(numel, dtype.numpy)

    def storage_from_numpy(self, flat: np.ndarray) -> Any:
        storage = host_pool().empty(flat.size, flat.dtype)
        storage[...] = flat
        return storage

    def storage_to_numpy(self, storage: Any, dtype: DType) -> np.ndarray:
        return storage


class WgpuCore(CubeCore):
    """Storage in wgpu buffers from the ``wgsl`` backend's pool."""

    target = "wgsl"

    def __init__(self) -> None:
        super().__init__()
        self.dtypes = frozenset(cube.target_info("wgsl").dtypes)  # what this adapter offers

    def allocate(self, numel: int, dtype: DType) -> Any:
        return cube.empty((numel,), dtype, device="wgpu")

    def storage_from_numpy(self, flat: np.ndarray) -> Any:
        return cube.asarray(flat, device="wgpu")

    def storage_to_numpy(self, storage: Any, dtype: DType) -> np.ndarray:
        return cube.to_numpy(storage)


class CudaCore(CubeCore):
    """Storage in CUDA (or ROCm) memory through torch or CuPy; host memory when Triton runs
    on its interpreter (no GPU present)."""

    target = "triton"

    def __init__(self) -> None:
        super().__init__()
        self.on_gpu = cube.cuda_available()
        self._torch_empty: Any = None
        self._torch_dtypes: dict[str, Any] = {}
        if self.on_gpu:
            try:
                import torch
            except ImportError:  # CuPy: through cube.empty
                return
            self._torch_empty = torch.empty
            self._torch_dtypes = {name: getattr(torch, name) for name in self.dtypes
                                  if name != "bool"} | {"bool": torch.bool}

    @property
    def device(self) -> str:
        return "cuda:0" if self.on_gpu else "cuda (triton interpreter)"

    def allocate(self, numel: int, dtype: DType) -> Any:
        if not self.on_gpu:
            return super().allocate(numel, dtype)
        if self._torch_empty is None:
            return cube.empty((numel,), dtype, device="cuda")
        # torch's caching allocator directly: this runs once per op, on its host path
        return self._torch_empty(numel, dtype=self._torch_dtypes[dtype.name], device="cuda")

    def storage_from_numpy(self, flat: np.ndarray) -> Any:
        if not self.on_gpu:
            return super().storage_from_numpy(flat)
        return cube.asarray(flat, device="cuda")

    def storage_to_numpy(self, storage: Any, dtype: DType) -> np.ndarray:
        return cube.to_numpy(storage)
