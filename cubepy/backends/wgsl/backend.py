"""The ``wgsl`` target: kernels compiled to WGSL and run through wgpu on any WebGPU adapter.

Launching with NumPy arrays copies each array to the device, runs the kernel and copies back
the arrays the kernel may write; ``cube.DeviceArray`` arguments are bound as they are.
Launch options: ``workgroup_size`` (invocations per cube; default from the tile sizes, or
``32 * num_warps`` when ``num_warps`` is given).

Example:
    >>> add[(cube.cdiv(n, 256),)](x, y, out, n, BLOCK=256, target="wgsl")  # doctest: +SKIP
"""

from __future__ import annotations

import struct
import warnings
from typing import Any

import numpy as np

from ...errors import (
    LaunchError,
    UncheckedAssertWarning,
    UnshownPrintWarning,
    format_message,
    user_stacklevel,
)
from ...ir import Function, Op, walk
from ..base import TargetInfo, check_supported
from ..blocks import drop_gpu_only_ops
from ..hostarrays import host_view

_why: str | None = None

_LANE_PROBE = """
@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(subgroup_invocation_id) s: u32, @builtin(subgroup_size) n: u32,
        @builtin(local_invocation_index) i: u32) {
    o[i] = select(0u, 1u, s == i % n);
}
"""


def _device():
    from .device import get_device

    return get_device()


def available() -> bool:
    """Whether wgpu is installed and finds an adapter."""
    global _why
    try:
        _device()
    except ImportError as err:
        _why = f"the wgpu package is missing ({err}); pip install wgpu"
        return False
    except Exception as err:  # noqa: BLE001 - no adapter, driver errors: all mean "absent"
        _why = str(err)
        return False
    return True


def why_unavailable() -> str:
    if _why is None and available():
        return ""
    return _why or "unknown"


def _subgroup_size(dev) -> int | None:
    """The subgroup size reductions may rely on: fixed, and lanes in invocation order."""
    cached = dev.caches.get("cubepy_codegen_subgroup", False)
    if cached is not False:
        return cached
    with dev.lock:  # threads compiling at once probe once (the lock is reentrant)
        cached = dev.caches.get("cubepy_codegen_subgroup", False)
        if cached is False:
            cached = dev.caches["cubepy_codegen_subgroup"] = _probe_lanes(dev)
    return cached


def _probe_lanes(dev) -> int | None:
    size = None
    sizes = dev.subgroup_size
    if sizes is not None and sizes[0] == sizes[1] and sizes[0] >= 4:
        from .buffers import DeviceArray
        from .launch import Launcher

        out = DeviceArray.zeros(64, "uint32", dev)
        try:
            Launcher(_LANE_PROBE, "main", ["read_write"], device=dev).launch((1,), [out])
            if bool(out.numpy().all()):
                size = sizes[0]
        except Exception:  # noqa: BLE001 - a refusal means: do without subgroups
            size = None
        out.release()
    return size


