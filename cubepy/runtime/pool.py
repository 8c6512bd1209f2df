"""A pool of host memory for NumPy-backed storage (the ``cpu`` target and Triton's interpreter).

Arrays of at least ``min_pooled_bytes`` (64 KiB) view blocks in power-of-two size classes;
when the array and every view of it are gone, the block returns to its class's free list
(frees from the garbage collector are queued and applied at the next pool call). Free blocks
are kept while their total stays within ``cap_bytes``. Smaller arrays come straight from
NumPy's allocator: malloc already recycles small blocks, faster than a pooled block's
bookkeeping (a few microseconds, which matter to a 1,000-element op).

Example:
    >>> pool = host_pool()
    >>> a = pool.empty(1000, np.dtype(np.float32))
    >>> a.shape, pool.stats()["in_use_bytes"] >= 4000
    ((1000,), True)
"""

from __future__ import annotations

import threading
import weakref
from collections import deque

import numpy as np

MIN_POOLED_BYTES = 64 * 1024
DEFAULT_CAP_BYTES = 512 * 1024 * 1024


def size_class(nbytes: int) -> int:
    """The block size serving ``nbytes``: the next power of two."""
    return 1 << max(0, nbytes - 1).bit_length()


class HostPool:
    """Reusable host blocks in size classes (see the module docstring)."""

    def __init__(self, cap_bytes: int = DEFAULT_CAP_BYTES,
                 min_pooled_bytes: int = MIN_POOLED_BYTES):
        self.cap_bytes = cap_bytes
        self.min_pooled_bytes = min_pooled_bytes
        self.held_bytes = 0
        self.in_use_bytes = 0
        self.allocations = 0
        self.reuses = 0
        self._free: dict[int, list[np.ndarray]] = {}
        self._pending: deque[np.ndarray] = deque()
        self._watch: dict[int, weakref.ref] = {}  # keeps the weak references (and callbacks)
        self._lock = threading.Lock()

    def empty(self, count: int, dtype: np.dtype) -> np.ndarray:
        """A 1-D array of ``count`` elements of ``dtype`` (contents undefined)."""
        nbytes = count * dtype.itemsize
        if nbytes < self.min_pooled_bytes:
            return np.empty(count, dtype)
        size = size_class(nbytes)
        with self._lock:
            self._collect()
            blocks = self._free.get(size)
            if blocks:
                raw = blocks.pop()
                self.held_bytes -= size
                self.reuses += 1
            else:
                raw = np.empty(size, np.uint8)
                self.allocations += 1
            self.in_use_bytes += size
        array = raw[:nbytes].view(dtype)
        ref = weakref.ref(array, self._release_callback(raw))
        self._watch[id(ref)] = ref
        return array

    def _release_callback(self, raw: np.ndarray):
        def release(ref: weakref.ref) -> None:
            self._watch.pop(id(ref), None)
            self._pending.append(raw)

        return release

    def stats(self) -> dict[str, int]:
        """Counters: held (free) bytes, in-use bytes, blocks created, reuses."""
        with self._lock:
            self._collect()
            return {"held_bytes": self.held_bytes, "in_use_bytes": self.in_use_bytes,
                    "allocations": self.allocations, "reuses": self.reuses}

    def clear(self) -> None:
        """Drop every free block."""
        with self._lock:
            self._collect()
            self._free.clear()
            self.held_bytes = 0

    def _collect(self) -> None:
        while self._pending:
            raw = self._pending.popleft()
            size = raw.nbytes
            self.in_use_bytes -= size
            if self.held_bytes + size > self.cap_bytes:
                continue  # over the cap: let NumPy free it
            self._free.setdefault(size, []).append(raw)
            self.held_bytes += size


_POOL: HostPool | None = None


def host_pool() -> HostPool:
    """The process's host pool."""
    global _POOL
    if _POOL is None:
        _POOL = HostPool()
    return _POOL
