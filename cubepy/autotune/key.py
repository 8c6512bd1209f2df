"""What identifies a tuning result: the key of a call and the fingerprint of the code tuned.

The key holds the sizes named by ``key=`` bucketed to anchors (powers of two by default), the
dtype and layout class of every array argument, the target and the device. Two calls whose
sizes fall in one bucket share a result. The fingerprint hashes the source of the kernel and
of the ``@cube.func`` helpers it calls (for a host function: its source and that of the kernels
it references), so an edited kernel is retuned.

Example:
    >>> pow2_anchor(1000), pow2_anchor(1020), pow2_anchor(3000)
    (1024, 1024, 4096)
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import io
import json
import platform
import textwrap
import tokenize
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config
from ..errors import LaunchError
from ..lang.builtins import Func
from ..runtime.args import classify, is_array, target_for
from ..runtime.jit import Kernel
from ..runtime.targets import get_backend
from . import misuse
from .config import ADDRESS, stable_repr

Bucket = Callable[[int], int]


def pow2_anchor(n: int) -> int:
    """The smallest power of two at least ``n`` (``n`` itself when ``n <= 1``).

    Example:
        >>> [pow2_anchor(n) for n in (0, 1, 3, 64, 65)]
        [0, 1, 4, 64, 128]
    """
    n = int(n)
    return n if n <= 1 else 1 << (n - 1).bit_length()


# ---- arrays: which arguments are arrays, their dtype and layout class ----

def dtype_name(value: Any, name: str = "array") -> str:
    """The cubepy name of an array's dtype (``"float32"``), or its own spelling."""
    try:
        return classify(value, name).dtype.name
    except Exception:  # an exotic dtype is still a fine key
        return str(getattr(value, "dtype", "?"))


def _element_strides(value: Any) -> tuple[int, ...] | None:
    stride = getattr(value, "stride", None)
    if callable(stride):  # torch: strides in elements
        return tuple(int(s) for s in stride())
    strides = getattr(value, "strides", None)
    itemsize = getattr(value, "itemsize", None)
    if isinstance(strides, tuple) and itemsize:
        return tuple(int(s) // int(itemsize) for s in strides)
    return None


def layout_class(value: Any) -> str:
    """``"c"`` (row-major contiguous), ``"f"`` (column-major) or ``"s"`` (other strides).

    Example:
        >>> a = np.zeros((4, 8))
        >>> layout_class(a), layout_class(a.T), layout_class(a[:, ::2]), layout_class(a[:0, ::2])
        ('c', 'f', 's', 'c')
    """
    strides = _element_strides(value)
    shape = tuple(int(s) for s in getattr(value, "shape", ()))
    if strides is None or 0 in shape:  # DeviceArrays are contiguous; so is an empty array
        return "c"
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]

    def dense(order: list[tuple[int, int]]) -> bool:
        expected = 1
        for n, s in reversed(order):
            if s != expected:
                return False
            expected *= n
        return True

    if dense(dims):
        return "c"
    return "f" if dense(dims[::-1]) else "s"


def repeat_key(args: tuple, keyed: tuple[bool, ...] | None) -> tuple | None:
    """The key of a call made with positional arguments only, built straight from them for
    speed: it runs on every call of a tuned function, and a skinny matmul's kernel takes less
    time than binding and keying its arguments in full. ``keyed`` says, per leading
    parameter, whether its value is part of the key. The repeat key holds the settings'
    generation, those values, and each array's kind, dtype, device and contiguity (with its
    shape and strides where those can matter), so calls with one repeat key have one full key.
    None (keyword calls, other kinds of arrays) sends the call down the full path.

    Example:
        >>> a = np.zeros((4, 8), np.float32)
        >>> repeat_key((a, 4), (False, True)) == repeat_key((a.copy(), 4), (False, True))
        True
    """
    if keyed is None or len(args) > len(keyed):
        return None
    parts: list[Any] = [len(args), config.generation()]
    append = parts.append
    for value, in_key in zip(args, keyed):
        kind = type(value)
        if kind is int:
            if in_key:
                append(value)
        elif kind is np.ndarray:
            append(value.dtype)
            append(value.shape)
            append(value.strides)
        elif kind in PLAIN_SCALARS:
            if in_key:
                append((kind, value))
        elif kind.__module__ == "torch" and kind.__name__ == "Tensor":
            append(value.dtype)
            append(value.get_device())  # an int: cheaper than a torch.device
            if in_key or not value.is_contiguous():
                append(tuple(value.shape))
                append(value.stride())
        else:
            return None  # DeviceArrays, CuPy arrays, anything else: the full path
    return tuple(parts)