class WgslKernel:
    """One specialization compiled to WGSL, with its pipeline."""

    def __init__(self, fn: Function, backend: WgslBackend, options: dict[str, Any]):
        from .codegen import generate
        from .launch import Launcher
        from .lower_layout import choose_workgroup_size

        self.fn = fn
        self.backend = backend
        dev = backend.device
        limit = dev.limits.get("max_compute_invocations_per_workgroup", 256)
        self.w = choose_workgroup_size(fn, options, limit)
        self.target = backend.codegen_target(options)
        self.generated = generate(fn, self.w, self.target)
        self.source = self.generated.source
        self.launcher = Launcher(self.source, self.generated.entry, self.generated.bindings,
                                 name=fn.name, device=dev)
        self._aliasing: Any = None
        # The launch fast path (all arrays DeviceArrays, seen before): the array and scalar
        # argument positions, a struct packing the grid and scalars as ``pack_uniforms``
        # does, and (launcher, bind group) per tuple of the arrays' ``_bind_key``s.
        self._array_idx = tuple(i for i, v in enumerate(fn.args) if v.type.is_ptr)
        self._scalar_idx = tuple(i for i, v in enumerate(fn.args) if not v.type.is_ptr)
        self._packer = _uniform_packer([fn.args[i].type.dtype.name for i in self._scalar_idx])
        self._max_per_dim = dev.limits.get("max_compute_workgroups_per_dimension", 65535)
        self._groups: dict[tuple, tuple[Any, Any]] = {}

    def _aliasing_launcher(self):
        """The variant with every array bound read_write, for arguments that alias."""
        if self._aliasing is None:
            from .codegen import generate
            from .launch import Launcher

            gen = generate(self.fn, self.w, self.target, all_read_write=True)
            self._aliasing = Launcher(gen.source, gen.entry, gen.bindings, name=self.fn.name,
                                      device=self.backend.device)
        return self._aliasing

    def launch(self, grid: tuple[int, int, int], args: list[Any]) -> None:
        x, y, z = grid
        if x * y * z == 0:
            return
        entry = None
        try:
            key = tuple([args[i]._bind_key for i in self._array_idx])
            entry = self._groups.get(key)
            if entry is not None:
                m = self._max_per_dim
                if x > m or y > m or z > m:  # Launcher.launch folds the grid
                    entry = None
                elif entry[0]._ring is not None:
                    data = self._packer.pack(x, y, z, *[args[i] for i in self._scalar_idx])
                else:
                    data = b""
        except (AttributeError, TypeError, IndexError, OverflowError, struct.error):
            entry = None  # not all DeviceArrays, or scalars pack_uniforms converts: full path
        if entry is not None:
            entry[0].dispatch(entry[1], data, x, y, z)
            return
        self._launch(grid, args)

    def _launch(self, grid: tuple[int, int, int], args: list[Any]) -> None:
        from .buffers import DeviceArray

        fn, gen = self.fn, self.generated
        buffers: list[Any] = []
        scalars: list[tuple[str, Any]] = []
        uploads: dict[tuple, Any] = {}
        copies: list[tuple[np.ndarray, Any]] = []  # host views and their device copies
        temporaries: list[Any] = []
        aliased = False
        bound: set[int] = set()
        for value, arg, name in zip(fn.args, args, fn.arg_names):
            if not value.type.is_ptr:
                scalars.append((value.type.dtype.name, arg))
                continue
            dtype = value.type.dtype.name
            if isinstance(arg, DeviceArray):
                if arg.dtype != dtype:
                    raise LaunchError(f"argument '{name}' is a {arg.dtype} DeviceArray; the "
                                      f"kernel was specialized for {dtype}")
                uid = arg.buffer_uid
                aliased |= uid in bound
                bound.add(uid)
                buffers.append(arg)
                continue
            if not isinstance(arg, np.ndarray):
                raise LaunchError(f"argument '{name}' must be a NumPy array or a "
                                  f"cube.DeviceArray on target 'wgsl', got {type(arg).__name__}",
                                  hint=foreign_array_hint(arg))
            flat = host_view(arg, name, half_as_uint16=False)
            key = (flat.__array_interface__["data"][0], flat.size, flat.dtype.str)
            dev_array = uploads.get(key)
            if dev_array is None:
                dev_array = DeviceArray.from_numpy(flat, self.backend.device)
                uploads[key] = dev_array
                temporaries.append(dev_array)
                copies.append((flat, dev_array))
            else:
                aliased = True
            buffers.append(dev_array)
        launcher = self._aliasing_launcher() if aliased else self.launcher
        launcher.launch(grid, buffers, scalars)
        if not temporaries and self._packer is not None:
            # Every array is a DeviceArray: later launches with these arrays take the fast path.
            if len(self._groups) >= 1024:
                self._groups.clear()  # keys of released buffers never come back
            uniform_size = self._packer.size if launcher._ring is not None else 0
            self._groups[tuple(b._bind_key for b in buffers)] = (
                launcher, launcher.bind_group(buffers, uniform_size))
        written_buffers = {id(buffers[self._buffer_index(i)]) for i in gen.written}
        for flat, dev_array in copies:
            if id(dev_array) in written_buffers:
                flat[...] = dev_array.numpy()
        for dev_array in temporaries:
            dev_array.release()

    def _buffer_index(self, arg_index: int) -> int:
        return sum(1 for v in self.fn.args[:arg_index] if v.type.is_ptr)


