"""``@cube.kernel``: binding launch arguments, specializing, caching and launching."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import config
from ..errors import CompileError, LaunchError, caller_loc, user_loc
from ..frontend import build_kernel
from ..ir import Function, Type, print_function
from ..lang.builtins import comptime_kind, is_comptime_annotation
from ..passes import optimize
from . import trace
from .args import ArgSpec, classify, target_for
from .checks import (
    check_comptime_values,
    check_decorated,
    check_options,
    check_writable,
    no_grid_error,
    normalize_grid,
    with_argument_hint,
    writable_guard,
    written_args,
)
from .targets import TARGETS, get_backend

OPTIONS = ("target", "num_warps", "num_stages", "workgroup_size", "allow_tf32")


class Kernel:
    """A kernel: launch with ``kernel[grid](*args, **comptime)``.

    Example:
        >>> @cube.kernel
        ... def add(x, y, out, n, BLOCK: cube.Comptime[int]):
        ...     offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
        ...     m = offs < n
        ...     cube.store(out + offs, cube.load(x + offs, m) + cube.load(y + offs, m), m)
        >>> add[(cube.cdiv(n, 256),)](x, y, out, n, BLOCK=256)  # doctest: +SKIP
    """

    __cube_kernel__ = True

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.signature = inspect.signature(fn)
        self.comptime = {name for name, p in self.signature.parameters.items()
                         if is_comptime_annotation(p.annotation)}
        self.comptime_kinds = {name: comptime_kind(self.signature.parameters[name].annotation)
                               for name in self.comptime}
        self._compiled: dict[Any, Any] = {}
        self._fast: dict[Any, Any] = {}
        self._launchers: dict[tuple, Callable[..., None]] = {}
        names = list(self.signature.parameters)
        runtime = [n for n in names if n not in self.comptime]
        # the fast path applies when the runtime parameters come first, in order
        self.runtime_count = len(runtime) if names[:len(runtime)] == runtime else -1
        self.by_name = frozenset(self.comptime) | frozenset(OPTIONS)
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<cube.kernel {self.fn.__qualname__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise no_grid_error(self.fn.__name__, self._spelled_params()) from None

    def _spelled_params(self) -> list[str]:
        """The parameters as a launch passes them: ``x, out, n, BLOCK=...``."""
        return [f"{n}=..." if n in self.comptime else n for n in self.signature.parameters]

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        launch = self._launchers.get(grid) if type(grid) is tuple else None
        if launch is not None:
            return launch
        simple = type(grid) is tuple and 1 <= len(grid) <= 3 and all(
            type(g) is int and g >= 0 for g in grid)
        grid3 = grid + (1,) * (3 - len(grid)) if simple else None
        fast_entry = self._fast_entry

        def launch(*args: Any, **kwargs: Any) -> None:
            if trace.active is not None:  # record_launches() is open
                trace.record(self, grid, args, kwargs)
            try:
                if grid3 is not None:  # a cached kernel on a plain grid: straight to its launcher
                    entry = fast_entry(args, kwargs)[1]
                    if entry is not None:
                        entry[1](grid3, list(args))
                        return
                self.launch(grid, args, kwargs)
            except LaunchError as err:
                raise err.located(caller_loc(2)) from None

        if simple and len(self._launchers) < 64:
            self._launchers[grid] = launch  # the same few grids launch again and again
        return launch

    # ---- binding ----

    def _bind(self, args: tuple, kwargs: dict) -> tuple[dict[str, Any], dict[str, Any]]:
        options = {k: kwargs.pop(k) for k in OPTIONS if k in kwargs}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            missing = [n for n in self.comptime if n not in kwargs
                       and list(self.signature.parameters).index(n) >= len(args)]
            extra = f"; comptime parameters to pass by keyword: {', '.join(missing)}" \
                if missing else ""
            params = ", ".join(self._spelled_params())
            raise LaunchError(f"{self.fn.__name__}(): {err}{extra}",
                              f"launch it as {self.fn.__name__}[grid]({params})") from None
        bound.apply_defaults()
        return dict(bound.arguments), options

    def _specialize(self, bound: dict[str, Any], target: str | None
                    ) -> tuple[str, list[tuple[str, Any]], dict[str, ArgSpec]]:
        check_comptime_values(self.fn.__name__, bound, self.comptime_kinds)
        specs = {name: classify(value, name) for name, value in bound.items()
                 if name not in self.comptime}
        if target is None:
            target = target_for(specs) or config.settings().target or "cpu"
        if target == "cpu" and config.settings().debug:
            target = "cpu:debug"
        params: list[tuple[str, Any]] = []
        index = 0
        for name, value in bound.items():
            if name in self.comptime:
                params.append((name, value))
                continue
            spec = specs[name]
            params.append((name, Type(spec.dtype, (), index if spec.kind == "array" else None)))
            index += 1
        return target, params, specs

    def _key(self, target: str, params: list[tuple[str, Any]], backend: Any,
             options: dict[str, Any]) -> Any:
        return (target, backend.device_key(),
                tuple((n, p if isinstance(p, Type) else ("comptime", _hashable(p)))
                      for n, p in params),
                tuple(sorted((k, v) for k, v in options.items() if k != "target")))

    def build(self, params: list[tuple[str, Any]]) -> Function:
        """The optimized IR for these parameters (names paired with Types or comptime values)."""
        return optimize(build_kernel(self.fn, params))

    def compiled(self, args: tuple, kwargs: dict) -> tuple[Any, dict[str, Any], dict]:
        compiled, _written, bound, options = self._compile(args, kwargs)
        return compiled, bound, options

    def _compile(self, args: tuple, kwargs: dict
                 ) -> tuple[Any, frozenset[str], dict[str, Any], dict[str, Any]]:
        """(compiled kernel, names of the arrays it stores to, bound arguments, options)."""
        bound, options = self._bind(args, dict(kwargs))
        check_options(self.fn.__name__, options)
        target, params, _specs = self._specialize(bound, options.get("target"))
        backend = get_backend(target)
        key = self._key(target, params, backend, options)
        entry = self._compiled.get(key)
        if entry is None:
            fn = self.build(params)
            entry = self._compiled[key] = (backend.compile(fn, options), written_args(fn))
        return (*entry, bound, options)

    # ---- public ----

    def launch(self, grid: Any, args: tuple, kwargs: dict) -> None:
        fast_key, entry = self._fast_entry(args, kwargs)
        if entry is not None:  # plain grids took kernel[grid]'s own fast path before this
            meta, launcher = entry
            launcher(normalize_grid(grid, meta, self.fn.__name__), list(args))
            return
        try:
            compiled, written, bound, _ = self._compile(args, kwargs)
        except CompileError as err:
            options = {k: v for k, v in kwargs.items() if k not in OPTIONS}
            raise with_argument_hint(err, self.signature, args, options
                                         ).with_traceback(None) from None
        name = self.fn.__name__
        meta = {param: bound[param] for param in self.comptime}
        runtime_names = [n for n in bound if n not in self.comptime]
        runtime_args = [bound[n] for n in runtime_names]
        check_writable(name, bound, written)
        trusted = getattr(compiled, "trusted_launcher", None)
        launcher = (trusted(list(runtime_args)) if trusted else None) or compiled.launch
        compiled.launch(normalize_grid(grid, meta, name), runtime_args)
        if fast_key is not None:  # only after a launch that checked everything succeeded
            self._fast[fast_key] = (meta, writable_guard(launcher, runtime_args, runtime_names,
                                                         written, name))

    def _fast_entry(self, args: tuple, kwargs: dict) -> tuple[Any, Any]:
        """(key, entry): the fast-path key of this launch (None when it cannot take the fast
        path) and the cached (meta, launcher) of an earlier launch like it, if any."""
        key = self._fast_key(args, kwargs)
        if key is None:
            return None, None
        try:  # the key's one hashing
            return key, self._fast.get(key)
        except TypeError:  # an unhashable comptime value: the full path explains it
            return None, None

    def _fast_key(self, args: tuple, kwargs: dict) -> Any:
        """A cheap key for the common launch shape (runtime arguments by position, comptime
        ones and options by name), so a cached kernel launches without re-binding its
        arguments; None (or an unhashable key) sends the launch down the full path. Written
        for speed: it runs on every launch (see bench/launch_probe.py)."""
        if len(args) != self.runtime_count or not self.by_name.issuperset(kwargs):
            return None
        signature: list[Any] = []
        append = signature.append
        for value in args:
            kind = type(value)
            if kind is _torch_tensor:  # dtype and device index, flat: no tuple to hash
                append(value.dtype)
                append(value.get_device())
            elif kind is int:  # int32, int64, or (unhashable) too big: the full path says so
                append(True if -(2**31) <= value < 2**31 else
                       False if -(2**63) <= value < 2**63 else {})
            elif kind is float or kind is bool:
                append(kind)
            elif kind is np.ndarray:
                append(value.dtype)
            else:
                append(_array_signature(value))
        for name, value in kwargs.items():  # by type too: BLOCK=2 and BLOCK=2.0 compile apart
            kind = type(value)
            append(name)
            append(kind)
            append(value.hex() if kind is float else value)  # -0.0 is not 0.0
        return (*signature, config.generation())

    def source(self, target: str, *args: Any, **kwargs: Any) -> str:
        """The generated source for ``target`` (``"cpu"``, ``"triton"``, ``"wgsl"``)."""
        try:
            if not isinstance(target, str):
                name, params = self.fn.__name__, ", ".join(self._spelled_params())
                raise LaunchError(f"{name}.source() takes the target first, got "
                                  f"{type(target).__name__}", f"write {name}.source("
                                  f"'cpu', {params}); targets: {', '.join(TARGETS)}")
            compiled, _, _ = self.compiled(args, {**kwargs, "target": target})
        except LaunchError as err:
            raise err.located(user_loc()) from None
        except CompileError as err:
            raise err.with_traceback(None) from None
        return compiled.source

    def ir(self, *args: Any, **kwargs: Any) -> str:
        """The optimized IR of this specialization, as text."""
        try:
            bound, options = self._bind(args, dict(kwargs))
            _, params, _ = self._specialize(bound, options.get("target") or "cpu")
            return print_function(self.build(params))
        except LaunchError as err:
            raise err.located(user_loc()) from None
        except CompileError as err:
            raise err.with_traceback(None) from None


# torch.Tensor once a launch has seen one (torch is never imported here): the fast key's
# first test, as GPU launches pass tensors
_torch_tensor: Any = None


def _array_signature(value: Any) -> Any:
    """What about an array (other than a NumPy array or a plain torch tensor, which the fast
    key reads inline) can change the compiled kernel: its kind, dtype and place."""
    global _torch_tensor
    kind = type(value)
    if kind.__module__ == "torch":  # an int, cheaper than building a torch.device
        if kind.__name__ == "Tensor":
            _torch_tensor = kind
        return (kind, value.dtype, value.get_device())
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return {}  # unhashable: not an array or scalar, so the full path explains the problem
    return (kind, dtype, getattr(value, "device", None))


def _hashable(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):  # -0.0 == 0.0, and NaN is not itself
        return (type(value).__name__, repr(value))
    try:
        hash(value)
        return (type(value).__name__, value)
    except TypeError:
        return ("repr", repr(value))


def kernel(fn: Callable[..., Any] | None = None, **options: Any) -> Kernel:
    """Decorator: compile ``fn`` as a cubepy kernel (see ``Kernel``). It takes no arguments
    (``options`` only catch ``@cube.kernel(...)``, to say so at the decorator).

    Example:
        >>> @cube.kernel
        ... def copy(x, out, BLOCK: cube.Comptime[int]):
        ...     offs = cube.arange(0, BLOCK)
        ...     cube.store(out + offs, cube.load(x + offs))
    """
    check_decorated(fn, options)
    return Kernel(fn)  # type: ignore[arg-type]