PLAIN_SCALARS = frozenset({int, float, bool, str, type(None)})  # never arrays


# ---- target and device ----

def resolve_target(bound: Mapping[str, Any], explicit: str | None) -> str:
    """The target a launch with these arguments goes to (as ``Kernel`` chooses it)."""
    target = explicit
    if target is None:
        specs = {name: classify(value, name) for name, value in bound.items() if is_array(value)}
        target = target_for(specs) or config.settings().target or "cpu"
    if target == "cpu" and config.settings().debug:
        target = "cpu:debug"
    return target


@functools.cache
def cpu_model() -> str:
    """The host CPU's model name (from ``/proc/cpuinfo`` where there is one)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def device_name(target: str) -> str:
    """The device a target runs on, as cache files name it: ``"cpu: AMD EPYC 7B13"``,
    ``"triton: NVIDIA H200 (cuda 90)"``, ``"wgsl: llvmpipe (LLVM 15.0.6, 256 bits) ..."``."""
    return _device_name(target, config.settings())  # the adapter can change with settings


@functools.lru_cache(maxsize=64)
def _device_name(target: str, _settings: config.Settings) -> str:
    if target.startswith("cpu"):
        return f"{target}: {cpu_model()}"
    backend = get_backend(target)
    detail = backend.info().device
    if not detail and hasattr(backend, "device_key"):
        key = backend.device_key()
        detail = key if isinstance(key, str) else " ".join(str(k) for k in key if k)
        detail = detail.removeprefix(f"{target}:").strip()  # device keys may repeat the target
    return f"{target}: {detail or 'default device'}"


# ---- the key ----

@dataclass(frozen=True)
class TuneKey:
    """The key of one call: bucketed sizes, array dtypes and layouts, target, device."""

    sizes: tuple[tuple[str, Any], ...]
    arrays: tuple[tuple[str, str, str], ...]  # (name, dtype, layout class)
    target: str
    device: str

    def as_json(self) -> dict[str, Any]:
        """The key as JSON data (stored with every cache entry)."""
        return {"sizes": dict(self.sizes),
                "arrays": {name: f"{dtype}/{layout}" for name, dtype, layout in self.arrays},
                "target": self.target, "device": self.device}

    @functools.cached_property
    def id(self) -> str:
        """A short digest naming this key in a cache file."""
        text = json.dumps(self.as_json(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def describe(self) -> str:
        """A one-line summary for messages: ``"n=1024, x:float32/c, out:float32/c"``."""
        parts = [f"{name}={value}" for name, value in self.sizes]
        parts += [f"{name}:{dtype}/{layout}" for name, dtype, layout in self.arrays]
        return ", ".join(parts)


def _key_value(value: Any, bucket: Bucket | None, bucket_of: Callable[[int], Any]) -> Any:
    if is_array(value):
        shape = [int(s) for s in getattr(value, "shape", ())]
        return [bucket_of(s) if bucket else s for s in shape]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return bucket_of(int(value)) if bucket else int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if value is None or isinstance(value, str):
        return value
    return stable_repr(value)


def make_key(bound: Mapping[str, Any], key: Mapping[str, Bucket | None], target: str,
             tuner: str = "") -> TuneKey:
    """The ``TuneKey`` of a call whose arguments are ``bound`` (name → value); ``tuner``
    names the autotuner in errors of its bucket functions."""
    sizes = tuple((name, _key_value(bound.get(name), bucket, functools.partial(
        misuse.bucketed, tuner, name, bucket))) for name, bucket in key.items())
    for name, value in sizes:
        keyed = bound.get(name)
        if isinstance(value, str) and ADDRESS.search(value) and not isinstance(keyed, str):
            # an object keyed by its default repr, its address: every call was tuned anew
            raise LaunchError(f"key '{name}' is {value}, whose repr differs for every object, "
                              "so every call would be tuned again",
                              "key on the values that select a result, passed as parameters "
                              f"of their own (e.g. {name}.n as n, with key=['n'])")
    arrays = tuple((name, dtype_name(value, name), layout_class(value))
                   for name, value in bound.items() if is_array(value))
    return TuneKey(sizes, arrays, target, device_name(target))


# ---- the fingerprint of the code being tuned ----

def function_source(fn: Callable[..., Any]) -> str:
    """The source of ``fn`` from its ``def`` line (decorators, and so the config list, left
    out) without its comments and blank lines, so that editing those does not orphan tuning
    results; a digest of its bytecode when the source is not available.

    Example:
        >>> def scale(x):  # doubles
        ...     return 2 * x  # exactly
        >>> function_source(scale)  # doctest: +SKIP
        'def scale(x):\\n    return 2 * x'
    """
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return _code_digest(fn.__code__)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    node = next((n for n in tree.body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return source
    return _without_comments("\n".join(source.splitlines()[node.lineno - 1:]))


def _without_comments(source: str) -> str:
    """``source`` with its comments cut out, trailing spaces and blank lines dropped. Cut by
    the comment tokens' positions in the text (not rebuilt from tokens, which Python 3.12
    splits differently inside f-strings), so the result is the same on every Python."""
    lines = source.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return source
    for token in reversed(tokens):  # one comment per line at most, at its end
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    return "\n".join(line.rstrip() for line in lines if line.strip())


def _code_digest(code: types.CodeType) -> str:
    parts = [code.co_code.hex(), repr(code.co_names)]
    for const in code.co_consts:
        parts.append(_code_digest(const) if isinstance(const, types.CodeType) else repr(const))
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _referenced(fn: Callable[..., Any]) -> list[Any]:
    """Objects ``fn`` names: its globals, closure cells and attributes of modules it uses."""
    code = fn.__code__
    names = _names(code)
    scope = dict(fn.__globals__)
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    found = []
    for name in sorted(names):
        value = scope.get(name)
        if isinstance(value, types.ModuleType):
            found += [getattr(value, attr) for attr in sorted(names)
                      if _is_cube_object(getattr(value, attr, None))]
        elif value is not None:
            found.append(value)
    return found


def _is_cube_object(value: Any) -> bool:
    return isinstance(value, (Kernel, Func)) or hasattr(value, "__cube_autotuner__")


def fingerprint(obj: Any) -> str:
    """A digest of the code that an autotuned object runs.

    For a kernel: its source and that of every ``@cube.func`` it calls (transitively). For a
    host function: its source, the kernels and autotuned objects it references, and the
    plain functions of its own module that it calls.

    Example:
        >>> fingerprint(my_kernel)  # doctest: +SKIP
        '3f2a9c0d1e7b6a55'
    """
    sources: list[str] = []
    _collect(obj, sources, set(), root_module=None)
    return hashlib.sha256("\n\x00".join(sources).encode()).hexdigest()[:16]


def _collect(obj: Any, sources: list[str], seen: set[int], root_module: str | None) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if hasattr(obj, "__cube_autotuner__"):
        _collect(obj.fn, sources, seen, root_module)
        return
    if isinstance(obj, (Kernel, Func)):
        fn, follow_plain = obj.fn, False
    elif isinstance(obj, types.FunctionType):
        if root_module is not None and obj.__module__ != root_module:
            return
        fn, follow_plain = obj, True
    else:
        return
    sources.append(f"{fn.__qualname__}\n{function_source(fn)}")
    module = fn.__module__ if follow_plain else None
    for value in _referenced(fn):
        if _is_cube_object(value) or (follow_plain and isinstance(value, types.FunctionType)):
            _collect(value, sources, seen, module or root_module)


def bound_key(bound: Mapping[str, Any], keyed: Mapping[str, Any], explicit: str | None,
              settings: Any) -> tuple | None:
    """What a tuning key depends on, cheap to build and hash: the fast path of repeated calls
    (None for arguments it does not cover, which take the full path through make_key).

    Example:
        >>> bound_key({"n": 1000}, {"n": None}, None, "settings")
        (None, 'settings', ('n', <class 'int'>, 1000))
    """
    parts: list[Any] = [explicit, settings]
    for name, value in bound.items():
        kind = type(value)
        if kind in PLAIN_SCALARS:  # sizes and flags: first, as the commonest and cheapest
            if name in keyed:
                parts.append((name, kind, value))
        elif kind is np.ndarray:
            parts.append((name, value.dtype, value.shape, value.strides))
        elif hasattr(value, "__cube_device_array__"):  # always contiguous
            parts.append((name, type(value), str(value.dtype), tuple(value.shape)))
        elif kind.__module__ == "torch" and hasattr(value, "stride"):
            # CUDA tensors: without this every call would rebuild the full key (tens of
            # microseconds, more than a skinny matmul's kernel time)
            parts.append((name, value.dtype, tuple(value.shape), value.stride(),
                          value.get_device()))
        elif name in keyed:
            if is_array(value):
                return None
            parts.append((name, type(value), value))
        elif is_array(value):
            return None
    raw = tuple(parts)
    try:
        hash(raw)
    except TypeError:
        return None
    return raw
