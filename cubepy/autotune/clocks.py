"""Each target's clock for the tuner: ``timer(once, count)`` is the seconds ``count`` runs of
``once()`` take on the device.

- ``cpu`` (and Triton's interpreter): the host clock, runs back to back.
- ``triton`` on a CUDA GPU: CUDA events of torch or CuPy, each run timed alone from a cold L2
  cache (``CudaEventTimer``); its ``settle(once, count)`` queues untimed runs first, for the
  tuner's final under sustained load.
- ``wgsl``: timestamp queries, or the wall clock where the device has none
  (``WgslTimer``); on a GPU adapter (not a CPU one such as lavapipe) it can ``settle`` too
  (``SettlingWgslTimer``).

A clock that can ``settle`` is a ``SustainedTimer``: the tuner times its final under sustained
load (``bench._sustained_final``).

Example:
    >>> timer = timer_for("cpu", [])
    >>> timer(lambda: None, 3) >= 0.0
    True
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable


class Timer(Protocol):
    """``timer(run, count)``: the seconds ``count`` runs of ``run()`` take on the device."""

    def __call__(self, run: Callable[[], Any], count: int = 1) -> float: ...


@runtime_checkable
class SustainedTimer(Timer, Protocol):
    """A clock of a device that slows under sustained load (a GPU at its power cap).

    ``settle(run, count)`` queues ``count`` untimed runs, so that the timed runs queued next
    find the device clocked as a loop of ``run`` leaves it; ``overhead_seconds`` is the device
    time each run carries besides ``run`` itself (the CUDA clock's L2 zeroing), which keeps the
    device busy too.
    """

    overhead_seconds: float

    def settle(self, run: Callable[[], Any], count: int) -> None: ...

_FLUSH_BYTES = 256 << 20  # when the L2 cache's size is unknown
_MAX_FLUSHES = 64
_HOST_WINDOW = 5  # launches whose median host time sets the zeroings


def wall_clock(run: Callable[[], Any], count: int = 1) -> float:
    """Seconds ``count`` back-to-back runs of ``run()`` take on the host clock (the CPU
    target's timer)."""
    started = time.perf_counter()
    _repeat(run, count)
    return time.perf_counter() - started


def _repeat(run: Callable[[], Any], count: int) -> None:
    for _ in range(count):
        run()


class CudaEventTimer:
    """CUDA-event timing (torch's or CuPy's events; device time, measured on the stream).

    Each run starts with a cold L2 cache: a buffer twice the cache's size is zeroed before it,
    untimed, as a call in a program finds its inputs evicted by the work before it (back to
    back, a 4096³ matmul kept much of its 64 MB of inputs in the H200's L2, and the tuner
    preferred configs that are slower from a cold cache). The zeroing also keeps the GPU busy
    while the host queues the run, so that the launch gap is not timed: as long as it lasts
    longer than the host takes to launch. The host's time per launch is measured on every run,
    and the zeroing repeated as often as needed to cover it (a 44 µs kernel behind a 50 µs
    host path was timed at 56 µs with a single 35 µs zeroing).

    Example:
        >>> timer = CudaEventTimer("torch")                  # doctest: +SKIP
        >>> timer(lambda: torch.matmul(a, b), 10) / 10       # doctest: +SKIP
        0.000193
    """

    def __init__(self, library: str):
        if library == "torch":
            import torch

            l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()),
                         "L2_cache_size", 0)
            scratch = torch.empty(2 * l2 or _FLUSH_BYTES, dtype=torch.int8, device="cuda")
            self._make = lambda: torch.cuda.Event(enable_timing=True)
            self._elapsed = lambda start, end: start.elapsed_time(end) / 1e3
            self._flush = scratch.zero_
        else:
            import cupy

            l2 = cupy.cuda.Device().attributes.get("L2CacheSize", 0)
            scratch = cupy.empty(2 * l2 or _FLUSH_BYTES, dtype=cupy.int8)
            self._make = cupy.cuda.Event
            self._elapsed = lambda start, end: cupy.cuda.get_elapsed_time(start, end) / 1e3
            self._flush = lambda: scratch.fill(0)
        self.flush_seconds = self._time_flush()
        self.flushes = 1  # zeroings before each run: grows when the host is slower
        self.host_seconds: deque[float] = deque(maxlen=_HOST_WINDOW)  # per launch, latest last

    def _time_flush(self) -> float:
        times = []
        for _ in range(3):
            start, end = self._make(), self._make()
            start.record()
            self._flush()
            end.record()
            end.synchronize()
            times.append(self._elapsed(start, end))
        return max(min(times), 1e-6)

    def __call__(self, run: Callable[[], Any], count: int = 1) -> float:
        events = []
        for _ in range(count):
            start, end = self._make(), self._make()
            self._zero_l2()
            start.record()
            host = time.perf_counter()
            run()
            host = time.perf_counter() - host
            end.record()
            events.append((start, end))
            self._cover(host)
        events[-1][1].synchronize()
        return sum(self._elapsed(start, end) for start, end in events)

    @property
    def overhead_seconds(self) -> float:
        """GPU time each run carries besides the kernel: its zeroings of the L2."""
        return self.flushes * self.flush_seconds

    def settle(self, run: Callable[[], Any], count: int) -> None:
        """Queue ``count`` runs, each after the usual zeroings, untimed and without waiting:
        the timed runs queued next find the GPU clocked as sustained work of this kernel
        leaves it (at its power cap an H200 slows within 50-130 ms, by how much depending on
        the kernel; the tuner's final is timed this way)."""
        for _ in range(count):
            self._zero_l2()
            run()

    def _zero_l2(self) -> None:
        for _ in range(self.flushes):
            self._flush()

    def _cover(self, host_seconds: float) -> None:
        """More zeroings from the next run on when launches take the host longer than they
        keep the GPU busy (half again as long, for jitter): judged by the median of the last
        few launches, so that one pause of the host (a garbage collection) does not slow
        every later run."""
        self.host_seconds.append(host_seconds)
        typical = statistics.median(self.host_seconds)
        needed = math.ceil(1.5 * typical / self.flush_seconds)
        if needed > self.flushes:
            self.flushes = min(_MAX_FLUSHES, needed)


