"""Time a sequence of launches on the ``wgsl`` device; the autotuner's timer.

With the ``timestamp-query`` feature, every compute pass opened while timing gets a
timestamp at its beginning and end; the result is the sum of the passes' durations (GPU
time, without the gaps between submits), converted with the queue's timestamp period. Without
it, or if the passes outnumber the query set, the result is the wall clock around recording,
submitting and waiting.

Timing holds the device's lock (``stream.py``) from the first wait to the last read: launches
of other threads wait meanwhile, so they are neither timed (each pass opened while timing
gets timestamps) nor mixed into the work being timed, and the query buffers are this
timing's alone. ``record`` runs in the calling thread, which may take the lock again.

Example:
    >>> seconds = time_launches(lambda: None)
    >>> seconds >= 0.0
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

import wgpu

from cubepy.backends.wgsl.device import WgslDevice, get_device

TimingMethod = Literal["auto", "timestamp", "wallclock"]
MAX_TIMED_PASSES = 256


class _TimestampSlots:
    """Hands out (begin, end) query indices to each pass opened while timing."""

    def __init__(self, query_set: wgpu.GPUQuerySet, capacity: int) -> None:
        self.query_set = query_set
        self.capacity = capacity
        self.used = 0
        self.overflowed = False

    def __call__(self) -> dict | None:
        if self.used >= self.capacity:
            self.overflowed = True
            return None
        begin = 2 * self.used
        self.used += 1
        return {
            "query_set": self.query_set,
            "beginning_of_pass_write_index": begin,
            "end_of_pass_write_index": begin + 1,
        }


def timing_method(device: WgslDevice | None = None) -> Literal["timestamp", "wallclock"]:
    """``"timestamp"`` when the device has timestamp queries, else ``"wallclock"``."""
    return "timestamp" if (device or get_device()).has("timestamp-query") else "wallclock"


def time_launches(
    record: Callable[[], None],
    *,
    device: WgslDevice | None = None,
    method: TimingMethod = "auto",
) -> float:
    """Seconds the launches recorded by ``record()`` take on the device.

    ``record`` launches kernels (``Launcher.launch``) without synchronizing; any work recorded
    before the call is submitted and finished first, so it is not counted.

    Example:
        >>> time_launches(lambda: launcher.launch((1024,), [x, out]))  # doctest: +SKIP
        0.00042
    """
    device = device or get_device()
    if method == "auto":
        method = timing_method(device)
    if method != "wallclock" and not device.has("timestamp-query"):
        raise ValueError(f"{device.adapter_summary!r} has no 'timestamp-query' feature")
    stream = device.stream
    with device.lock:
        stream.synchronize()
        if method == "wallclock":
            started = time.perf_counter()
            record()
            stream.synchronize()
            return time.perf_counter() - started
        return _time_with_timestamps(device, record)


def _query_resources(device: WgslDevice) -> tuple[wgpu.GPUQuerySet, wgpu.GPUBuffer]:
    cached = device.caches.get("timestamp_queries")
    if cached is None:
        count = 2 * MAX_TIMED_PASSES
        query_set = device.device.create_query_set(type="timestamp", count=count)
        resolve = device.device.create_buffer(
            size=8 * count, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        )
        cached = device.caches["timestamp_queries"] = (query_set, resolve)
    return cached


def _time_with_timestamps(device: WgslDevice, record: Callable[[], None]) -> float:
    # Called with the device's lock held (time_launches).
    stream = device.stream
    query_set, resolve = _query_resources(device)
    slots = _TimestampSlots(query_set, MAX_TIMED_PASSES)
    stream.pass_timestamps = slots
    started = time.perf_counter()
    try:
        record()
        stream.flush()
    finally:
        stream.pass_timestamps = None
    if slots.overflowed or slots.used == 0:
        stream.synchronize()
        return time.perf_counter() - started
    stream.encoder().resolve_query_set(query_set, 0, 2 * slots.used, resolve, 0)
    raw = stream.read(resolve, 0, 16 * slots.used)
    ticks = memoryview(raw).cast("Q").tolist()
    total = sum(ticks[2 * i + 1] - ticks[2 * i] for i in range(slots.used))
    if any(ticks[2 * i + 1] < ticks[2 * i] for i in range(slots.used)):
        # A driver that gives unordered stamps: report the wall clock instead.
        stream.synchronize()
        return time.perf_counter() - started
    return total * device.timestamp_period * 1e-9
