"""Which targets exist on this machine, and the backend object of each."""

from __future__ import annotations

import difflib
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
        raise LaunchError(f"unknown target {name!r}", _target_hint(name))
    module = _optional_module(_MODULES[name])
    if module is None or not module.available():
        raise LaunchError(f"target '{name}' is not available on this machine: "
                          f"{module.why_unavailable() if module else 'its package is missing'}",
                          f"pass one of the targets here: target="
                          f"{' | '.join(repr(t) for t in available_targets())}")
    return module.make_backend()


# what users call a device, and the target that runs on it
_ALIASES = {"cuda": "triton", "gpu": "triton", "rocm": "triton", "hip": "triton",
            "nvidia": "triton", "amd": "triton", "webgpu": "wgsl", "wgpu": "wgsl",
            "vulkan": "wgsl", "metal": "wgsl", "dx12": "wgsl", "numba": "cpu",
            "host": "cpu", "debug": "cpu:debug"}


def _target_hint(name: Any) -> str:
    """What to write instead of the unknown target ``name``."""
    listing = f"targets: {', '.join(TARGETS)}"
    spelled = str(name).lower().strip()
    alias = _ALIASES.get(spelled) or next(iter(difflib.get_close_matches(spelled, TARGETS, 1)),
                                          None)
    return f"did you mean target={alias!r}? {listing}" if alias else listing


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
