"""Recording the kernel launches a piece of host code makes, to tell whether it is static.

A CUDA graph (or any replay of recorded launches) runs the kernels with the arguments they
had when recorded. Host code whose launches take numbers that change from one run to the
next (a step count, a learning rate from a schedule, a random seed) would silently replay
the first run's numbers. ``record_launches`` lists every launch made inside it (kernel,
grid, the numbers and comptime values passed, and the line outside the library that led to
it), and ``first_difference`` compares two such lists.

Example:
    >>> with record_launches() as first:
    ...     step()  # doctest: +SKIP
    >>> with record_launches() as second:
    ...     step()  # doctest: +SKIP
    >>> first_difference(first, second)  # None when both runs launched alike  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the list launches are appended to while ``record_launches`` is open (None: not recording;
#: the launch path reads it once per launch)
active: list[LaunchRecord] | None = None

# cubepy's own folder: its frames are never where a launch came from
_CUBEPY = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# the folders skipped besides cubepy's while recording (``record_launches(library=...)``)
_library: tuple[str, ...] = (_CUBEPY,)


@dataclass(frozen=True)
class LaunchRecord:
    """One launch: the kernel's name, its grid, its runtime arguments (numbers as they were,
    arrays as their dtype only) by parameter name, its comptime values, and where outside the
    library it came from (``file:line``)."""

    kernel: str
    grid: Any
    arguments: tuple[tuple[str, Any], ...]
    comptime: tuple[tuple[str, Any], ...]
    origin: str


@contextlib.contextmanager
def record_launches(library: tuple[str, ...] = ()) -> Iterator[list[LaunchRecord]]:
    """Collect every kernel launch made inside the ``with`` block (not nested). A launch's
    origin is the innermost frame outside cubepy and the folders in ``library`` (the
    libraries built on cubepy whose lines are not the user's).

    Example:
        >>> with record_launches() as launches:
        ...     add[(1,)](x, y, out, 4, BLOCK=4)  # doctest: +SKIP
        >>> launches[0].kernel  # doctest: +SKIP
        'add'
    """
    global active, _library
    if active is not None:
        raise RuntimeError("record_launches() is already recording")
    records: list[LaunchRecord] = []
    active, _library = records, (_CUBEPY, *(os.path.join(os.path.abspath(f), "")
                                            for f in library))
    try:
        yield records
    finally:
        active, _library = None, (_CUBEPY,)


def record(kernel: Any, grid: Any, args: tuple, kwargs: dict) -> None:
    """Append one launch of ``kernel`` (a ``cube.kernel``) to the open recording."""
    names = [n for n in kernel.signature.parameters if n not in kernel.comptime]
    arguments = tuple((name, _value(value)) for name, value in zip(names, args))
    comptime = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
    if callable(grid):  # a grid function of the comptime values: what it gave this time
        grid = grid(dict(kwargs))
    assert active is not None
    active.append(LaunchRecord(kernel.fn.__name__, grid, arguments, comptime, _origin()))


def note(kind: str, **numbers: Any) -> None:
    """Add a host-side event that a replay would repeat as recorded (a number copied to the
    device, say) to the open recording, with the numbers it concerns."""
    assert active is not None
    active.append(LaunchRecord(kind, None, tuple((name, _value(value))
                                                 for name, value in numbers.items()),
                               (), _origin()))


def first_difference(first: list[LaunchRecord], second: list[LaunchRecord]) -> str | None:
    """What first differs between two recordings of the same host code, in words (None when
    they launched the same kernels, on the same grids, with the same numbers)."""
    for index, (a, b) in enumerate(zip(first, second)):
        where = f"launch {index + 1} ({a.kernel}, from {a.origin})"
        if a.kernel != b.kernel:
            return f"{where} was {b.kernel} (from {b.origin}) the next time"
        if a.grid != b.grid:
            return f"{where} ran on grid {a.grid}, then on {b.grid}"
        if a.comptime != b.comptime:
            return f"{where} had comptime values {dict(a.comptime)}, then {dict(b.comptime)}"
        for (name, x), (_, y) in zip(a.arguments, b.arguments):
            if x != y:
                return f"{where} passed {name}={_shown(x)}, then {name}={_shown(y)}"
    if len(first) != len(second):
        return f"one run made {len(first)} launches, the next {len(second)}"
    return None


def _value(value: Any) -> tuple[str, str]:
    """What of an argument a replay would repeat: a number itself (its type and repr, which
    tells -0.0 from 0.0); of an array its dtype (where it lives may change, and a graph's
    replay keeps its own buffers)."""
    if isinstance(value, (bool, int, float, np.generic)):
        return type(value).__name__, repr(value.item() if isinstance(value, np.generic)
                                          else value)
    return "array", str(getattr(value, "dtype", type(value).__name__))


def _shown(value: tuple[str, str]) -> str:
    kind, shown = value
    return f"an array of {shown}" if kind == "array" else shown


def _origin() -> str:
    """``file:line`` of the innermost frame outside cubepy and the recorded libraries."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_library):
        frame = frame.f_back
    if frame is None:
        return "<library>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
