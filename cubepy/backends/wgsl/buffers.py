"""Device arrays and the buffer pool of the ``wgsl`` backend.

A ``DeviceArray`` is a shape, a cubepy dtype and a pooled storage buffer. Buffers come from a
``BufferPool`` in size classes (powers of two, at least 256 bytes); a released buffer goes back
to its class's free list and is reused by the next allocation of that class. The free lists
hold at most ``cap_bytes``; beyond it the oldest free buffers are destroyed.

Threads may share arrays and the pool: the pool's lists change, and uploads, clears, copies
and reads reach the device's command stream, only under the device's lock (``stream.py``).

Storage layout of each dtype (the code generator must declare and access buffers this way):

| cubepy dtype | WGSL element | bytes | host side | needs |
| --- | --- | --- | --- | --- |
| ``bool`` | ``u32`` (0 or 1) | 4 | ``np.bool_`` converted on upload/download | - |
| ``int32`` | ``i32`` | 4 | as is | - |
| ``uint32`` | ``u32`` | 4 | as is | - |
| ``float32`` | ``f32`` | 4 | as is | - |
| ``float16`` | ``f16`` (``array<f16>``, 2 per word) | 2 | as is | ``shader-f16`` |
| ``int64`` | ``i64`` | 8 | as is | ``shader-int64`` |
| ``float64`` | ``f64`` | 8 | as is | ``shader-f64`` |
| ``int8`` ``uint8`` ``int16`` ``bfloat16`` | - | - | ``UnsupportedDtypeError`` | - |

A kernel reads a bool element as ``x[i] != 0u`` and writes ``select(0u, 1u, b)``; a float16
kernel starts with ``enable f16;``.

Elements are contiguous in C order from byte 0 of the buffer. A storage binding covers the
array's bytes rounded up to 16 (whole ``vec4`` elements, for kernels that declare it
``array<vec4<T>>``; rounded up to 4 in a buffer too small for that), see
``DeviceArray.binding_size``. Kernels do not rely on ``arrayLength()``.

Example:
    >>> import numpy as np
    >>> a = from_numpy(np.arange(4, dtype=np.float32))
    >>> a.numpy().tolist()
    [0.0, 1.0, 2.0, 3.0]
    >>> a.release()
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import wgpu

from cubepy.backends.wgsl.device import (
    NON_WGSL_DTYPES,
    UnsupportedDtypeError,
    WgslDevice,
    WgslRuntimeError,
    get_device,
)

MIN_BUFFER_BYTES = 256
DEFAULT_POOL_CAP_BYTES = 256 * 1024 * 1024
BUFFER_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


@dataclass(frozen=True)
class DtypeLayout:
    """How one cubepy dtype is stored in a buffer (see the module's table)."""

    name: str
    wgsl: str  # the element type of the WGSL array
    itemsize: int  # bytes per element in the buffer
    host: np.dtype  # the NumPy dtype on the host
    storage: np.dtype  # the NumPy dtype of the buffer's bytes


DTYPE_LAYOUTS: dict[str, DtypeLayout] = {
    d.name: d
    for d in (
        DtypeLayout("bool", "u32", 4, np.dtype(np.bool_), np.dtype(np.uint32)),
        DtypeLayout("int32", "i32", 4, np.dtype(np.int32), np.dtype(np.int32)),
        DtypeLayout("uint32", "u32", 4, np.dtype(np.uint32), np.dtype(np.uint32)),
        DtypeLayout("float32", "f32", 4, np.dtype(np.float32), np.dtype(np.float32)),
        DtypeLayout("float16", "f16", 2, np.dtype(np.float16), np.dtype(np.float16)),
        DtypeLayout("int64", "i64", 8, np.dtype(np.int64), np.dtype(np.int64)),
        DtypeLayout("float64", "f64", 8, np.dtype(np.float64), np.dtype(np.float64)),
    )
}

_ALIASES = {
    "int1": "bool",
    "bool_": "bool",
    "i32": "int32",
    "u32": "uint32",
    "f32": "float32",
    "f16": "float16",
    "half": "float16",
    "i64": "int64",
    "f64": "float64",
    "i8": "int8",
    "u8": "uint8",
    "i16": "int16",
    "bf16": "bfloat16",
}


def dtype_name(dtype: Any) -> str:
    """The cubepy name of ``dtype`` (a cubepy name or alias, a NumPy dtype, or has ``.name``).

    Example:
        >>> dtype_name(np.float32), dtype_name("f16"), dtype_name(np.bool_)
        ('float32', 'float16', 'bool')
    """
    if isinstance(dtype, str):
        name = dtype
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = str(getattr(dtype, "name", dtype))
    return _ALIASES.get(name, name)


def dtype_layout(dtype: Any, device: WgslDevice | None = None) -> DtypeLayout:
    """The storage layout of ``dtype``; raises ``UnsupportedDtypeError`` when the target lacks it.

    Example:
        >>> dtype_layout("bool").wgsl
        'u32'
    """
    name = dtype_name(dtype)
    layout = DTYPE_LAYOUTS.get(name)
    if layout is None or name in NON_WGSL_DTYPES:
        raise UnsupportedDtypeError(
            f"dtype {name!r} is not supported on target 'wgsl' (WGSL has no 8-bit, 16-bit "
            f"integer or bfloat16 type). Supported: {', '.join(sorted(DTYPE_LAYOUTS))} "
            "(float16, int64 and float64 only where the adapter has them)."
        )
    (device or get_device()).require_dtype(name)
    return layout


def size_class(nbytes: int, max_buffer_size: int | None = None) -> int:
    """The pool's buffer size for ``nbytes``: the next power of two, at least 256.

    Above ``max_buffer_size`` the power of two cannot be allocated; the size is then
    ``nbytes`` rounded up to 4.

    Example:
        >>> size_class(1), size_class(257), size_class(4096)
        (256, 512, 4096)
    """
    size = max(MIN_BUFFER_BYTES, 1 << max(0, math.ceil(math.log2(max(nbytes, 1)))))
    if max_buffer_size is not None and size > max_buffer_size:
        size = -(-nbytes // 4) * 4
    return size


_uids = itertools.count(1)


class PooledBuffer:
    """A storage buffer handed out by a ``BufferPool``; ``uid`` is unique for the process."""

    __slots__ = ("buffer", "size", "uid")

    def __init__(self, buffer: wgpu.GPUBuffer, size: int) -> None:
        self.buffer = buffer
        self.size = size
        self.uid = next(_uids)


class BufferPool:
    """Storage buffers in power-of-two size classes, reused after release.

    Free buffers are kept per class (the most recently freed is reused first) while their
    total stays within ``cap_bytes``; the oldest free buffers are destroyed beyond it.
    Frees may arrive from garbage collection at any time: they are queued and applied at the
    next pool call, so the pool's lists are never changed from inside a finalizer.

    Example:
        >>> pool = get_pool()
        >>> b = pool.allocate(1000); b.size
        1024
        >>> pool.free(b)
    """

    def __init__(self, device: WgslDevice, cap_bytes: int = DEFAULT_POOL_CAP_BYTES) -> None:
        self.device = device
        self.cap_bytes = cap_bytes
        self.held_bytes = 0  # bytes in the free lists
        self.in_use_bytes = 0  # bytes handed out and not yet freed
        self.allocations = 0  # buffers created
        self.reuses = 0  # allocations served from a free list
        self._free: OrderedDict[int, PooledBuffer] = OrderedDict()  # uid -> buffer, oldest first
        self._by_size: dict[int, dict[int, None]] = {}  # size -> uids (ordered set)
        self._pending: deque[PooledBuffer] = deque()
        self._destroy_listeners: list[Callable[[wgpu.GPUBuffer], None]] = []

    def add_destroy_listener(self, listener: Callable[[wgpu.GPUBuffer], None]) -> None:
        """Call ``listener(buffer)`` before a pooled buffer is destroyed (caches drop it)."""
        self._destroy_listeners.append(listener)

    def allocate(self, nbytes: int) -> PooledBuffer:
        """A buffer of at least ``nbytes`` bytes (contents undefined)."""
        max_size = self.device.limits.get("max_buffer_size")
        if max_size is not None and nbytes > max_size:
            raise WgslRuntimeError(
                f"cannot allocate {nbytes} bytes on {self.device.adapter_summary!r}: "
                f"max_buffer_size is {max_size}"
            )
        size = size_class(nbytes, max_size)
        with self.device.lock:  # two threads must not take the same free buffer
            self.collect()
            uids = self._by_size.get(size)
            if uids:
                uid, _ = uids.popitem()
                pooled = self._free.pop(uid)
                self.held_bytes -= size
                self.reuses += 1
            else:
                buffer = self.device.device.create_buffer(size=size, usage=BUFFER_USAGE)
                pooled = PooledBuffer(buffer, size)
                self.allocations += 1
            self.in_use_bytes += size
        return pooled

    def free(self, pooled: PooledBuffer) -> None:
        """Give ``pooled`` back (safe to call from a finalizer, in any thread)."""
        # No lock: a finalizer may run in the middle of another pool call, or in a thread
        # that another waits for; deque.append is atomic and only locked callers apply it.
        self._pending.append(pooled)

    def collect(self) -> None:
        """Apply queued frees and trim the free lists to ``cap_bytes``."""
        with self.device.lock:
            while self._pending:
                pooled = self._pending.popleft()
                self.in_use_bytes -= pooled.size
                self._free[pooled.uid] = pooled
                self._by_size.setdefault(pooled.size, {})[pooled.uid] = None
                self.held_bytes += pooled.size
            if self.held_bytes > self.cap_bytes:
                self._trim(self.cap_bytes)

    def clear(self) -> None:
        """Destroy every free buffer."""
        with self.device.lock:
            self.collect()
            self._trim(0)

    def stats(self) -> dict[str, int]:
        """Counters: held (free) bytes, in-use bytes, buffers created, reuses."""
        with self.device.lock:
            return {
                "held_bytes": self.held_bytes,
                "in_use_bytes": self.in_use_bytes,
                "free_buffers": len(self._free),
                "allocations": self.allocations,
                "reuses": self.reuses,
            }

    def _trim(self, limit: int) -> None:
        # Called with the device's lock held. A recorded but unsubmitted launch may use the
        # buffer: submit before destroying.
        self.device.stream.flush()
        while self.held_bytes > limit and self._free:
            uid, pooled = self._free.popitem(last=False)
            del self._by_size[pooled.size][uid]
            self.held_bytes -= pooled.size
            for listener in self._destroy_listeners:
                listener(pooled.buffer)
            pooled.buffer.destroy()


def get_pool(device: WgslDevice | None = None) -> BufferPool:
    """The buffer pool of ``device`` (default: the process's device)."""
    device = device or get_device()
    pool = device.caches.get("buffer_pool")
    if pool is None:
        with device.lock:  # one pool per device, even when threads ask at once
            pool = device.caches.get("buffer_pool")
            if pool is None:
                pool = device.caches["buffer_pool"] = BufferPool(device)
    return pool


def _release(pool: BufferPool, pooled: PooledBuffer) -> None:
    pool.free(pooled)


class DeviceArray:
    """An n-d array in a WebGPU storage buffer (``cube.DeviceArray``).

    Attributes: ``shape``, ``dtype`` (cubepy name), ``size`` (elements), ``nbytes`` (bytes of
    data), ``layout`` (``DtypeLayout``), ``device``. ``buffer`` is the ``wgpu.GPUBuffer``;
    ``binding_size`` the bytes a storage binding covers. The buffer returns to the pool on
    ``release()`` or when the array is garbage collected.

    Example:
        >>> x = DeviceArray.empty((2, 3), "float32")
        >>> x.shape, x.dtype, x.size
        ((2, 3), 'float32', 6)
    """

    __cube_device_array__ = "wgpu"  # cubepy.runtime.args routes such arguments to 'wgsl'

    def __init__(self, shape: Sequence[int], dtype: Any, device: WgslDevice | None = None) -> None:
        self.device = device or get_device()
        self.layout = dtype_layout(dtype, self.device)
        self.dtype: str = self.layout.name
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        if any(s < 0 for s in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.size: int = math.prod(self.shape)
        self.nbytes: int = self.size * self.layout.itemsize
        self._pool = get_pool(self.device)
        self._pooled: PooledBuffer | None = self._pool.allocate(self.nbytes)
        self._finalizer = weakref.finalize(self, _release, self._pool, self._pooled)
        self._finalizer.atexit = False
        # What a bind group of this array depends on; launch caches key on it (None: released).
        self._bind_key: tuple | None = (self._pooled.uid, self.binding_size, self.dtype)

    @classmethod
    def empty(
        cls, shape: Sequence[int] | int, dtype: Any, device: WgslDevice | None = None
    ) -> DeviceArray:
        """An array with undefined contents."""
        return cls((shape,) if isinstance(shape, int) else shape, dtype, device)

    @classmethod
    def zeros(
        cls, shape: Sequence[int] | int, dtype: Any, device: WgslDevice | None = None
    ) -> DeviceArray:
        """An array of zeros."""
        array = cls.empty(shape, dtype, device)
        if array.nbytes:
            # Recorded in the command stream: ordered with launches, no host-side zeros.
            with array.device.stream.recording() as encoder:
                encoder.clear_buffer(array.buffer, 0, array.binding_size)
        return array

    @classmethod
    def from_numpy(cls, host: Any, device: WgslDevice | None = None) -> DeviceArray:
        """A device copy of a NumPy array (any strides; converted to the storage layout)."""
        host = np.asarray(host)
        array = cls(host.shape, host.dtype, device)
        array.copy_from(host)
        return array

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element in the buffer."""
        return self.layout.itemsize

    @property
    def buffer(self) -> wgpu.GPUBuffer:
        """The storage buffer (raises after ``release()``)."""
        return self._live().buffer

    @property
    def buffer_uid(self) -> int:
        """A process-unique id of the pooled buffer (cache keys use it)."""
        return self._live().uid

    @property
    def binding_size(self) -> int:
        """Bytes a storage binding of this array covers: ``nbytes`` rounded up to 16 (whole
        ``vec4`` elements, for kernels that declare the binding ``array<vec4<T>>``), or to 4
        where the buffer is too small for that."""
        vec4 = max(16, -(-self.nbytes // 16) * 16)
        pooled = self._pooled
        if pooled is not None and vec4 <= pooled.size:
            return vec4
        return max(4, -(-self.nbytes // 4) * 4)

    @property
    def released(self) -> bool:
        """Whether the buffer went back to the pool."""
        return self._pooled is None

    def copy_from(self, host: Any) -> None:
        """Upload ``host`` (same shape; cast to this dtype) into this array; a ``DeviceArray``
        of the same shape and dtype is copied on the device instead."""
        if isinstance(host, DeviceArray):
            self._copy_on_device(host)
            return
        host = np.asarray(host)
        if host.shape != self.shape:
            raise ValueError(f"shape mismatch: array {self.shape}, host {host.shape}")
        data = np.ascontiguousarray(host, dtype=self.layout.host).astype(
            self.layout.storage, copy=False
        )
        if self.nbytes == 0:
            return
        raw = data.tobytes()
        if len(raw) % 4:
            raw += bytes(4 - len(raw) % 4)
        self.device.stream.write(self.buffer, 0, raw)  # after the launches recorded before

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the array (waits for the launches recorded before it)."""
        if self.nbytes == 0:
            return np.empty(self.shape, self.layout.host)
        # Copied and submitted under the device's lock, mapped outside it (see stream.py).
        raw = self.device.stream.read(self.buffer, 0, self.binding_size)
        data = np.frombuffer(raw, dtype=self.layout.storage, count=self.size)
        return data.astype(self.layout.host).reshape(self.shape)

    def copy(self) -> DeviceArray:
        """A new array with the same contents (a device-side copy, recorded in the stream)."""
        out = DeviceArray(self.shape, self.dtype, self.device)
        out._copy_on_device(self)
        return out

    def _copy_on_device(self, source: DeviceArray) -> None:
        if (source.shape, source.dtype, source.device) != (self.shape, self.dtype, self.device):
            raise ValueError(f"copy_from: {source.dtype} {source.shape} into {self.dtype} "
                             f"{self.shape}: the shape, dtype and device must be the same")
        if self.nbytes:
            with self.device.stream.recording() as encoder:
                encoder.copy_buffer_to_buffer(source.buffer, 0, self.buffer, 0,
                                              self.binding_size)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        host = self.numpy()
        return host if dtype is None else host.astype(dtype, copy=False)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def release(self) -> None:
        """Return the buffer to the pool now; the array is unusable afterwards."""
        if self._pooled is not None:
            self._pooled = None
            self._bind_key = None
            self._finalizer()
            self._pool.collect()

    def _live(self) -> PooledBuffer:
        if self._pooled is None:
            raise WgslRuntimeError("this DeviceArray was released; its buffer is back in the pool")
        return self._pooled

    def __repr__(self) -> str:
        state = " released" if self._pooled is None else ""
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype!r}{state})"


def from_numpy(host: Any, device: WgslDevice | None = None) -> DeviceArray:
    """A device copy of a NumPy array. See ``DeviceArray.from_numpy``."""
    return DeviceArray.from_numpy(host, device)


def empty(shape: Sequence[int] | int, dtype: Any, device: WgslDevice | None = None) -> DeviceArray:
    """An array with undefined contents. See ``DeviceArray.empty``."""
    return DeviceArray.empty(shape, dtype, device)


def zeros(shape: Sequence[int] | int, dtype: Any, device: WgslDevice | None = None) -> DeviceArray:
    """An array of zeros. See ``DeviceArray.zeros``."""
    return DeviceArray.zeros(shape, dtype, device)
