"""Choosing the WebGPU adapter of the ``wgsl`` backend, and the backend's base error.

The adapter is the first one whose summary contains ``CUBEPY_WGPU_ADAPTER`` (any case), else
wgpu's high-performance default. Before any adapter is asked for, Triton's native library is
loaded where Triton is installed (``load_triton_before_drivers``: the other order crashes).

Example:
    >>> from cubepy.backends.wgsl.adapters import adapter_summaries
    >>> any("Vulkan" in s or "OpenGL" in s for s in adapter_summaries())  # doctest: +SKIP
    True
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util

import wgpu

from cubepy.errors import CubeError


class WgslRuntimeError(CubeError, RuntimeError):
    """An error of the ``wgsl`` backend's runtime (device, buffers, launches)."""


class AdapterNotFoundError(WgslRuntimeError):
    """No WebGPU adapter matches ``CUBEPY_WGPU_ADAPTER`` (or none exists at all)."""


def load_triton_before_drivers() -> None:
    """Load Triton's native library, where Triton is installed, before any Vulkan driver.

    libtriton carries its own copy of LLVM. Loaded into a process where Mesa's lavapipe has
    already brought in the system's libLLVM, its initializers crash the process (SIGSEGV on
    Debian 12 with Triton 3.9), so a script that used the wgsl target first could not then use
    the triton one. Loaded first, both work (0.2 s, paid once, only where Triton is installed).
    """
    if importlib.util.find_spec("triton") is not None:
        with contextlib.suppress(ImportError):
            importlib.import_module("triton._C.libtriton")


def adapter_summaries() -> list[str]:
    """The summaries of every adapter wgpu finds, e.g. ``['llvmpipe (...) via Vulkan', ...]``."""
    load_triton_before_drivers()
    return [a.summary for a in wgpu.gpu.enumerate_adapters_sync()]


def select_adapter(name: str | None) -> wgpu.GPUAdapter:
    """The first adapter whose summary contains ``name`` (any case), else the default.

    Raises ``AdapterNotFoundError`` listing the available summaries when none matches.
    """
    load_triton_before_drivers()
    if name:
        adapters = wgpu.gpu.enumerate_adapters_sync()
        for adapter in adapters:
            if name.lower() in adapter.summary.lower():
                return adapter
        listing = "\n".join(f"  - {a.summary}" for a in adapters) or "  (none)"
        raise AdapterNotFoundError(
            f"CUBEPY_WGPU_ADAPTER={name!r} matches no WebGPU adapter. Available adapters:\n"
            f"{listing}\nSet CUBEPY_WGPU_ADAPTER to part of one of these summaries."
        )
    try:
        return wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as exc:
        raise AdapterNotFoundError(
            "no WebGPU adapter found for target 'wgsl' (on Linux without a GPU, "
            "`apt-get install mesa-vulkan-drivers libvulkan1` provides lavapipe): "
            f"{exc}"
        ) from exc
