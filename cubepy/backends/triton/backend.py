"""The ``triton`` target: generated Triton source, run on a GPU or on Triton's interpreter.

Where it runs is decided per specialization by ``loader.should_interpret()``: on the GPU when
Triton finds a driver (CUDA or ROCm; arrays must then be CUDA arrays such as torch or CuPy),
else on Triton's CPU interpreter with NumPy arrays (``CUBEPY_TRITON_INTERPRET`` forces either).
The two run slightly different source (see ``codegen``), so the mode is part of
``device_key()``.

Launch options: ``num_warps`` and ``num_stages`` go to Triton as they are (the interpreter has
no use for them); ``allow_tf32=True`` lets ``dot`` of float32 tiles use TF32 tensor cores
(default: IEEE float32, as NumPy).

With ``CUBEPY_TRITON_AOT=cuda:90,hip:gfx942`` every new specialization is also compiled ahead
of time for each GPU named, whether or not one is present, and kept in ``compiled.aot``.

Example:
    >>> k, _, _ = matmul.compiled((a, b, c), {"BK": 64, "target": "triton"})  # doctest: +SKIP
    >>> "tl.dot(" in k.source, "wgmma" in k.aot["cuda:90"].asm["ptx"]  # doctest: +SKIP
    (True, True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import config
from ...errors import CompileError, LaunchError
from ...ir import Function
from ...ir import dtypes as dt
from ..base import TargetInfo, check_supported

try:
    from . import aot as _aot
    from .arrays import prepare_launch_args
    from .codegen import TritonSource, generate
    from .descriptors import TmaGuard, tma_blocks
    from .direct import DirectLauncher
    from .loader import (
        current_interpret_mode,
        gpu_driver_available,
        interpret_mode,
        interpreter_applied,
        load_jit_function,
        should_interpret,
    )

    _IMPORT_ERROR: str | None = None
except ImportError as err:  # pragma: no cover - depends on the environment
    _IMPORT_ERROR = f"the triton package cannot be imported ({err})"

OPTIONS = ("num_warps", "num_stages", "allow_tf32")
ATOMIC_DTYPES = frozenset({"int32", "int64", "uint32", "float32", "float64"})
# Triton refuses tiles of more elements than this (TRITON_MAX_TENSOR_NUMEL).
MAX_TILE_ELEMENTS = 1 << 20


def available() -> bool:
    """True when Triton imports: kernels then run on a GPU, or else on its interpreter."""
    return _IMPORT_ERROR is None


def why_unavailable() -> str:
    """Why ``available()`` is False ("" when it is True)."""
    return _IMPORT_ERROR or ""


def gpu_available() -> bool:
    """True when Triton finds a CUDA or ROCm GPU driver (on Triton 3.6, torch is needed too)."""
    return available() and gpu_driver_available()


def make_backend() -> TritonBackend:
    """The ``triton`` backend object (``LaunchError`` if Triton is missing)."""
    if not available():
        raise LaunchError(f"target 'triton' is not available: {why_unavailable()}")
    return TritonBackend()


def _gpu_description() -> tuple[str, str]:
    """(key, words) for the GPU Triton drives, e.g. ("cuda:90", "NVIDIA H200 (cuda 90)")."""
    from triton.runtime import driver

    try:
        device = driver.active.get_current_device()
    except Exception as err:  # noqa: BLE001 - Triton raises RuntimeError and others
        raise LaunchError(f"target 'triton' was asked to run on a GPU (CUBEPY_TRITON_INTERPRET=0)"
                          f" but Triton finds none: {err}") from None
    return _describe_gpu(device)


@functools.cache
def _describe_gpu(device: int) -> tuple[str, str]:
    from triton.runtime import driver

    target = driver.active.get_current_target()
    name = ""
    try:  # the marketing name only comes from torch, which Triton 3.6 needs on CUDA anyway
        import torch

        name = torch.cuda.get_device_name(device) + " "
    except Exception:  # noqa: BLE001 - the name is only for messages
        pass
    return f"{target.backend}:{target.arch}", f"{name}({target.backend} {target.arch})"


def _scalar(value: Any, dtype: dt.DType, name: str) -> Any:
    """A scalar argument as the Python number Triton's launcher (or interpreter) takes."""
    try:
        if dtype.is_bool:
            return bool(value)
        if dtype.is_float:
            return float(value)
        return int(value)
    except (TypeError, ValueError) as err:
        raise LaunchError(f"argument '{name}' must be a {dtype.name} scalar: {err}") from None


