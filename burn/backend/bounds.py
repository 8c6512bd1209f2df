"""Bounds of integer tensors known on the host, so index checks need not read the device.

``gather``, ``index_select``, ``embedding``, ``scatter_add`` and ``one_hot`` check that every
index is in range, with an exact range in the error. Reading that range back from a GPU waits
for all the work queued before it: once per training step for ``cross_entropy``'s labels,
which stops the host from running ahead. Labels usually come from NumPy (a ``DataLoader``,
``burn.tensor``), whose values the host has in hand at upload: ``Backend.from_numpy`` records
the (min, max) of each integer upload here, keyed by its storage, and the check passes without
a read when those bounds fit. Tensors are never mutated, so the bounds hold for the storage's
life; the entry goes with the storage (a weak reference). Storage that takes no weak reference
is simply not recorded (the check then reads the device, as before).

Each entry also keeps its origin: the storage first uploaded, which copies pass on. Inside
``recording_limits`` the index checks note the origin of their indices and the size of the
axis indexed; ``burn.train.CapturedStep`` records them at the capture, and checks the
inputs of each replay, which runs no index check, against them.

Example:
    >>> import numpy as np
    >>> storage = np.zeros(3)
    >>> remember(storage, np.array([4, 0, 9]))
    >>> known_bounds(storage)
    (0, 9)
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

# id(storage) -> (a weak reference to it, min, max, a weak reference to the storage whose
# values it holds: itself, or the one it was copied from)
_BOUNDS: dict[int, tuple[weakref.ref, int, int, weakref.ref]] = {}
# while recording (``recording_limits``): (origin storage, the size its values index)
_limits: list[tuple[Any, int]] | None = None


def remember(storage: Any, values: np.ndarray) -> None:
    """Record the bounds of ``values`` (an integer host array, not empty) as those of
    ``storage``, which now holds them."""
    remember_range(storage, int(values.min()), int(values.max()))


def remember_range(storage: Any, low: int, high: int) -> None:
    """Record ``[low, high]`` as the bounds of what ``storage`` holds (values the host knows
    without reading them: an ``arange``'s ends, a copy of storage with known bounds)."""
    _remember(storage, low, high, None)


def _remember(storage: Any, low: int, high: int, origin: weakref.ref | None) -> None:
    key = id(storage)
    try:
        ref = weakref.ref(storage, lambda _, key=key: _BOUNDS.pop(key, None))
    except TypeError:  # no weak references to this kind of storage: nothing recorded
        return
    _BOUNDS[key] = (ref, low, high, ref if origin is None else origin)


def inherit(target: Any, source: Any) -> None:
    """``target`` now holds (some of) ``source``'s values: it gets ``source``'s bounds, or
    none when those are not known (storage written over, such as a captured step's inputs,
    loses what it had)."""
    entry = _entry(source)
    if entry is not None:
        _remember(target, entry[1], entry[2], entry[3])
    else:
        _BOUNDS.pop(id(target), None)


def origin(storage: Any) -> Any:
    """The storage whose values ``storage`` holds, as far as bounds were passed on (itself
    when its bounds were recorded at upload; None when none are known)."""
    entry = _entry(storage)
    return None if entry is None else entry[3]()


def index_limit(storage: Any, size: int) -> None:
    """Note that ``storage``'s values index an axis of ``size`` (called by the index checks):
    kept while ``recording_limits``, so that a captured step can check the inputs of each
    replay, which no index check sees."""
    if _limits is not None:
        _limits.append((origin(storage), size))


@contextlib.contextmanager
def recording_limits() -> Iterator[list[tuple[Any, int]]]:
    """Collect ``(origin storage, size)`` for each index check inside the block.

    Example:
        >>> storage = np.zeros(3)
        >>> remember(storage, np.array([1, 2]))
        >>> with recording_limits() as limits:
        ...     index_limit(storage, 5)
        >>> limits == [(storage, 5)]
        True
    """
    global _limits
    saved, _limits = _limits, []
    try:
        yield _limits
    finally:
        _limits = saved


def known_bounds(storage: Any) -> tuple[int, int] | None:
    """(min, max) of every value ``storage`` holds, if recorded at upload, else None."""
    entry = _entry(storage)
    return None if entry is None else (entry[1], entry[2])


def _entry(storage: Any) -> tuple[weakref.ref, int, int, weakref.ref] | None:
    entry = _BOUNDS.get(id(storage))
    if entry is None or entry[0]() is not storage:  # none, or an id reused since
        return None
    return entry
