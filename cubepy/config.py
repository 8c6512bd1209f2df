"""Every environment variable cubepy reads, in one place.

Each setting is read when first asked for (``settings()``), so tests can change the
environment and call ``reload()``.

- ``CUBEPY_TARGET`` (str, default: from the arrays): default launch target, one of ``cpu``,
  ``cpu:debug``, ``triton``, ``wgsl``.
- ``CUBEPY_DEBUG`` (bool, 0): run the ``cpu`` target's generated code without Numba, so
  ``print``, ``device_print`` and ``pdb`` work inside kernels.
- ``CUBEPY_CPU_NATIVE`` (bool, 1): keep each compiled ``cpu`` kernel as a native image that
  later processes load without starting Numba; 0 runs every kernel through Numba's dispatcher.
- ``CUBEPY_CACHE_DIR`` (path, ``$XDG_CACHE_HOME/cubepy`` or ``~/.cache/cubepy``): generated
  source, Numba binaries, the Triton cache and autotune results.
- ``CUBEPY_VERIFY`` (bool, 0): run the IR verifier after every pass.
- ``CUBEPY_AUTOTUNE`` (bool, 1): 0 skips benchmarking; each kernel's heuristic default is used.
- ``CUBEPY_WGPU_ADAPTER`` (str, wgpu's choice): part of the adapter summary to pick on
  ``wgsl`` (e.g. ``llvmpipe``, ``NVIDIA``).
- ``CUBEPY_TRITON_INTERPRET`` (bool, 1 when there is no GPU): run the ``triton`` target on
  Triton's CPU interpreter.
- ``CUBEPY_TRITON_AOT`` (comma-separated list, empty): GPU targets (``cuda:90,hip:gfx942``)
  every new ``triton`` specialization is also compiled for ahead of time; CI uses it to check
  the GPU paths without a GPU.
- ``CUBEPY_CPU_OPT`` (int 0-3, 2): LLVM's optimization level for ``cpu`` kernels. cubepy
  compiles its kernels at this level whatever Numba's own ``NUMBA_OPT`` says (that one still
  applies to the rest of the process's Numba code). At 3 cold compiles took 1.2-1.3x as long
  (up to 4x for tile code) and kernels ran no faster. Native images are kept per level, so an
  image built at one level is never loaded by a process running at another.

Example:
    >>> from cubepy import config
    >>> config.settings().verify
    False
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r}: expected 0 or 1")


def _optional_flag(name: str) -> bool | None:
    return _flag(name, False) if name in os.environ else None


def _optimization_level(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if raw not in ("0", "1", "2", "3"):
        raise ValueError(f"{name}={raw!r}: expected an optimization level, 0, 1, 2 or 3")
    return int(raw)


def _cache_dir() -> Path:
    explicit = os.environ.get("CUBEPY_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cubepy"


@dataclass(frozen=True)
class Settings:
    """The values of cubepy's environment variables (see the module docstring)."""

    target: str | None
    debug: bool
    cpu_native: bool
    cache_dir: Path
    verify: bool
    autotune: bool
    wgpu_adapter: str | None
    triton_interpret: bool | None
    triton_aot: tuple[str, ...]
    cpu_opt: int


_settings: Settings | None = None
_generation = 0


def generation() -> int:
    """How many times the environment was read: a cheap key for caches of settings."""
    if _settings is None:
        reload()
    return _generation


def reload() -> Settings:
    """Read the environment again (tests change it); returns the new settings."""
    global _settings, _generation
    _generation += 1
    _settings = Settings(
        target=os.environ.get("CUBEPY_TARGET") or None,
        debug=_flag("CUBEPY_DEBUG", False),
        cpu_native=_flag("CUBEPY_CPU_NATIVE", True),
        cache_dir=_cache_dir(),
        verify=_flag("CUBEPY_VERIFY", False),
        autotune=_flag("CUBEPY_AUTOTUNE", True),
        wgpu_adapter=os.environ.get("CUBEPY_WGPU_ADAPTER") or None,
        triton_interpret=_optional_flag("CUBEPY_TRITON_INTERPRET"),
        triton_aot=tuple(t.strip() for t in os.environ.get("CUBEPY_TRITON_AOT", "").split(",")
                         if t.strip()),
        cpu_opt=_optimization_level("CUBEPY_CPU_OPT", 2),
    )
    return _settings


def settings() -> Settings:
    """The current settings, read from the environment on first use."""
    return _settings if _settings is not None else reload()
