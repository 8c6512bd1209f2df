"""``cube.Config``: one candidate of an autotuned kernel (comptime values and launch options).

Example:
    >>> import cubepy as cube
    >>> cfg = cube.Config(BLOCK_M=128, BLOCK_N=64, num_warps=8)
    >>> cfg
    Config(BLOCK_M=128, BLOCK_N=64, num_warps=8)
    >>> cfg.launch_kwargs()
    {'BLOCK_M': 128, 'BLOCK_N': 64, 'num_warps': 8}
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

OPTION_NAMES = ("num_warps", "num_stages")


class Config:
    """A candidate: values for a kernel's comptime parameters plus launch options.

    ``num_warps`` and ``num_stages`` are Triton launch options (``num_warps`` also sizes a wgsl
    workgroup, 32 invocations per warp; the CPU ignores both); every other keyword names a
    comptime parameter of the kernel, or a keyword parameter of an autotuned host function.
    Values should be JSON data (ints, floats, bools, strings) so that results can be cached on
    disk. Triton's spelling, a dict first, works too.

    Example:
        >>> Config(BLOCK=256, num_warps=4).kwargs
        {'BLOCK': 256}
        >>> Config({"BLOCK": 256}, num_warps=4) == Config(BLOCK=256, num_warps=4)
        True
    """

    __slots__ = ("kwargs", "num_warps", "num_stages")

    def __init__(self, values: Mapping[str, Any] | None = None, /, *,
                 num_warps: int | None = None, num_stages: int | None = None,
                 **kwargs: Any) -> None:
        # A Triton port writes triton.Config({"BLOCK": 256}, num_warps=4); taken positionally
        # as num_warps, that dict left BLOCK unset and the config a silent no-op.
        if values is not None and not isinstance(values, Mapping):
            raise TypeError(f"cube.Config({values!r}): pass the values by name, "
                            "e.g. cube.Config(BLOCK=256, num_warps=4)")
        self.kwargs: dict[str, Any] = {**(values or {}), **kwargs}
        self.num_warps = num_warps
        self.num_stages = num_stages

    def launch_kwargs(self) -> dict[str, Any]:
        """The keywords this config adds to a launch (or to a host function call)."""
        options = {name: getattr(self, name) for name in OPTION_NAMES
                   if getattr(self, name) is not None}
        return {**self.kwargs, **options}

    def as_json(self) -> dict[str, Any]:
        """A flat JSON-able dict (values that are not JSON data become their ``repr``)."""
        return {name: _jsonable(value) for name, value in self.launch_kwargs().items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Config:
        """The inverse of ``as_json`` (for values that were JSON data)."""
        return cls(**dict(data))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self.launch_kwargs() == other.launch_kwargs()

    def __hash__(self) -> int:
        return hash(json.dumps(self.as_json(), sort_keys=True))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in self.launch_kwargs().items())
        return f"Config({inner})"


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # NumPy scalars
        return _jsonable(value.item())
    return stable_repr(value)


def stable_repr(value: Any) -> str:
    """``repr(value)``, but a function or class by its qualified name: its repr holds its
    address, which differs in every process (and the cached results would never be found).

    Example:
        >>> stable_repr(configs_checksum), stable_repr(3)
        ('<cubepy.autotune.config.configs_checksum>', '3')
    """
    text = repr(value)
    if ADDRESS.search(text) and isinstance(getattr(value, "__qualname__", None), str):
        return f"<{getattr(value, '__module__', '?')}.{value.__qualname__}>"
    return text


ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")  # in reprs like <Plan object at 0x7f...>


def configs_checksum(configs: Sequence[Config]) -> str:
    """A digest of the config list, in order: an edited list gets a new checksum.

    Example:
        >>> configs_checksum([Config(B=1)]) == configs_checksum([Config(B=2)])
        False
    """
    text = json.dumps([c.as_json() for c in configs], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
