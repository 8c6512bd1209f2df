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
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ... import config
from ...errors import LaunchError
from ...ir import Function, Op, walk
from ...ir import dtypes as dt
from ..base import TargetInfo, check_supported
from ..blocks import drop_gpu_only_ops
from ..hostarrays import host_view
from . import native, opt_level
from .codegen import generate
from .debug_errors import out_of_bounds

VERSION = "1"  # bump when generated code changes meaning, to orphan old cache files
INFO = TargetInfo(
    name="cpu",
    dtypes=frozenset(d.name for d in dt.ALL),
    features=frozenset({"atomics", "dot", "f64", "i64", "correct_rounding"}),
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
    """One specialization compiled for the CPU: a native image when it has one (see
    ``native.py``: no Numba in the process), else Numba's dispatcher over the generated code."""

    def __init__(self, fn: Function, debug: bool):
        self.fn = fn
        self.debug = debug
        self.source = generate(fn, debug)
        self.path = _write_module(self.source, debug)
        self._grid_fn: Any = None
        self._compiled_keys: set[Any] = set()  # argument types the grid function has
        self.has_dot = any(op.op is Op.DOT for op in walk(fn.body))
        # per power of two of a launch's array elements: its first times on one thread
        self._serial_seconds: dict[int, list[float]] = {}
        # per argument: None for an array, else the NumPy scalar type it is passed as
        self.scalar_types = [None if v.type.is_ptr else np.dtype(_register_dtype(v.type.dtype)).type
                             for v in fn.args]
        self.kinds = [native.array_kind(_storage_dtype(v.type.dtype)) if v.type.is_ptr
                      else native.scalar_kind(scalar) for v, scalar in zip(fn.args,
                                                                          self.scalar_types)]
        self.entry = None if debug or not config.settings().cpu_native else self._native_entry()

    @property
    def grid_fn(self) -> Any:
        """The generated module's grid function (importing it starts Numba)."""
        if self._grid_fn is None:
            self._grid_fn = getattr(_import(self.path), f"{self.fn.name}_grid")
        return self._grid_fn

    def _native_entry(self) -> Any:
        """Loads the kernel's image, building it first if this process is the first to ask;
        None when the kernel cannot have one (the reason is kept in a ``.numba`` file)."""
        # one generated module can serve several dtypes (Numba types it per call): the image,
        # compiled for this specialization's, is named after them too
        kinds = hashlib.sha256("\n".join(self.kinds).encode()).hexdigest()[:8]
        stem = f"{self.path.stem}.{native.host_tag()}.{kinds}"
        image_path = self.path.with_name(stem + ".native")
        refusal_path = self.path.with_name(stem + ".numba")
        if refusal_path.exists():
            return None
        if image_path.exists():
            try:
                return native.load(image_path.read_bytes(), self.kinds)
            except (OSError, ValueError, RuntimeError):
                pass  # unreadable or from another build: make it again below
        grid_fn = self.grid_fn  # imported outside the compiler lock: imports take locks too
        try:
            with opt_level.compiling():
                image = native.build(grid_fn, self.kinds, f"cubepy_entry_{stem}".replace(".", "_"))
        except (native.NoImage, RuntimeError, AttributeError) as why:
            # AttributeError/RuntimeError: an llvmlite without the API or that rejects the
            # module; the kernel still runs, through Numba, and the file says why
            _write_atomic(refusal_path, str(why).encode())
            return None
        _write_atomic(image_path, image)
        return native.load(image, self.kinds)

    def launch(self, grid: tuple[int, int, int], args: list[Any]) -> None:
        if grid[0] * grid[1] * grid[2] == 0:
            return
        arrays = []
        for arg, scalar_type, name in zip(args, self.scalar_types, self.fn.arg_names):
            if scalar_type is not None:
                arrays.append(scalar_type(arg))
            elif type(arg) is np.ndarray and arg.ndim == 1 and arg.dtype in _AS_IS \
                    and arg.flags.c_contiguous:
                arrays.append(arg)  # already the flat view kernels take
            elif isinstance(arg, np.ndarray):
                arrays.append(host_view(arg, name))
            else:
                raise LaunchError(f"argument '{name}' must be a NumPy array on the cpu "
                                  f"target, got {type(arg).__name__}",
                                  f"pass np.asarray({name}) ({name}.numpy() for a torch CPU "
                                  "tensor), or cube.asarray(..., device='cpu')")
        # the launch's size, for _run (an array passed twice, as kernels pass a stand-in for
        # an unused pointer, counts once)
        elements = sum({id(a): a.size for a, t in zip(arrays, self.scalar_types)
                        if t is None}.values())
        if self.entry is not None and all(
                t is not None or a.flags.writeable for a, t in zip(arrays, self.scalar_types)):
            self._launch_native(grid, arrays, elements)
            return
        if self.debug:
            # NumPy scalars warn where compiled code wraps around or gives inf/nan silently
            with np.errstate(all="ignore"):
                try:
                    run_grid(self.grid_fn, grid, arrays, parallel=False)
                except IndexError as err:
                    located = out_of_bounds(err, self.path, self.fn.name, self.fn.loc.file)
                    if located is None:
                        raise
                    raise located from None
            return
        self._compile_for(arrays)
        if self.has_dot:
            # each cube's dot calls BLAS; cubes already run on every core, so BLAS's own
            # threads would oversubscribe them (measured 6-9x slower on 2 cores)
            with _numba_blas().limit(limits=1):
                self._run(self.grid_fn, grid, arrays, elements)
        else:
            self._run(self.grid_fn, grid, arrays, elements)

    def _run(self, grid_fn: Any, grid: tuple[int, int, int], args: list[Any], elements: int
             ) -> list[Any]:
        """``run_grid``, on the pool's threads only where this kernel's launches of about
        ``elements`` (the same power of two) took ``PARALLEL_MIN_SECONDS`` on one thread in
        each of their first ``SERIAL_SAMPLES``. Waking the pool's threads costs 60-110 us on
        a 2-core VM, more than a small launch's whole work (BENCHMARKS.md, "Small launches
        on one thread")."""
        samples = self._serial_seconds.setdefault(elements.bit_length(), [])
        # (>=: threads launching the same kernel at once may add a sample or two more)
        if len(samples) >= SERIAL_SAMPLES and min(samples) >= PARALLEL_MIN_SECONDS:
            return run_grid(grid_fn, grid, args, parallel=True)
        start = time.perf_counter()
        statuses = run_grid(grid_fn, grid, args, parallel=False)
        if len(samples) < SERIAL_SAMPLES:
            samples.append(time.perf_counter() - start)
        return statuses

    def _compile_for(self, arrays: list[Any]) -> None:
        """Has Numba compile the grid function for these arguments now, at cubepy's level,
        rather than at its first call on a pool thread (at Numba's). Keyed by what Numba's
        types depend on: ``numba.typeof`` costs ~55 us a launch, the key ~4 us."""
        key = tuple(map(_type_key, arrays))
        if key in self._compiled_keys:
            return
        import numba

        signature = (numba.int64,) * native.GRID_ARGS + tuple(numba.typeof(a) for a in arrays)
        with opt_level.compiling():
            self.grid_fn.compile(signature)
        self._compiled_keys.add(key)

    def _launch_native(self, grid: tuple[int, int, int], values: list[Any], elements: int
                       ) -> None:
        args: list[Any] = []
        for value, scalar_type in zip(values, self.scalar_types):
            if scalar_type is None:
                args += (value.ctypes.data, value.size)
            else:  # ctypes takes NumPy numbers but for bool
                args.append(int(value) if scalar_type is np.bool_ else value)
        statuses = self._run(self.entry, grid, args, elements)
        if any(statuses):
            # error_model='numpy' leaves allocation the one thing compiled code can fail at
            raise LaunchError(f"kernel '{self.fn.name}' failed in compiled code (out of memory?); "
                              "CUBEPY_DEBUG=1 runs it as Python to see where")


def _type_key(value: Any) -> Any:
    """What Numba's type of a launch argument depends on (dtype, layout, read-only, ...)."""
    if not isinstance(value, np.ndarray):
        return type(value)
    flags = value.flags
    return (value.dtype, value.ndim, flags.c_contiguous, flags.f_contiguous, flags.writeable,
            flags.aligned)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _storage_dtype(dtype: dt.DType) -> Any:
    """The NumPy dtype of the flat array a pointer argument arrives as."""
    return np.uint16 if dtype.name in ("float16", "bfloat16") else dtype.numpy


# dtypes whose flat arrays kernels take as they are (16-bit floats travel as uint16)
_AS_IS = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64,
                                          np.uint8, np.uint32, np.float32, np.float64))


