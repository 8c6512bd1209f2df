"""The WebGPU device of the ``wgsl`` backend: one adapter and device per process.

Creating an adapter and a device costs about 0.5 s, so ``get_device()`` does it once, on
first use, and later calls return the same ``WgslDevice``. The adapter is the first one
whose summary contains ``CUBEPY_WGPU_ADAPTER`` (case-insensitive), else wgpu's
high-performance default.

The device is created with every feature of ``WANTED_FEATURES`` that the adapter offers and
with the adapter's maximum for each limit of ``WANTED_LIMITS``. Feature names are wgpu-py's
(``"shader-f16"``, ``"subgroup"``, ``"timestamp-query"``, ``"shader-float32-atomic"``,
``"shader-f64"``, ``"shader-int64"``, ...); limit names in ``WgslDevice.limits`` are
snake_case (``max_storage_buffers_per_shader_stage``).

Commands are recorded into one pending command encoder (``WgslDevice.stream``, see
``stream.py``) and submitted in batches: a launch does not wait for the GPU. Anything that
goes through the queue directly (``queue.write_buffer``, reads) must call ``stream.flush()``
first so that it stays ordered after the launches recorded before it. Threads share the
device: ``WgslDevice.lock`` (the stream's reentrant lock) guards the encoder, the queue's
order and the per-device ``caches`` (buffer pool, pipelines, bind groups, uniform ring).

Example:
    >>> from cubepy.backends.wgsl.device import get_device
    >>> dev = get_device()
    >>> "float32" in dev.supported_dtypes
    True
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import wgpu

from cubepy import config
from cubepy.errors import UnsupportedError

from .adapters import (  # noqa: F401 - the adapter's errors and choice, named here too
    AdapterNotFoundError,
    WgslRuntimeError,
    adapter_summaries,
    select_adapter,
)
from .stream import CommandStream

# Features requested when the adapter offers them (wgpu-py 0.32 names).
WANTED_FEATURES: tuple[str, ...] = (
    "shader-f16",
    "subgroup",
    "subgroup-barrier",
    "timestamp-query",
    "timestamp-query-inside-encoders",
    "timestamp-query-inside-passes",
    "shader-float32-atomic",
    "shader-f64",
    "shader-int64",
    "shader-int64-atomic-min-max",
    "shader-int64-atomic-all-ops",
)

# Other spellings ``WgslDevice.has`` understands (WebGPU's, or without the "shader-" prefix).
FEATURE_ALIASES: dict[str, str] = {
    "subgroups": "subgroup",
    "float32-atomic": "shader-float32-atomic",
    "f16": "shader-f16",
    "f64": "shader-f64",
    "int64": "shader-int64",
    "i64": "shader-int64",
}

# Limits requested at the adapter's maximum (wgpu-py spells them with hyphens).
WANTED_LIMITS: tuple[str, ...] = (
    "max-storage-buffers-per-shader-stage",
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x",
    "max-compute-workgroup-size-y",
    "max-compute-workgroup-size-z",
    "max-compute-workgroups-per-dimension",
    "max-buffer-size",
    "max-storage-buffer-binding-size",
    "max-uniform-buffer-binding-size",
)

# cubepy dtypes every WebGPU device stores (bool as one u32 per element).
BASE_DTYPES = frozenset({"bool", "int32", "uint32", "float32"})
# cubepy dtypes WGSL has no type for: never supported on this target.
NON_WGSL_DTYPES = frozenset({"int8", "int16", "uint8", "bfloat16"})

# One tiny shader per optional dtype: the dtype counts as supported only if the device
# compiles it (naga may refuse a type although the adapter lists the feature).
_DTYPE_PROBES: dict[str, tuple[str, str]] = {
    "float16": (
        "shader-f16",
        "enable f16;\n@group(0) @binding(0) var<storage, read_write> o: array<f16>;\n"
        "@compute @workgroup_size(1) fn main() { o[0] = o[1] * 2.0h + f16(1.0); }",
    ),
    "int64": (
        "shader-int64",
        "@group(0) @binding(0) var<storage, read_write> o: array<i64>;\n"
        "@compute @workgroup_size(1) fn main() { o[0] = o[1] * 3li + i64(1); }",
    ),
    "float64": (
        "shader-f64",
        "@group(0) @binding(0) var<storage, read_write> o: array<f64>;\n"
        "@compute @workgroup_size(1) fn main() { o[0] = o[1] * 2.0lf + f64(1.0); }",
    ),
}

_SUBGROUP_PROBE = """
@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size({n})
fn main(@builtin(subgroup_size) s: u32, @builtin(local_invocation_index) i: u32) {{
    o[i] = s;
}}
"""


class UnsupportedDtypeError(WgslRuntimeError, UnsupportedError):
    """A dtype the ``wgsl`` target (or this adapter) cannot store or compute."""


class WgslDevice:
    """One WebGPU adapter and device with what cubepy needs to know about them.

    Attributes:
        adapter, device, queue: the wgpu objects.
        adapter_summary: e.g. ``"llvmpipe (LLVM 15.0.6, 256 bits) (CPU) via Vulkan"``.
        features: the features the device was created with (wgpu-py names).
        limits: the device's limits, snake_case names (``max_buffer_size``, ...).
        supported_dtypes: cubepy dtype names this device stores and computes.
        stream: the pending command encoder (see ``CommandStream``).
        lock: the device's one reentrant lock (``stream.lock``): hold it around anything
            that records into the stream, uses the queue or changes ``caches``.
        caches: per-device state owned by other modules (buffer pool, pipelines, ...).

    Example:
        >>> dev = get_device()
        >>> dev.has("timestamp-query") in (True, False)
        True
    """

    def __init__(self, adapter: wgpu.GPUAdapter) -> None:
        offered = set(adapter.features)
        wanted = [f for f in WANTED_FEATURES if f in offered]
        adapter_limits = adapter.limits
        required = {k: adapter_limits[k] for k in WANTED_LIMITS if k in adapter_limits}
        self.adapter = adapter
        self.adapter_summary: str = adapter.summary
        self.device: wgpu.GPUDevice = adapter.request_device_sync(
            label="cubepy", required_features=wanted, required_limits=required
        )
        self.queue: wgpu.GPUQueue = self.device.queue
        self.features: frozenset[str] = frozenset(str(f) for f in self.device.features)
        self.limits: dict[str, int] = {
            k.replace("-", "_"): int(v) for k, v in self.device.limits.items()
        }
        self.stream = CommandStream(self.device)
        self.lock = self.stream.lock
        self.caches: dict[str, Any] = {}
        self._subgroup_size: tuple[int, int] | None | bool = False  # False: not probed yet
        self.supported_dtypes: frozenset[str] = BASE_DTYPES | frozenset(
            name
            for name, (feature, source) in _DTYPE_PROBES.items()
            if feature in self.features and self.compiles(source)
        )

    def __repr__(self) -> str:
        return f"WgslDevice({self.adapter_summary!r})"

    def has(self, feature: str) -> bool:
        """Whether the device has ``feature`` (a wgpu-py name; see ``FEATURE_ALIASES``)."""
        return FEATURE_ALIASES.get(feature, feature) in self.features

    def compiles(self, source: str, entry_point: str = "main") -> bool:
        """Whether naga and the driver accept ``source`` as a compute pipeline."""
        # A refusal is an answer here, not an error: keep wgpu-native's log quiet.
        wgpu_logger = logging.getLogger("wgpu")
        level = wgpu_logger.level
        wgpu_logger.setLevel(logging.CRITICAL)
        try:
            module = self.device.create_shader_module(code=source)
            self.device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": entry_point}
            )
        except Exception:  # noqa: BLE001 - any refusal means "not supported"
            return False
        finally:
            wgpu_logger.setLevel(level)
        return True

    def require_dtype(self, dtype: str) -> None:
        """Raise ``UnsupportedDtypeError`` naming the target if ``dtype`` is not supported."""
        if dtype in self.supported_dtypes:
            return
        if dtype in NON_WGSL_DTYPES:
            why = "WGSL has no such type"
        else:
            feature = _DTYPE_PROBES.get(dtype, ("?", ""))[0]
            why = f"this adapter lacks the {feature!r} feature or its compiler refuses {dtype}"
        raise UnsupportedDtypeError(
            f"dtype {dtype!r} is not supported on target 'wgsl' ({why}; adapter "
            f"{self.adapter_summary!r}). Supported: {', '.join(sorted(self.supported_dtypes))}."
        )

    @property
    def subgroup_size(self) -> tuple[int, int] | None:
        """(min, max) subgroup size seen by a probe shader, or None without ``"subgroup"``.

        wgpu-py 0.32 does not report the adapter's subgroup sizes (its info holds defaults),
        so the first access runs a probe kernel and records the sizes it saw.
        """
        if self._subgroup_size is False:
            with self.lock:  # the probe submits and reads: once, and ordered with launches
                if self._subgroup_size is False:
                    self._subgroup_size = self._probe_subgroup_size()
        return self._subgroup_size  # type: ignore[return-value]

    @property
    def timestamp_period(self) -> float:
        """Nanoseconds per timestamp-query tick (wgpu-native's queue value; 1.0 if unknown)."""
        try:
            from wgpu.backends.wgpu_native._ffi import lib

            period = float(lib.wgpuQueueGetTimestampPeriod(self.queue._internal))
        except Exception:  # noqa: BLE001 - private API; wgpu normalizes to ns by default
            return 1.0
        return period if period > 0 else 1.0

    def _probe_subgroup_size(self) -> tuple[int, int] | None:
        if not self.has("subgroup"):
            return None
        n = min(128, self.limits.get("max_compute_invocations_per_workgroup", 128))
        module = self.device.create_shader_module(code=_SUBGROUP_PROBE.format(n=n))
        pipeline = self.device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"}
        )
        out = self.device.create_buffer(size=4 * n, usage="STORAGE|COPY_SRC")
        group = self.device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[{"binding": 0, "resource": {"buffer": out}}],
        )
        self.stream.flush()
        encoder = self.device.create_command_encoder()
        compute_pass = encoder.begin_compute_pass()
        compute_pass.set_pipeline(pipeline)
        compute_pass.set_bind_group(0, group)
        compute_pass.dispatch_workgroups(1)
        compute_pass.end()
        self.queue.submit([encoder.finish()])
        sizes = memoryview(self.queue.read_buffer(out)).cast("I").tolist()
        out.destroy()
        return (min(sizes), max(sizes))


def create_device(adapter_name: str | None = None) -> WgslDevice:
    """A new ``WgslDevice`` on the adapter matching ``adapter_name`` (not cached).

    Example:
        >>> create_device("no such gpu")  # doctest: +SKIP
        AdapterNotFoundError: CUBEPY_WGPU_ADAPTER='no such gpu' matches no WebGPU adapter. ...
    """
    return WgslDevice(select_adapter(adapter_name))


_device: WgslDevice | None = None
_lock = threading.Lock()


def get_device() -> WgslDevice:
    """The process's ``WgslDevice``, created on first use from ``CUBEPY_WGPU_ADAPTER``.

    Example:
        >>> get_device() is get_device()
        True
    """
    global _device
    if _device is None:
        with _lock:
            if _device is None:
                started = time.perf_counter()
                _device = create_device(config.settings().wgpu_adapter)
                _device.caches["created_in_s"] = time.perf_counter() - started
    return _device


def synchronize() -> None:
    """Wait until every launch recorded on the process's device has finished."""
    if _device is not None:
        _device.stream.synchronize()
