"""Which targets exist on this machine, and the backend object of each."""

from __future__ import annotations

import functools
import importlib
from typing import Any

from ..backends.base import TargetInfo
from ..errors import LaunchError

TARGETS = ("cpu", "cpu:debug", "triton", "wgsl")
_MODULES = {"triton": "cubepy.backends.triton.backend", "wgsl": "cubepy.backends.wgsl.backend"}


def _optional_module(name: str) -> Any | None:
    """The backend module, or None when it (or the package it wraps) is not installed."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        missing = err.name or ""
        if name.startswith(missing) or missing in ("triton", "wgpu"):
            return None
        raise


@functools.cache
def get_backend(name: str) -> Any:
    """The backend for a target name (``cpu``, ``cpu:debug``, ``triton``, ``wgsl``)."""
    if name in ("cpu", "cpu:debug"):
        from ..backends.cpu import CpuBackend

        return CpuBackend(debug=name == "cpu:debug")
    if name not in _MODULES:
        raise LaunchError(f"unknown target {name!r}; targets are {', '.join(TARGETS)}")
    module = _optional_module(_MODULES[name])
    if module is None or not module.available():
        raise LaunchError(f"target '{name}' is not available on this machine: "
                          f"{module.why_unavailable() if module else 'its package is missing'}")
    return module.make_backend()


@functools.cache
def available_targets() -> list[str]:
    """The targets that can run here, e.g. ``['cpu', 'cpu:debug', 'triton', 'wgsl']``.

    Example:
        >>> "cpu" in cube.available_targets()
        True
    """
    names = ["cpu", "cpu:debug"]
    for name, module_name in _MODULES.items():
        module = _optional_module(module_name)
        if module is not None and module.available():
            names.append(name)
    return names


def target_info(name: str) -> TargetInfo:
    """What ``name`` supports on this machine (dtypes, features, limits)."""
    return get_backend(name).info()


def cuda_available() -> bool:
    """True when a CUDA (or ROCm) GPU is usable through Triton."""
    module = _optional_module(_MODULES["triton"])
    return bool(module is not None and module.gpu_available())
