"""The command stream of a ``wgsl`` device: one pending command encoder, and the device's lock.

Launches are recorded into one pending encoder and submitted in batches: a launch does not
wait for the GPU. Anything that goes through the queue directly (``queue.write_buffer``,
reads) must call ``flush()`` first so that it stays ordered after the launches recorded
before it; ``write()`` and ``read()`` do that.

Threads. The encoder, its open compute pass, the batch counters, and the caches and pools
other modules keep per device are shared by every thread that launches on the device. A
submit finishes the encoder: a thread recording into it at that moment got wgpu's "Encoding
must not have ended", and a read could map a buffer before the submit holding the launch
that wrote it. So every operation on that shared state holds ``CommandStream.lock``, the
device's one lock (``WgslDevice.lock`` is the same object). It is reentrant because such
operations nest: a dispatch flushes when its batch is full, a buffer pool trim flushes
before it destroys buffers, a flush runs the uniform ring's upload hook. Critical sections
record or submit and never wait for the GPU, except where waiting is the point (timing,
probes): ``read()`` and ``synchronize()`` submit under the lock and map afterwards, outside it.

Example:
    >>> from cubepy.backends.wgsl.device import get_device
    >>> stream = get_device().stream
    >>> with stream.recording() as encoder:  # the lock is held while recording into it
    ...     pass
    >>> stream.synchronize()
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import wgpu

try:  # wgpu-native's raw entry points: the launch fast path skips wgpu-py's wrappers
    from wgpu.backends.wgpu_native._ffi import ffi as _ffi
    from wgpu.backends.wgpu_native._ffi import lib as _lib

    _raw_set_pipeline = _lib.wgpuComputePassEncoderSetPipeline
    _raw_set_bind_group = _lib.wgpuComputePassEncoderSetBindGroup
    _raw_dispatch = _lib.wgpuComputePassEncoderDispatchWorkgroups
    _NULL = _ffi.NULL
except Exception:  # noqa: BLE001 - another wgpu backend or version: use the public API
    _ffi = None

_READBACK_USAGE = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
# wgpu-py's own queue.read_buffer maps its staging buffer with this mode: plain "READ" first
# submits an empty command buffer (a wgpu-native workaround for buffers filled only by
# queue.write_buffer), which a buffer filled by a submitted copy or clear does not need.
_MAP_AFTER_SUBMIT = "READ_NOSYNC"


def _map_for_reading(buffer: wgpu.GPUBuffer) -> None:
    try:
        buffer.map_sync(_MAP_AFTER_SUBMIT)
    except (KeyError, ValueError, TypeError):  # a wgpu-py without the private mode
        buffer.map_sync("READ")


class CommandStream:
    """The pending command encoder of a device: launches are recorded, then submitted in batches.

    Dispatches share one open compute pass (WebGPU orders dispatches within a pass and makes
    each dispatch's storage writes visible to the next). The pass stays open across launches
    and is ended only when something needs the encoder or the queue: a copy or clear
    (``encoder()``), ``flush()`` (submit, no wait), ``synchronize()`` (wait for the GPU), or
    the automatic submit after ``max_batch`` dispatches. Hooks added with ``add_submit_hook``
    run just before each submit (the uniform ring uploads its new slots there, so the upload
    is ordered before the dispatches that read them).

    ``dispatch()`` is the launch fast path: it skips ``set_pipeline`` / ``set_bind_group``
    when the pass already has that pipeline / bind group and dynamic offset, and calls
    wgpu-native directly (commands recorded in a pass report their errors when the pass
    ends, so wgpu-py's per-call error capture adds nothing there).

    ``lock`` guards all of it (see the module docstring): the methods take it themselves;
    a caller of ``encoder()`` or ``compute_pass()`` holds it for as long as it records into
    what they return (``recording()`` does both).

    Example:
        >>> from cubepy.backends.wgsl.device import get_device
        >>> stream = get_device().stream
        >>> stream.synchronize()
    """

    def __init__(self, device: wgpu.GPUDevice, max_batch: int = 256) -> None:
        self._device = device
        self.max_batch = max_batch
        # The device's one lock; reentrant because flushes happen inside dispatches and trims.
        self.lock = threading.RLock()
        self._encoder: wgpu.GPUCommandEncoder | None = None
        self._pass: wgpu.GPUComputePassEncoder | None = None
        self._pending = 0
        self._fences: list[wgpu.GPUBuffer] = []  # free fence buffers (one per waiting thread)
        self._flush_hooks: list[Callable[[], None]] = []
        self._submit_hooks: list[Callable[[], None]] = []
        # What the open pass has bound, so repeated launches skip redundant commands.
        self._raw_pass: Any = None
        self._bound_pipeline: Any = None
        self._bound_group: Any = None
        self._bound_offset = -1
        self._offsets = _ffi.new("uint32_t[1]") if _ffi is not None else None
        # Timing asks for timestamp writes on every pass it opens (see timing.py).
        self.pass_timestamps: Callable[[], dict[str, Any] | None] | None = None

    @property
    def pending_dispatches(self) -> int:
        """Dispatches recorded since the last submit."""
        return self._pending

    def compute_pass(self) -> wgpu.GPUComputePassEncoder:
        """The open compute pass of the pending encoder (opened on demand); hold ``lock``
        while recording into it.

        The caller may bind anything on it, so ``dispatch()`` rebinds afterwards.
        """
        with self.lock:
            compute_pass = self._open_pass()
            self._forget_bindings()
            return compute_pass

    def dispatch(
        self,
        pipeline: wgpu.GPUComputePipeline,
        group: wgpu.GPUBindGroup,
        offset: int,
        x: int,
        y: int,
        z: int,
    ) -> None:
        """Record one dispatch of ``(x, y, z)`` workgroups with ``group`` at bind group 0.

        ``offset`` is the dynamic offset of the group's uniform binding, or -1 when the group
        has none. Counts the dispatch (see ``note_dispatch``).
        """
        with self.lock:
            compute_pass = self._pass
            if compute_pass is None:
                compute_pass = self._open_pass()
            raw = self._raw_pass
            if raw is None:  # no direct access to wgpu-native: the public API
                compute_pass.set_pipeline(pipeline)
                compute_pass.set_bind_group(0, group, [offset] if offset >= 0 else [])
                compute_pass.dispatch_workgroups(x, y, z)
            else:
                if pipeline is not self._bound_pipeline:
                    _raw_set_pipeline(raw, pipeline._internal)
                    self._bound_pipeline = pipeline
                    self._bound_group = None  # a new pipeline may need the group set again
                if group is not self._bound_group or offset != self._bound_offset:
                    if offset >= 0:
                        self._offsets[0] = offset
                        _raw_set_bind_group(raw, 0, group._internal, 1, self._offsets)
                    else:
                        _raw_set_bind_group(raw, 0, group._internal, 0, _NULL)
                    self._bound_group = group
                    self._bound_offset = offset
                _raw_dispatch(raw, x, y, z)
            self._pending += 1
            if self._pending >= self.max_batch:
                self.flush()

    def encoder(self) -> wgpu.GPUCommandEncoder:
        """The pending encoder with no open pass, for copies and query resolves; hold
        ``lock`` while recording into it (or use ``recording()``)."""
        with self.lock:
            self._end_pass()
            if self._encoder is None:
                self._encoder = self._device.create_command_encoder()
            return self._encoder

    @contextlib.contextmanager
    def recording(self) -> Iterator[wgpu.GPUCommandEncoder]:
        """``with stream.recording() as encoder:`` records into the pending encoder, holding
        the lock so that no other thread submits it meanwhile."""
        with self.lock:
            yield self.encoder()

    def note_dispatch(self) -> None:
        """Count one recorded dispatch; submits the batch when it reaches ``max_batch``."""
        with self.lock:
            self._pending += 1
            if self._pending >= self.max_batch:
                self.flush()

    def add_flush_hook(self, hook: Callable[[], None]) -> None:
        """Call ``hook()`` after every submit."""
        with self.lock:
            self._flush_hooks.append(hook)

    def add_submit_hook(self, hook: Callable[[], None]) -> None:
        """Call ``hook()`` just before every submit (queue writes it makes come first)."""
        with self.lock:
            self._submit_hooks.append(hook)

    def flush(self) -> None:
        """Submit what is recorded, without waiting for the GPU."""
        with self.lock:
            self._end_pass()
            for hook in self._submit_hooks:
                hook()
            encoder, self._encoder = self._encoder, None
            self._pending = 0
            if encoder is not None:
                self._device.queue.submit([encoder.finish()])
            for hook in self._flush_hooks:
                hook()

    def write(self, buffer: wgpu.GPUBuffer, offset: int, data: Any) -> None:
        """``queue.write_buffer``, ordered after every launch recorded before it."""
        with self.lock:  # no other thread may record between the flush and the write
            self.flush()
            self._device.queue.write_buffer(buffer, offset, data)

    def read(self, buffer: wgpu.GPUBuffer, offset: int, size: int) -> memoryview:
        """``size`` bytes of ``buffer`` from ``offset``, once the launches recorded before
        the call have finished. Waits for the GPU without holding the lock."""
        with self.lock:
            # The copy joins the pending work in one submit; it is submitted (the encoder
            # finished) before the lock is let go, so mapping needs the lock no more.
            staging = self._device.create_buffer(size=size, usage=_READBACK_USAGE)
            self.encoder().copy_buffer_to_buffer(buffer, offset, staging, 0, size)
            self.flush()
        try:
            _map_for_reading(staging)
            return staging.read_mapped()
        finally:
            staging.destroy()

    def synchronize(self) -> None:
        """Submit what is recorded and wait until the GPU has finished all submitted work."""
        # wgpu-py 0.32's queue.on_submitted_work_done_sync() fails (its callback has the
        # wrong C signature), so wait on a fence: a mapping resolves once the submit that
        # last used the buffer is done, and the queue finishes submits in order. Each waiting
        # thread maps a fence of its own, outside the lock.
        with self.lock:
            fence = self._fences.pop() if self._fences else self._device.create_buffer(
                size=4, usage=_READBACK_USAGE, label="cubepy fence")
            self.encoder().clear_buffer(fence, 0, 4)
            self.flush()
        _map_for_reading(fence)
        fence.unmap()
        with self.lock:
            self._fences.append(fence)

    def _open_pass(self) -> wgpu.GPUComputePassEncoder:
        if self._pass is None:
            if self._encoder is None:
                self._encoder = self._device.create_command_encoder()
            writes = self.pass_timestamps() if self.pass_timestamps is not None else None
            if writes:
                self._pass = self._encoder.begin_compute_pass(timestamp_writes=writes)
            else:
                self._pass = self._encoder.begin_compute_pass()
            self._raw_pass = getattr(self._pass, "_internal", None) if _ffi is not None else None
            self._forget_bindings()
        return self._pass

    def _forget_bindings(self) -> None:
        self._bound_pipeline = None
        self._bound_group = None
        self._bound_offset = -1

    def _end_pass(self) -> None:
        if self._pass is not None:
            compute_pass, self._pass = self._pass, None
            self._raw_pass = None
            self._forget_bindings()
            compute_pass.end()
