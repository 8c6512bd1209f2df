"""burn's backends and the default one.

``Cpu``, ``Cuda`` and ``Wgpu`` run cubepy kernels from ``kernels/``; ``NumPy`` is the plain
reference. ``default_backend()`` is, in order, ``Cuda`` when a CUDA/ROCm GPU is present,
``Wgpu`` when a WebGPU adapter is, else ``Cpu``; ``set_default_backend`` changes it.

Example:
    >>> burn.set_default_backend(burn.Cpu())
    >>> burn.zeros(2).backend.name
    'cpu'
"""

from __future__ import annotations

import functools
from typing import Any

import cubepy

from .base import Backend, BurnError
from .cube import Cpu, Cuda, Wgpu
from .numpy import NumPy

_default: Backend | None = None


@functools.cache
def backend_named(name: str) -> Backend:
    """The shared backend object for ``"cpu"``, ``"cuda"``, ``"wgpu"`` or ``"numpy"``."""
    name = name.partition(":")[0]
    makers = {"cpu": Cpu, "cuda": Cuda, "wgpu": Wgpu, "numpy": NumPy}
    if name not in makers:
        raise BurnError(f"unknown device {name!r}; devices are {', '.join(makers)}")
    if name == "cuda" and "triton" not in cubepy.available_targets():
        raise BurnError("device 'cuda' needs Triton (pip install 'cubepy[cuda]')")
    if name == "wgpu" and "wgsl" not in cubepy.available_targets():
        raise BurnError("device 'wgpu' needs wgpu (pip install 'cubepy[wgpu]') and an adapter")
    return makers[name]()


def backend_for(target: Any) -> Backend:
    """A backend object, or the shared one for a device name."""
    if isinstance(target, Backend):
        return target
    if isinstance(target, str):
        return backend_named(target)
    raise BurnError(f"expected a backend or a device name, got {target!r}")


def default_backend() -> Backend:
    """The backend new tensors go to when none is given (see the module docstring)."""
    global _default
    if _default is None:
        if cubepy.cuda_available():
            _default = backend_named("cuda")
        elif "wgsl" in cubepy.available_targets():
            _default = backend_named("wgpu")
        else:
            _default = backend_named("cpu")
    return _default


def set_default_backend(backend: Backend | str) -> None:
    """Make ``backend`` (or a device name) the default for new tensors."""
    global _default
    _default = backend_for(backend)


__all__ = ["Backend", "BurnError", "Cpu", "Cuda", "NumPy", "Wgpu", "backend_for",
           "backend_named", "default_backend", "set_default_backend"]
