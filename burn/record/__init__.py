"""Saving and loading modules: safetensors files of their parameters, by path.

Example:
    >>> model = burn.nn.Linear(3, 2)
    >>> burn.record.save(model, "/tmp/linear.safetensors")
    >>> restored = burn.record.load(burn.nn.Linear(3, 2), "/tmp/linear.safetensors")
    >>> bool((restored.weight == model.weight).all())
    True
"""

from __future__ import annotations

from pathlib import Path

from ..backend.base import BurnError
from ..nn.module import Module
from .safetensors import load_file, load_metadata, save_file


def save(module: Module, path: str | Path, metadata: dict[str, str] | None = None) -> None:
    """Write ``module``'s parameters (``state_dict``: path to array) to the safetensors file
    ``path`` (atomically); ``metadata`` is stored beside them as strings."""
    save_file(module.state_dict(), path, {"format": "burn", **(metadata or {})})


def load(module: Module, path: str | Path) -> Module:
    """``module`` with the parameters of the safetensors file ``path`` (each converted to the
    parameter's dtype, on its backend); names and shapes must match the module's."""
    try:
        state = load_file(path)
    except FileNotFoundError:
        raise BurnError(f"load: no file {path}") from None
    return module.load_state_dict(state)


__all__ = ["load", "load_file", "load_metadata", "save", "save_file"]
