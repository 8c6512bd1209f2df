"""Compile WGSL into compute pipelines and launch them on the ``wgsl`` device.

Binding convention (the code generator must follow it): every binding is in
``@group(0)``; ``@binding(i)`` is the i-th entry of the launcher's ``bindings`` list, a kind
among ``"read"`` (``var<storage, read>``), ``"read_write"`` (``var<storage, read_write>``) and
at most one ``"uniform"`` (``var<uniform> params: Params``). The uniform struct starts with the
grid fields (``uniforms.GRID_FIELDS``), then the kernel's scalars in the order given to
``launch``; see ``uniforms.py`` for the layout and the grid-folding rule.

Launches are recorded into the device's pending encoder and submitted in batches; nothing
waits for the GPU until ``synchronize()`` or a read (``DeviceArray.numpy()``). Consecutive
launches share one open compute pass (``CommandStream.dispatch`` skips re-binding an unchanged
pipeline, bind group or uniform offset), uniforms live in content-addressed slots of one ring
buffer uploaded once per submit (``UniformRing``), and bind groups are cached by the bound
buffers. ``WgslKernel.launch`` (backend.py) adds a fast path for DeviceArray arguments seen
before: one tuple of the arrays' bind keys, one ``struct.pack`` of the grid and scalars, one
dispatch.

Threads may launch at once: the ring, the bind group cache and the pipeline caches are the
device's, changed only under the device's lock (``stream.py``). A launch holds it from
taking its uniform slot to recording its dispatch, since a full ring submits and reuses its
slots; pipelines compile outside it (slow, and wgpu's device is thread-safe).

Example:
    >>> import numpy as np
    >>> from cubepy.backends.wgsl.buffers import from_numpy
    >>> src = '''
    ... struct Params { cube_count_x: u32, cube_count_y: u32, cube_count_z: u32, n: u32 }
    ... @group(0) @binding(0) var<storage, read_write> out: array<u32>;
    ... @group(0) @binding(1) var<uniform> params: Params;
    ... @compute @workgroup_size(64)
    ... fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    ...     if (gid.x < params.n) { out[gid.x] = gid.x; }
    ... }'''
    >>> out = from_numpy(np.zeros(100, np.uint32))
    >>> Launcher(src, "main", ["read_write", "uniform"]).launch((2,), [out], [("uint32", 100)])
    >>> int(out.numpy()[99])
    99
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import wgpu

from cubepy.backends.wgsl.buffers import DeviceArray, get_pool
from cubepy.backends.wgsl.device import WgslDevice, WgslRuntimeError, get_device
from cubepy.backends.wgsl.uniforms import fold_grid, grid_uniform_values, pack_uniforms
from cubepy.errors import LaunchError

READ = "read"
READ_WRITE = "read_write"
UNIFORM = "uniform"
_KIND_ALIASES = {
    "read": READ,
    "read_only": READ,
    "read-only-storage": READ,
    "ro": READ,
    "read_write": READ_WRITE,
    "storage": READ_WRITE,
    "rw": READ_WRITE,
    "uniform": UNIFORM,
}
_LAYOUT_TYPES = {READ: "read-only-storage", READ_WRITE: "storage", UNIFORM: "uniform"}

UNIFORM_RING_BYTES = 1 << 20
BIND_GROUP_CACHE_SIZE = 4096


class WgslCompileError(WgslRuntimeError):
    """naga or the driver refused a kernel's WGSL; ``.source`` holds the text."""

    def __init__(self, message: str, source: str) -> None:
        super().__init__(message)
        self.source = source


class BindingLimitError(WgslRuntimeError, LaunchError):
    """A kernel binds more storage buffers, or bigger ones, than the adapter allows."""


class BindingAliasError(WgslRuntimeError, LaunchError):
    """One buffer is bound both as read-only and as read-write storage in one dispatch."""