def _tag_interpreter_comparisons() -> None:
    """Make the interpreter's comparisons say they give bool.

    Triton's interpreter (3.9) tags the result of ``a < b`` with the operands' dtype; the data
    is bool, but broadcasting a scalar result then makes tiles of that dtype (float data for a
    float comparison), and ``mask & (x < y)`` fails. Tagging the results ``int1`` fixes that.
    """
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    for attr in dir(InterpreterBuilder):
        compare = getattr(InterpreterBuilder, attr)
        if not attr.startswith(("create_icmp", "create_fcmp")) or hasattr(compare, "_cubepy"):
            continue

        def tagged(self: Any, lhs: Any, rhs: Any, _compare: Any = compare) -> Any:
            return TensorHandle(_compare(self, lhs, rhs).data, tl.int1)

        tagged._cubepy = True  # type: ignore[attr-defined]
        setattr(InterpreterBuilder, attr, tagged)


def _fast_interpreter_nan_reductions() -> None:
    """Run the prelude's NaN-aware reductions (``tl.reduce`` with ``_max_nan``...) through
    NumPy on the interpreter.

    The interpreter has NumPy fast paths only for Triton's own combine functions; any other
    is called once per element from Python, some hundred times slower on a 1024-wide tile.
    NumPy's ``max``/``argmax``... are exactly what the combines compute.
    """
    from triton.runtime.interpreter import ReduceOps

    from .prelude import NAN_REDUCTIONS

    original = getattr(ReduceOps, "apply_impl", None)
    if original is None or not hasattr(ReduceOps, "min_max") or getattr(original, "_cubepy",
                                                                         False):
        return  # a Triton whose interpreter is built otherwise: the combines run, slowly

    def apply_impl(self: Any, input: Any) -> Any:
        name = getattr(getattr(self.combine_fn, "fn", None), "__name__", None)
        kind = NAN_REDUCTIONS.get(name)
        if kind is None:
            return original(self, input)
        if kind.startswith("arg"):
            return self.min_max(input[0], val_reduce_op=getattr(np, kind[3:]),
                                idx_reduce_op=getattr(np, kind))
        return self.min_max(input[0], val_reduce_op=getattr(np, kind))

    apply_impl._cubepy = True  # type: ignore[attr-defined]
    ReduceOps.apply_impl = apply_impl


