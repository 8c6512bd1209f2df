"""``@cube.kernel``: binding launch arguments, specializing, caching and launching."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import config
from ..errors import CompileError, CubeError, LaunchError, caller_loc
from ..frontend import build_kernel
from ..ir import Function, Type, print_function
from ..lang.builtins import is_comptime_annotation
from ..passes import optimize
from .args import ArgSpec, classify, target_for
from .targets import get_backend

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
        raise CubeError(f"launch {self.fn.__name__} with a grid: "
                        f"{self.fn.__name__}[(cubes,)](...)")

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        launch = self._launchers.get(grid) if type(grid) is tuple else None
        if launch is not None:
            return launch
        simple = type(grid) is tuple and 1 <= len(grid) <= 3 and all(
            type(g) is int and g >= 0 for g in grid)
        grid3 = grid + (1,) * (3 - len(grid)) if simple else None
        fast_entry = self._fast_entry

        def launch(*args: Any, **kwargs: Any) -> None:
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
            params = ", ".join(self.signature.parameters)
            raise LaunchError(f"{self.fn.__name__}(): {err}{extra}",
                              f"launch it as {self.fn.__name__}[grid]({params})") from None
        bound.apply_defaults()
        return dict(bound.arguments), options

    def _specialize(self, bound: dict[str, Any], target: str | None
                    ) -> tuple[str, list[tuple[str, Any]], dict[str, ArgSpec]]:
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
        bound, options = self._bind(args, dict(kwargs))
        target, params, _specs = self._specialize(bound, options.get("target"))
        backend = get_backend(target)
        key = self._key(target, params, backend, options)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = backend.compile(self.build(params), options)
            self._compiled[key] = compiled
        return compiled, bound, options

    # ---- public ----

    def launch(self, grid: Any, args: tuple, kwargs: dict) -> None:
        fast_key, entry = self._fast_entry(args, kwargs)
        if entry is not None:  # plain grids took kernel[grid]'s own fast path before this
            meta, launcher = entry
            launcher(normalize_grid(grid, meta, self.fn.__name__), list(args))
            return
        try:
            compiled, bound, _ = self.compiled(args, kwargs)
        except CompileError as err:
            raise err.with_traceback(None) from None
        meta = {name: bound[name] for name in self.comptime}
        runtime_args = [v for n, v in bound.items() if n not in self.comptime]
        trusted = getattr(compiled, "trusted_launcher", None)
        launcher = (trusted(list(runtime_args)) if trusted else None) or compiled.launch
        compiled.launch(normalize_grid(grid, meta, self.fn.__name__), runtime_args)
        if fast_key is not None:  # only after a launch that checked everything succeeded
            self._fast[fast_key] = (meta, launcher)

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
            elif kind is int:
                append(-(2**31) <= value < 2**31)  # int32 or int64
            elif kind is float or kind is bool:
                append(kind)
            elif kind is np.ndarray:
                append(value.dtype)
            else:
                append(_array_signature(value))
        return (*signature, *kwargs.items(), config.generation())

    def source(self, target: str, *args: Any, **kwargs: Any) -> str:
        """The generated source for ``target`` (``"cpu"``, ``"triton"``, ``"wgsl"``)."""
        compiled, _, _ = self.compiled(args, {**kwargs, "target": target})
        return compiled.source

    def ir(self, *args: Any, **kwargs: Any) -> str:
        """The optimized IR of this specialization, as text."""
        bound, options = self._bind(args, dict(kwargs))
        _, params, _ = self._specialize(bound, options.get("target") or "cpu")
        return print_function(self.build(params))


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
    try:
        hash(value)
        return (type(value).__name__, value)
    except TypeError:
        return ("repr", repr(value))


def normalize_grid(grid: Any, meta: dict[str, Any], name: str) -> tuple[int, int, int]:
    """A grid as three non-negative ints (a callable grid is called with the comptime dict)."""
    if type(grid) is tuple and 1 <= len(grid) <= 3 and all(type(g) is int and g >= 0
                                                           for g in grid):
        return grid + (1,) * (3 - len(grid))  # the common case, checked cheaply
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, int):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise LaunchError(f"{name}: the grid must be a tuple of 1 to 3 ints, got {grid!r}")
    dims = []
    for g in grid:
        if isinstance(g, bool) or not hasattr(g, "__index__") or int(g) < 0:
            raise LaunchError(f"{name}: grid sizes must be non-negative ints, got {grid!r}")
        dims.append(int(g))
    return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]


def kernel(fn: Callable[..., Any]) -> Kernel:
    """Decorator: compile ``fn`` as a cubepy kernel (see ``Kernel``)."""
    return Kernel(fn)
