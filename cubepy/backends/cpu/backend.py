"""The ``cpu`` target: generated Python compiled by Numba, the grid a parallel loop.

In debug mode (``CUBEPY_DEBUG=1`` or ``target="cpu:debug"``) the same generated code runs
as plain Python, cube after cube, so ``print``, ``device_print`` and ``pdb`` work inside it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ... import config
from ...errors import LaunchError
from ...ir import Function, Op, walk
from ...ir import dtypes as dt
from ..base import TargetInfo, check_supported
from ..hostarrays import host_view
from .codegen import generate

VERSION = "1"  # bump when generated code changes meaning, to orphan old cache files
INFO = TargetInfo(
    name="cpu",
    dtypes=frozenset(d.name for d in dt.ALL),
    features=frozenset({"atomics", "dot", "f64", "i64"}),
    device="host CPU",
    atomic_dtypes=frozenset({"int32", "int64", "uint32", "float32", "float64"}),
)


@functools.cache
def _runtime_digest() -> str:
    """A digest of the helpers generated code calls. Numba's cache does not notice when a
    callee changes, so a changed helper must change every generated module's file name."""
    folder = Path(__file__).parent
    text = "".join((folder / name).read_text() for name in ("helpers.py", "atomics.py",
                                                             "namespace.py"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _write_module(source: str, debug: bool) -> Path:
    key = f"{VERSION}\n{_runtime_digest()}\n{source}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    folder = config.settings().cache_dir / "cpu"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"k{digest}{'_debug' if debug else ''}.py"
    if not path.exists():  # content-addressed: an existing file is already right
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)  # atomic, so Numba's cache (keyed on the file) stays valid
    return path


def _import(path: Path) -> Any:
    name = f"cubepy_generated.{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class CpuKernel:
    """One specialization compiled for the CPU."""

    def __init__(self, fn: Function, debug: bool):
        self.fn = fn
        self.debug = debug
        self.source = generate(fn, debug)
        self.path = _write_module(self.source, debug)
        module = _import(self.path)
        self.grid_fn = getattr(module, f"{fn.name}_grid")
        self.has_dot = any(op.op is Op.DOT for op in walk(fn.body))
        # per argument: None for an array, else the NumPy scalar type it is passed as
        self.scalar_types = [None if v.type.is_ptr else np.dtype(_register_dtype(v.type.dtype)).type
                             for v in fn.args]

    def launch(self, grid: tuple[int, int, int], args: list[Any]) -> None:
        if grid[0] * grid[1] * grid[2] == 0:
            return
        converted = []
        for arg, scalar_type, name in zip(args, self.scalar_types, self.fn.arg_names):
            if scalar_type is not None:
                converted.append(scalar_type(arg))
            elif type(arg) is np.ndarray and arg.ndim == 1 and arg.dtype in _AS_IS \
                    and arg.flags.c_contiguous:
                converted.append(arg)  # already the flat view kernels take
            elif isinstance(arg, np.ndarray):
                converted.append(host_view(arg, name))
            else:
                raise LaunchError(f"argument '{name}' must be a NumPy array on the cpu "
                                  f"target, got {type(arg).__name__}")
        if self.has_dot and not self.debug:
            # each cube's dot calls BLAS; cubes already run on every core, so BLAS's own
            # threads would oversubscribe them (measured 6-9x slower on 2 cores)
            with _blas_controller().limit(limits=1, user_api="blas"):
                run_grid(self.grid_fn, grid, converted, parallel=True)
        elif self.debug:
            # NumPy scalars warn where compiled code wraps around or gives inf/nan silently
            with np.errstate(all="ignore"):
                run_grid(self.grid_fn, grid, converted, parallel=False)
        else:
            run_grid(self.grid_fn, grid, converted, parallel=True)


# dtypes whose flat arrays kernels take as they are (16-bit floats travel as uint16)
_AS_IS = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64,
                                          np.uint8, np.uint32, np.float32, np.float64))


_pool: ThreadPoolExecutor | None = None


@functools.cache
def _blas_controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@functools.cache
def _threads() -> int:
    return max(1, os.cpu_count() or 1)


def run_grid(grid_fn: Any, grid: tuple[int, int, int], args: list[Any], parallel: bool) -> None:
    """Run every cube: in chunks on a thread pool when there is more than one thread."""
    global _pool
    total = grid[0] * grid[1] * grid[2]
    workers = min(_threads(), total) if parallel else 1
    if workers <= 1:
        grid_fn(0, total, *grid, *args)
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(_threads(), thread_name_prefix="cubepy-cpu")
    bounds = [total * i // workers for i in range(workers + 1)]
    futures = [_pool.submit(grid_fn, lo, hi, *grid, *args)
               for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    for future in futures:
        future.result()


def _register_dtype(dtype: dt.DType) -> Any:
    return np.float32 if dtype.name in ("float16", "bfloat16") else dtype.numpy


class CpuBackend:
    """The ``cpu`` target (``debug=True``: the same code without Numba)."""

    def __init__(self, debug: bool = False):
        self.debug = debug
        self.name = "cpu:debug" if debug else "cpu"

    def info(self) -> TargetInfo:
        return INFO

    def device_key(self) -> str:
        return self.name

    def compile(self, fn: Function, options: dict[str, Any]) -> CpuKernel:
        check_supported(fn, INFO)
        return CpuKernel(fn, self.debug)