def foreign_array_hint(arg: Any) -> str:
    """How to hand another library's array to a wgsl launch (a copy either way: WebGPU buffers
    are not shared with CUDA or host memory).

    Example:
        >>> foreign_array_hint([1.0]).startswith("pass np.asarray(x)")
        True
    """
    module = type(arg).__module__.split(".")[0]
    if module == "torch":
        return ("pass t.numpy() for a CPU tensor (t.cpu().numpy() for a CUDA one), or upload it "
                "once with cube.DeviceArray.from_numpy(t.cpu().numpy()) and keep using that")
    if module == "cupy":
        return ("pass x.get() (a NumPy copy), or upload it once with "
                "cube.DeviceArray.from_numpy(x.get()) and keep using that")
    return ("pass np.asarray(x), or upload it once with cube.DeviceArray.from_numpy(...) and "
            "keep using that")


def _uniform_packer(dtypes: list[str]) -> struct.Struct | None:
    """A struct packing (grid x, y, z, *scalars) exactly as ``uniforms.pack_uniforms`` does
    for values it needs not convert (None for a dtype without uniform storage)."""
    from .uniforms import GRID_FIELDS, _uniform_type, uniform_offsets

    fields = [dtype for _, dtype in GRID_FIELDS] + dtypes
    try:
        offsets, size = uniform_offsets(fields)
        formats = [_uniform_type(dtype)[1] for dtype in fields]
    except TypeError:
        return None
    fmt, end = "<", 0
    for offset, code in zip(offsets, formats):
        fmt += "x" * (offset - end) + code
        end = offset + struct.calcsize("<" + code)
    packer = struct.Struct(fmt + "x" * (size - end))
    assert packer.size == size
    return packer


class WgslBackend:
    """The ``wgsl`` target on the process's WebGPU device."""

    name = "wgsl"

    def __init__(self):
        self.device = _device()
        self._info: TargetInfo | None = None

    def info(self) -> TargetInfo:
        if self._info is None:
            dev = self.device
            atomics = {"int32", "uint32", "float32"}
            if "int64" in dev.supported_dtypes and dev.has("shader-int64-atomic-all-ops"):
                atomics.add("int64")
            features = {"atomics", "dot"}
            for name in ("subgroup", "shader-f16", "shader-f64", "shader-int64",
                         "shader-float32-atomic", "timestamp-query"):
                if dev.has(name):
                    features.add(name)
            self._info = TargetInfo(
                name="wgsl",
                dtypes=frozenset(dev.supported_dtypes),
                features=frozenset(features),
                limits=dict(dev.limits),
                device=dev.adapter_summary,
                atomic_dtypes=frozenset(atomics),
            )
        return self._info

    def device_key(self) -> str:
        return f"wgsl:{self.device.adapter_summary}"

    def codegen_target(self, options: dict[str, Any]):
        from .codegen import Target
        from .codegen_dot import workgroup_room

        dev = self.device
        return Target(
            name="wgsl",
            subgroup=_subgroup_size(dev) if options.get("subgroups", True) else None,
            float_atomic_add=dev.has("shader-float32-atomic"),
            max_workgroup_bytes=workgroup_room(dev.limits),
            device=dev.adapter_summary,
            options=dict(options),
        )

    def compile(self, fn: Function, options: dict[str, Any]) -> WgslKernel:
        check_supported(fn, self.info())
        _warn_of_dropped_ops(fn)
        return WgslKernel(drop_gpu_only_ops(fn), self, options)


# ops WGSL drops, each said once per kernel: (what, why, where to run instead, warning)
_DROPPED = {
    Op.PRINT: ("cube.device_print is not shown", "WebGPU has no printf",
               "target='cpu:debug' (or 'cpu', 'triton') to see the values",
               UnshownPrintWarning),
    Op.ASSERT: ("cube.device_assert is not checked", "a WebGPU kernel cannot stop its launch",
                "target='cpu' or 'cpu:debug' to check it", UncheckedAssertWarning),
}


def _warn_of_dropped_ops(fn: Function) -> None:
    for kind, (what, why, instead, category) in _DROPPED.items():
        first = next((op for op in walk(fn.body) if op.op is kind), None)
        if first is not None:
            message = format_message(f"{what} on target 'wgsl' ({why}); the kernel runs "
                                     "without it", first.loc, f"run the kernel with {instead}")
            warnings.warn(message, category, stacklevel=user_stacklevel())


def make_backend() -> WgslBackend:
    return WgslBackend()