class TritonKernel:
    """One specialization: ``source`` (what runs), ``aot`` (target -> ``aot.CompiledAsm``)."""

    def __init__(self, fn: Function, options: dict[str, Any], interpret: bool):
        self.fn = fn
        self.interpret = interpret
        if interpret:
            _tag_interpreter_comparisons()
            _fast_interpreter_nan_reductions()
        self.num_warps = int(options.get("num_warps") or 4)
        self.num_stages = int(options.get("num_stages") or 3)
        # only what the user chose: Triton's own defaults are the same, and its launcher is
        # quicker without options to bind
        self.launch_options = {k: int(options[k]) for k in ("num_warps", "num_stages")
                               if options.get(k)}
        allow_tf32 = bool(options.get("allow_tf32", False))
        # block copies (tensor descriptors) use their pointer-tile fallbacks here; a GPU also
        # gets a TMA variant, which launches whose arrays are aligned for it run
        generated = generate(fn, interpret=interpret, allow_tf32=allow_tf32)
        blocks = tma_blocks(fn)
        targets = config.settings().triton_aot
        tma = generate(fn, interpret=False, allow_tf32=allow_tf32, tma=blocks) \
            if blocks and (targets or not interpret) else None
        self.source = generated.text if interpret or tma is None else tma.text
        self.kernel_name = generated.kernel
        cache_dir = config.settings().cache_dir
        self.jit_fn = load_jit_function(generated.text, generated.kernel, cache_dir,
                                        interpret=interpret)
        self.tma_jit_fn = self.tma_guard = None
        if tma is not None and not interpret:
            self.tma_jit_fn = load_jit_function(tma.text, tma.kernel, cache_dir, interpret=False)
            self.tma_guard = TmaGuard(fn, blocks)
        self.aot: dict[str, Any] = {}
        if targets:
            gpu = generate(fn, interpret=False, allow_tf32=allow_tf32) if interpret else generated
            self._compile_aot(gpu, tma, targets, cache_dir)

    def _jit_for(self, args: list[Any]) -> Any:
        """The TMA variant when there is one and ``args`` suit it, else the pointer variant."""
        if self.tma_guard is not None and self.tma_guard.allows(args):
            return self.tma_jit_fn
        return self.jit_fn

    def _compile_aot(self, gpu: TritonSource, tma: TritonSource | None,
                     targets: tuple[str, ...], cache_dir: Any) -> None:
        jit_fns = {False: load_jit_function(gpu.text, gpu.kernel, cache_dir, interpret=False)}
        if tma is not None:  # what NVIDIA GPUs run; AMD's have no TMA
            jit_fns[True] = load_jit_function(tma.text, tma.kernel, cache_dir, interpret=False)
        for target in targets:
            jit_fn = jit_fns.get(target.startswith("cuda"), jit_fns[False])
            try:
                self.aot[target] = _aot.compile_aot(
                    jit_fn, gpu.signature, {}, target,
                    num_warps=self.num_warps, num_stages=self.num_stages)
            except Exception as err:  # noqa: BLE001 - Triton raises many kinds; name them all
                detail = str(err).strip().splitlines()
                raise CompileError(
                    f"triton: ahead-of-time compilation of kernel '{self.fn.name}' for "
                    f"{target} (CUBEPY_TRITON_AOT) failed: {type(err).__name__}: "
                    f"{detail[-1] if detail else ''}", self.fn.loc,
                    "run with target='cpu' to check the kernel itself, or drop the target "
                    "from CUBEPY_TRITON_AOT") from err

    def launch(self, grid: tuple[int, int, int], args: list[Any]) -> None:
        """Run on ``grid`` (a zero axis runs nothing) with arguments in parameter order."""
        if grid[0] * grid[1] * grid[2] == 0:
            return
        if not self.interpret and self._launch_gpu_fast(grid, args):
            return
        named: dict[str, Any] = {}
        for value, arg, name in zip(self.fn.args, args, self.fn.arg_names):
            named[name] = arg if value.type.is_ptr else _scalar(arg, value.type.dtype, name)
        options = {} if self.interpret else {"num_warps": self.num_warps,
                                             "num_stages": self.num_stages}
        with interpret_mode(self.interpret):
            launch_args = prepare_launch_args(named, interpreter=self.interpret)
            jit_fn = self.jit_fn if self.interpret else self._jit_for(list(launch_args.values()))
            try:
                jit_fn[grid](*launch_args.values(), **options)
            except Exception as err:  # the interpreter wraps a failed device_assert
                if self.interpret and isinstance(err.__cause__, AssertionError):
                    raise err.__cause__ from None
                raise


    def trusted_launcher(self, args: list[Any]) -> Callable[[tuple[int, int, int], list[Any]],
                                                           None] | None:
        """A launch function for later calls whose arguments have the kinds, dtypes and
        devices of ``args`` (the JIT's fast-path key guarantees it), skipping the per-argument
        checks of ``launch``; None when ``args`` do not take the GPU fast path at all."""
        numpy_scalars = None if self.interpret else self._gpu_fast_args(args)
        if numpy_scalars is None:
            return None
        plain, tma = self._direct_launchers
        guard = self.tma_guard

        def launch(grid: tuple[int, int, int], args: list[Any]) -> None:
            if grid[0] * grid[1] * grid[2] == 0:
                return
            for i in numpy_scalars:
                args[i] = args[i].item()
            if interpreter_applied():  # switched since: the checked path explains
                self.launch(grid, args)
                return
            (tma if guard is not None and guard.allows(args) else plain)(grid, args)

        return launch

    @functools.cached_property
    def _direct_launchers(self) -> tuple[DirectLauncher, DirectLauncher | None]:
        """Launchers past Triton's dispatch (``direct``) for the pointer and TMA variants,
        shared by this specialization's trusted launchers."""
        tma = self.tma_jit_fn
        return (DirectLauncher(self.jit_fn, self.launch_options),
                DirectLauncher(tma, self.launch_options) if tma is not None else None)

    def _gpu_fast_args(self, args: list[Any]) -> list[int] | None:
        """Where ``args`` hold NumPy scalars (to pass as Python numbers), when they suit the
        GPU fast path: torch CUDA tensors on one device and numbers; else None (anything else,
        or a device mismatch to be explained, takes the full path)."""
        device = None
        numpy_scalars = []
        for i, (value, arg) in enumerate(zip(self.fn.args, args)):
            if value.type.is_ptr:
                if not getattr(arg, "is_cuda", False) or type(arg).__module__ != "torch":
                    return None
                index = arg.get_device()  # an int: cheaper than building torch.device objects
                if device is None:
                    device = index
                elif index != device:
                    return None
            elif type(arg) not in (int, float, bool):
                if not isinstance(arg, np.generic):
                    return None
                numpy_scalars.append(i)  # burn passes them
        return numpy_scalars

    def _launch_gpu_fast(self, grid: tuple[int, int, int], args: list[Any]) -> bool:
        """The launch of torch CUDA tensors and numbers on a GPU with no other conversion:
        the common case, costing about what a hand-written launch costs. False sends anything
        else down the full path."""
        numpy_scalars = self._gpu_fast_args(args)
        if numpy_scalars is None or current_interpret_mode():
            return False
        for i in numpy_scalars:
            args[i] = args[i].item()
        self._jit_for(args)[grid](*args, **self.launch_options)
        return True