class UniformRing:
    """One uniform buffer holding the scalars of launches, one aligned slot per distinct value.

    ``push(data)`` returns the offset of a slot holding ``data``; launches bind it through a
    dynamic offset. Slots are filled in a host copy of the buffer and uploaded with one
    ``queue.write_buffer`` just before the next submit (a submit hook of the command stream),
    so a batch of launches costs one queue write, not one per launch. A slot keeps its
    contents until the ring is full; launches with the same scalars (the usual case in a
    loop) reuse one slot and need no new bytes at all. When the ring is full it submits the
    pending work and starts again at offset 0: queue writes after a submit are ordered after
    it, so the submitted launches still read their old scalars.
    """

    def __init__(self, device: WgslDevice, size: int = UNIFORM_RING_BYTES) -> None:
        self.device = device
        self.size = min(size, device.limits.get("max_buffer_size", size))
        self.align = device.limits.get("min_uniform_buffer_offset_alignment", 256)
        usage = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        self.buffer = device.device.create_buffer(
            size=self.size, usage=usage, label="cubepy uniforms"
        )
        self.offset = 0
        self.slots: dict[bytes, int] = {}
        self._host = bytearray(self.size)
        self._dirty_lo = self.size
        self._dirty_hi = 0
        device.stream.add_submit_hook(self.upload)

    def rewind(self) -> None:
        """Forget every slot and start again at offset 0 (submit first if slots are in use).

        The caller holds the device's lock (as for ``push``)."""
        self.slots.clear()
        self.offset = 0

    def push(self, data: bytes) -> int:
        """The offset of a slot holding ``data`` (a new slot when no slot holds it yet).

        The caller holds the device's lock until the dispatch reading the slot is recorded:
        a later push may submit and rewind the ring, after which the slot is overwritten.
        """
        offset = self.slots.get(data)
        if offset is not None:
            return offset
        size = len(data)
        if self.offset + size > min(self.size, len(self._host)):
            # Pending launches use the current slots: upload them and submit first.
            self.device.stream.flush()
            self.rewind()
        offset = self.offset
        self._host[offset : offset + size] = data
        self._dirty_lo = min(self._dirty_lo, offset)
        self._dirty_hi = max(self._dirty_hi, offset + size)
        self.offset = -(-(offset + size) // self.align) * self.align
        self.slots[data] = offset
        return offset

    def upload(self) -> None:
        """Write the slots filled since the last upload into the buffer (a submit hook, so
        it runs under the device's lock)."""
        lo, hi = self._dirty_lo, self._dirty_hi
        if hi > lo:
            self._dirty_lo, self._dirty_hi = len(self._host), 0
            hi = -(-hi // 4) * 4
            self.device.queue.write_buffer(self.buffer, lo, memoryview(self._host)[lo:hi])


class BindGroupCache:
    """Bind groups keyed by layout and bound buffers, least recently used dropped first.

    Keys use ``id()`` of the buffers; the entry keeps the buffers alive so an id is not reused
    while its entry exists. The buffer pool calls ``evict`` before destroying a buffer.
    """

    def __init__(self, device: WgslDevice, capacity: int = BIND_GROUP_CACHE_SIZE) -> None:
        self.device = device
        self.capacity = capacity
        self._entries: OrderedDict[tuple, tuple[wgpu.GPUBindGroup, tuple]] = OrderedDict()
        self._keys_of: dict[int, set[tuple]] = {}
        self.hits = 0
        self.misses = 0
        get_pool(device).add_destroy_listener(self.evict)

    def get(
        self,
        layout: wgpu.GPUBindGroupLayout,
        layout_key: tuple,
        resources: Sequence[tuple[wgpu.GPUBuffer, int]],
    ) -> wgpu.GPUBindGroup:
        """The bind group binding ``(buffer, size)`` pairs to bindings 0, 1, ..."""
        key = (layout_key, tuple((id(buf), size) for buf, size in resources))
        with self.device.lock:  # the LRU order and the reverse index change together
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[0]
            self.misses += 1
            group = self.device.device.create_bind_group(
                layout=layout,
                entries=[
                    {"binding": i, "resource": {"buffer": buf, "offset": 0, "size": size}}
                    for i, (buf, size) in enumerate(resources)
                ],
            )
            buffers = tuple(buf for buf, _ in resources)
            self._entries[key] = (group, buffers)
            for buf in buffers:
                self._keys_of.setdefault(id(buf), set()).add(key)
            while len(self._entries) > self.capacity:
                old_key, (_, old_buffers) = self._entries.popitem(last=False)
                self._forget(old_key, old_buffers)
            return group

    def evict(self, buffer: wgpu.GPUBuffer) -> None:
        """Drop every bind group that binds ``buffer``."""
        with self.device.lock:
            for key in self._keys_of.pop(id(buffer), set()):
                entry = self._entries.pop(key, None)
                if entry is not None:
                    self._forget(key, entry[1])

    def __len__(self) -> int:
        return len(self._entries)

    def _forget(self, key: tuple, buffers: tuple) -> None:
        for buf in buffers:
            keys = self._keys_of.get(id(buf))
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._keys_of[id(buf)]


def _device_cache(device: WgslDevice, name: str, factory: Any) -> Any:
    value = device.caches.get(name)
    if value is None:
        with device.lock:  # one per device: a second uniform ring would be a second upload
            value = device.caches.get(name)
            if value is None:
                value = device.caches[name] = factory(device)
    return value


def normalize_bindings(bindings: Sequence[str]) -> tuple[str, ...]:
    """Binding kinds as ``"read"``, ``"read_write"`` or ``"uniform"`` (at most one uniform)."""
    kinds = []
    for kind in bindings:
        if kind not in _KIND_ALIASES:
            raise ValueError(
                f"unknown binding kind {kind!r}; use 'read', 'read_write' or 'uniform'"
            )
        kinds.append(_KIND_ALIASES[kind])
    if kinds.count(UNIFORM) > 1:
        raise ValueError("a 'wgsl' kernel has at most one uniform binding (all scalars go in it)")
    return tuple(kinds)


class Launcher:
    """A compiled WGSL compute kernel, ready to launch on grids.

    Args:
        source: the WGSL text.
        entry_point: the ``@compute`` function to run.
        bindings: the kind of ``@group(0) @binding(i)`` for each i (see the module docstring).
        name: the kernel's name, for error messages.
        device: default: the process's device.

    Pipelines are cached per device by (source hash, entry point, bindings), so building a
    second ``Launcher`` for the same source costs nothing.

    Example:
        >>> Launcher("bad wgsl", "main", ["read_write"])  # doctest: +SKIP
        WgslCompileError: WGSL of kernel 'kernel' does not compile: ...
    """

    def __init__(
        self,
        source: str,
        entry_point: str = "main",
        bindings: Sequence[str] = (),
        *,
        name: str | None = None,
        device: WgslDevice | None = None,
    ) -> None:
        self.device = device or get_device()
        self.source = source
        self.entry_point = entry_point
        self.name = name or entry_point
        self.bindings = normalize_bindings(bindings)
        self.storage_count = sum(kind != UNIFORM for kind in self.bindings)
        self.uniform_index = self.bindings.index(UNIFORM) if UNIFORM in self.bindings else None
        self._check_binding_limit()
        self._ring: UniformRing | None = (
            _device_cache(self.device, "uniform_ring", UniformRing)
            if self.uniform_index is not None
            else None
        )
        self._bind_groups: BindGroupCache = _device_cache(
            self.device, "bind_groups", BindGroupCache
        )
        self.layout, self.pipeline = self._pipeline()
        self._layout_key = (self.bindings, id(self.layout))
        self._max_per_dim: int = self.device.limits.get(
            "max_compute_workgroups_per_dimension", 65535
        )

    def launch(
        self,
        grid: Sequence[int] | int,
        buffers: Sequence[DeviceArray | wgpu.GPUBuffer],
        scalars: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Record one dispatch of ``grid`` cubes (workgroups); returns without waiting.

        ``buffers`` fill the storage bindings in order; ``scalars`` are ``(dtype, value)``
        pairs packed after the grid fields into the uniform binding. A grid with a zero axis
        launches nothing.
        """
        if len(buffers) != self.storage_count:
            raise ValueError(
                f"kernel {self.name!r} has {self.storage_count} storage bindings, "
                f"got {len(buffers)} buffers"
            )
        counts = fold_grid(grid, self._max_per_dim)
        if 0 in counts:
            return
        data = b""
        if self._ring is not None:
            data = pack_uniforms([*grid_uniform_values(grid), *scalars])
        elif scalars:
            raise ValueError(f"kernel {self.name!r} has no uniform binding for its scalars")
        elif counts != fold_grid(grid, 1 << 62):
            raise ValueError(
                f"kernel {self.name!r}: grid {grid!r} must be folded, which needs a uniform "
                "binding holding the grid (see uniforms.py)"
            )
        group = self.bind_group(buffers, len(data))
        with self.device.lock:  # the uniform slot stays ours until the dispatch is recorded
            offset = self._ring.push(data) if self._ring is not None else -1
            self.device.stream.dispatch(self.pipeline, group, offset, *counts)

    def bind_group(
        self, buffers: Sequence[DeviceArray | wgpu.GPUBuffer], uniform_size: int = 0
    ) -> wgpu.GPUBindGroup:
        """The (cached) bind group of ``buffers`` and a ``uniform_size``-byte uniform slot.

        Checks the buffers as ``launch`` does (count, types, binding size, aliasing).
        """
        if len(buffers) != self.storage_count:
            raise ValueError(
                f"kernel {self.name!r} has {self.storage_count} storage bindings, "
                f"got {len(buffers)} buffers"
            )
        resources = self._storage_resources(buffers)
        if self._ring is not None and self.uniform_index is not None:
            resources.insert(self.uniform_index, (self._ring.buffer, uniform_size))
        return self._bind_groups.get(self.layout, self._layout_key, resources)

    def dispatch(self, group: wgpu.GPUBindGroup, uniform_data: bytes, x: int, y: int, z: int
                 ) -> None:
        """Record a dispatch of ``(x, y, z)`` workgroups (already folded) with a bind group
        from ``bind_group()`` and the packed uniform bytes (``b""`` without a uniform binding).

        The launch fast path: no checks beyond those ``bind_group()`` made.
        """
        ring = self._ring
        with self.device.lock:  # the uniform slot stays ours until the dispatch is recorded
            offset = ring.push(uniform_data) if ring is not None else -1
            self.device.stream.dispatch(self.pipeline, group, offset, x, y, z)

    __call__ = launch

    def _storage_resources(
        self, buffers: Sequence[DeviceArray | wgpu.GPUBuffer]
    ) -> list[tuple[wgpu.GPUBuffer, int]]:
        limit = self.device.limits.get("max_storage_buffer_binding_size")
        resources = []
        for i, arg in enumerate(buffers):
            if isinstance(arg, DeviceArray):
                resource = (arg.buffer, arg.binding_size)
            elif isinstance(arg, wgpu.GPUBuffer):
                resource = (arg, arg.size)
            else:
                raise TypeError(
                    f"kernel {self.name!r}: buffer {i} is a {type(arg).__name__}, "
                    "expected a DeviceArray or a wgpu.GPUBuffer"
                )
            if limit is not None and resource[1] > limit:
                raise BindingLimitError(
                    f"kernel {self.name!r}: buffer {i} has {resource[1]} bytes, more than "
                    f"max_storage_buffer_binding_size={limit} of {self.device.adapter_summary!r}"
                )
            resources.append(resource)
        self._check_aliasing(resources)
        return resources

    def _check_aliasing(self, resources: list[tuple[wgpu.GPUBuffer, int]]) -> None:
        # WebGPU forbids one buffer as read-only and read-write storage in one dispatch.
        kinds = [kind for kind in self.bindings if kind != UNIFORM]
        first_use: dict[int, int] = {}
        for i, (buf, _) in enumerate(resources):
            j = first_use.setdefault(id(buf), i)
            if j != i and kinds[i] != kinds[j]:
                raise BindingAliasError(
                    f"kernel {self.name!r}: buffers {j} and {i} are the same array, bound as "
                    f"{kinds[j]!r} and {kinds[i]!r}; WebGPU forbids a buffer being read-only "
                    "and read-write storage in one dispatch. Declare both 'read_write' (the "
                    "code generator should do so for arguments that may alias)."
                )

    def _check_binding_limit(self) -> None:
        limit = self.device.limits.get("max_storage_buffers_per_shader_stage")
        if limit is not None and self.storage_count > limit:
            raise BindingLimitError(
                f"kernel {self.name!r} binds {self.storage_count} storage buffers, but "
                f"{self.device.adapter_summary!r} allows {limit} per shader stage "
                f"(max_storage_buffers_per_shader_stage={limit}). Pass fewer array "
                "arguments (e.g. pack several into one array)."
            )

    def _pipeline(self) -> tuple[wgpu.GPUBindGroupLayout, wgpu.GPUComputePipeline]:
        digest = hashlib.sha256(self.source.encode()).hexdigest()
        key = (digest, self.entry_point, self.bindings)
        cache: dict = _device_cache(self.device, "pipelines", lambda _d: {})
        cached = cache.get(key)
        if cached is not None:
            return cached
        # Compiled without the device's lock (it takes long, and wgpu's device is thread-safe);
        # two threads compiling one source at once keep the first result.
        layout = _bind_group_layout(self.device, self.bindings)
        gpu = self.device.device
        try:
            module = gpu.create_shader_module(code=self.source, label=self.name)
            pipeline = gpu.create_compute_pipeline(
                label=self.name,
                layout=gpu.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": self.entry_point},
            )
        except Exception as exc:
            raise WgslCompileError(
                f"WGSL of kernel {self.name!r} does not compile on "
                f"{self.device.adapter_summary!r}:\n{exc}",
                self.source,
            ) from exc
        with self.device.lock:
            return cache.setdefault(key, (layout, pipeline))


def _bind_group_layout(device: WgslDevice, kinds: tuple[str, ...]) -> wgpu.GPUBindGroupLayout:
    cache: dict = _device_cache(device, "bind_group_layouts", lambda _d: {})
    with device.lock:  # one layout per kinds (the bind group cache keys on its id)
        layout = cache.get(kinds)
        if layout is None:
            entries = [
                {
                    "binding": i,
                    "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": _LAYOUT_TYPES[kind],
                               "has_dynamic_offset": kind == UNIFORM},
                }
                for i, kind in enumerate(kinds)
            ]
            layout = cache[kinds] = device.device.create_bind_group_layout(entries=entries)
    return layout


def synchronize(device: WgslDevice | None = None) -> None:
    """Submit every recorded launch and wait for the GPU to finish them."""
    (device or get_device()).stream.synchronize()