def _array_library(arrays: Sequence[Any]) -> str | None:
    for value in arrays:
        module = type(value).__module__
        if module.startswith("torch"):
            return "torch"
        if module.startswith("cupy"):
            return "cupy"
    return None


def _cuda_timer(arrays: Sequence[Any]) -> Timer:
    from ..runtime.targets import cuda_available

    if not cuda_available():  # Triton's interpreter runs on the host
        return wall_clock
    preferred = _array_library(arrays)
    for library in ([preferred] if preferred else []) + ["torch", "cupy"]:
        try:
            __import__(library)
        except ImportError:
            continue
        return CudaEventTimer(library)
    return wall_clock  # host arrays: launches copy back, so they are synchronous


def timer_for(target: str, arrays: Sequence[Any]) -> Timer:
    """The clock of ``target``: the host clock on ``cpu``, CUDA events on ``triton`` with a
    GPU (each run from a cold L2 cache), timestamp queries on ``wgsl`` (the wall clock where
    the device has none). ``timer(once, count)`` returns the seconds of ``count`` runs."""
    if target == "triton":
        return _cuda_timer(arrays)
    if target == "wgsl":
        from ..backends.wgsl.device import get_device

        # lavapipe and other CPU adapters do not throttle as a GPU does: settling would only
        # cost the host's time
        on_cpu = get_device().adapter.info.get("adapter_type") == "CPU"
        return WgslTimer() if on_cpu else SettlingWgslTimer()
    return wall_clock


class WgslTimer:
    """The ``wgsl`` clock: the launches' compute passes timed by timestamp queries (the wall
    clock where the device has none), ``count`` runs back to back.

    Example:
        >>> WgslTimer()(lambda: launcher.launch((64,), [x]), 10) / 10   # doctest: +SKIP
        1.2e-05
    """

    def __call__(self, run: Callable[[], Any], count: int = 1) -> float:
        from ..backends.wgsl.timing import time_launches

        return time_launches(lambda: _repeat(run, count))


class SettlingWgslTimer(WgslTimer):
    """The ``wgsl`` clock of a GPU adapter, which also settles (``SustainedTimer``): the
    untimed runs are recorded and submitted by the timed call that follows, which waits for
    them before it starts timing."""

    overhead_seconds = 0.0

    def settle(self, run: Callable[[], Any], count: int) -> None:
        _repeat(run, count)