class TritonBackend:
    """The ``triton`` target: Triton on a GPU, or Triton's interpreter without one."""

    name = "triton"

    def interpret(self) -> bool:
        """Whether kernels compiled now run on the interpreter."""
        return should_interpret()

    def info(self) -> TargetInfo:
        features = {"atomics", "dot", "f64", "i64", "bf16", "correct_rounding"}
        if self.interpret():
            device = "Triton's interpreter on the CPU"
        else:
            device = _gpu_description()[1]
            features.add("tensor_cores")
        return TargetInfo(
            name=self.name,
            dtypes=frozenset(d.name for d in dt.ALL),
            features=frozenset(features),
            limits={"max_tile_elements": MAX_TILE_ELEMENTS},
            device=device,
            atomic_dtypes=ATOMIC_DTYPES,
        )

    def device_key(self) -> str:
        if self.interpret():
            return "triton:interpreter"
        return f"triton:{_gpu_description()[0]}"

    def compile(self, fn: Function, options: dict[str, Any]) -> TritonKernel:
        """Generate, load and (with ``CUBEPY_TRITON_AOT``) AOT-compile one specialization."""
        check_supported(fn, self.info())
        unknown = sorted(set(options) - {"target", *OPTIONS})
        if unknown:
            raise LaunchError(f"unknown triton launch option(s) {unknown}; "
                              f"options are {', '.join(OPTIONS)}")
        return TritonKernel(fn, options, self.interpret())