_pool: ThreadPoolExecutor | None = None
# A kernel's launches of one size run on the pool's threads once their first SERIAL_SAMPLES
# on one thread each took this long (CpuKernel._run). On this project's 2-core VMs an add of
# 256K float32 elements (~60 us) is 2x faster on one thread; an exp (~360 us) 1.2x faster on
# two, a softmax (~490 us) 1.3x.
PARALLEL_MIN_SECONDS = 150e-6
SERIAL_SAMPLES = 2


@functools.cache
def _numba_blas() -> Any:
    """threadpoolctl's handle on the BLAS that compiled ``np.dot`` calls: SciPy's, which Numba
    reaches through ``scipy.linalg.cython_blas``. NumPy's own BLAS is left alone: setting its
    thread count wakes its spinning threads, which then take a core from the cubes (launches
    took 1x-2x their time at random on 2 cores until only SciPy's was limited)."""
    import scipy.linalg.cython_blas  # noqa: F401 - loads the library to find it
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    numpy_dir = Path(np.__file__).resolve().parent
    numpy_paths = (str(numpy_dir), str(numpy_dir.parent / "numpy.libs"))
    blas = [lib for lib in controller.lib_controllers if lib.user_api == "blas"]
    scipy_only = [lib.filepath for lib in blas if not lib.filepath.startswith(numpy_paths)]
    # one BLAS shared by both (MKL, a system OpenBLAS): limiting it is the only choice
    return controller.select(filepath=scipy_only) if scipy_only else controller.select(
        user_api="blas")


@functools.cache
def _threads() -> int:
    return max(1, os.cpu_count() or 1)


def run_grid(grid_fn: Any, grid: tuple[int, int, int], args: list[Any],
             parallel: bool) -> list[Any]:
    """Run every cube: in chunks on a thread pool when there is more than one thread.
    Returns what each chunk's call returned."""
    global _pool
    total = grid[0] * grid[1] * grid[2]
    workers = min(_threads(), total) if parallel else 1
    if workers <= 1:
        return [grid_fn(0, total, *grid, *args)]
    if _pool is None:
        _pool = ThreadPoolExecutor(_threads(), thread_name_prefix="cubepy-cpu")
    bounds = [total * i // workers for i in range(workers + 1)]
    # the calling thread runs the first chunk itself while the pool's threads wake up
    futures = [_pool.submit(grid_fn, lo, hi, *grid, *args)
               for lo, hi in zip(bounds[1:-1], bounds[2:]) if hi > lo]
    first = grid_fn(bounds[0], bounds[1], *grid, *args)
    return [first] + [future.result() for future in futures]


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
        return CpuKernel(drop_gpu_only_ops(fn), self.debug)
