"""Launch and decoration mistakes, each a ``LaunchError`` (or ``CubeError``) saying what to
write instead; ``jit`` points them at the user's line.

The checks run where a launch already does work (the full path: binding, specializing) or
only once something failed, so a cached launch pays nothing for them, but for one
``flags.writeable`` read per NumPy array the kernel stores to (see ``writable_guard``).

Example:
    >>> normalize_grid(lambda meta: (cube.cdiv(100, meta["BLOCK"]),), {"BLOCK": 32}, "k")
    (4, 1, 1)
"""

from __future__ import annotations

import inspect
import linecache
import re
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import CompileError, CubeError, LaunchError, format_message, user_loc
from ..ir import Function, Op, walk
from ..ir.core import Loc
from .args import is_array

# ops that write through their first operand, a pointer into one argument
_WRITES = frozenset({Op.STORE, Op.BLOCK_STORE, Op.ATOMIC, Op.ATOMIC_CAS})
_GRID_HINT = ("write {name}[(cube.cdiv(n, BLOCK),)](...), or a callable of the comptime "
              "values: {name}[lambda meta: (cube.cdiv(n, meta['BLOCK']),)](...)")


# ---- the grid ----

def normalize_grid(grid: Any, meta: dict[str, Any], name: str) -> tuple[int, int, int]:
    """A grid as three non-negative ints (a callable grid is called with the comptime dict)."""
    if type(grid) is tuple and 1 <= len(grid) <= 3 and all(type(g) is int and g >= 0
                                                           for g in grid):
        return grid + (1,) * (3 - len(grid))  # the common case, checked cheaply
    given = "the grid is"
    if callable(grid):
        grid, given = _call_grid(grid, meta, name), "the grid callable returned"
    if hasattr(grid, "__index__") and not isinstance(grid, bool):  # one axis, written bare
        grid = (grid,)
    if not isinstance(grid, (tuple, list)):
        raise LaunchError(f"{name}: {given} {grid!r}, not a tuple of 1 to 3 ints",
                          _GRID_HINT.format(name=name))
    if not 1 <= len(grid) <= 3:
        raise LaunchError(f"{name}: {given} {grid!r}, with {len(grid)} axes; a grid has 1 to 3",
                          "fold extra axes into one, e.g. (a * b, c, d), and split "
                          "cube_pos(0) back with // and %" if grid else
                          _GRID_HINT.format(name=name))
    dims = []
    for g in grid:
        if isinstance(g, bool) or not hasattr(g, "__index__"):
            raise LaunchError(f"{name}: {given} {grid!r}: grid sizes must be ints, got "
                              f"{type(g).__name__} {g!r}", "count cubes in ints: round up "
                              "with cube.cdiv(n, BLOCK) instead of n / BLOCK")
        if int(g) < 0:
            raise LaunchError(f"{name}: {given} {grid!r}: grid sizes must not be negative",
                              "use a size of 0 to launch nothing; a negative size is a slip "
                              "in the arithmetic (cube.cdiv(n, BLOCK) of n >= 0 is never "
                              "negative)")
        dims.append(int(g))
    return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]


def _call_grid(grid: Callable[..., Any], meta: dict[str, Any], name: str) -> Any:
    """``grid(meta)``; a callable that cannot take the dict, or looks up a name it lacks, is
    a LaunchError (examined only after it failed: a launch pays nothing for the check)."""
    try:
        return grid(meta)
    except TypeError:
        if _takes_one_argument(grid):
            raise  # a mistake inside the callable: its own traceback says where
        raise LaunchError(f"{name}: the grid callable {_spelled(grid)} cannot be called with "
                          "the dict of comptime values", "take one argument: "
                          f"{name}[lambda meta: (cube.cdiv(n, meta['BLOCK']),)](...)") from None
    except KeyError as err:
        key = err.args[0] if err.args else None
        if not isinstance(key, str) or key in meta:
            raise
        known = ", ".join(meta) or "none: the kernel has no cube.Comptime parameters"
        raise LaunchError(f"{name}: the grid callable read meta[{key!r}], but meta holds the "
                          f"comptime values only ({known})", "read a comptime parameter, "
                          "or use the value itself from the enclosing code") from None


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    try:
        inspect.signature(fn).bind(None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): assume it fits
        pass
    return True


def _spelled(fn: Callable[..., Any]) -> str:
    try:
        return f"{getattr(fn, '__name__', type(fn).__name__)}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        return repr(fn)


# ---- arguments ----

def check_comptime_values(name: str, bound: Mapping[str, Any],
                          kinds: Mapping[str, str | None]) -> None:
    """An array passed for a ``cube.Comptime`` parameter (a parameter in the wrong place, or
    a missing annotation on another one), or a ``Comptime[int]`` value that is not an int,
    is refused before it reaches the compiler: there it would fail at its first use, with a
    hint to add the annotation the parameter already has."""
    for param, kind in kinds.items():
        value = bound.get(param)
        if is_array(value):
            raise LaunchError(f"{name}(): '{param}' is a cube.Comptime parameter, but it got "
                              f"an array ({type(value).__name__})",
                              f"pass a Python value (int, float, bool, str, dtype, tuple) for "
                              f"{param}; arrays go to parameters without cube.Comptime")
        wanted = _COMPTIME_TYPES.get(kind or "")
        if wanted is not None and param in bound and not isinstance(value, wanted):
            raise LaunchError(f"{name}(): '{param}' is a cube.Comptime[{kind}] parameter, but it "
                              f"got {value!r} ({type(value).__name__})",
                              f"pass an int{f': {param}={int(value)}' if _integral(value) else ''}")


# What a Comptime[int] value may be: NumPy's integers count, as they do in the kernel
# (`BLOCK=np.int64(16)`). Comptime[bool] takes any value, tested for truth as in Python.
_COMPTIME_TYPES = {"int": (int, np.integer)}


def _integral(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) and float(value).is_integer()


def check_options(name: str, options: Mapping[str, Any]) -> None:
    """Launch options of the wrong kind are refused at the launch, on every target: Triton
    would fail at compile time on a GPU only (num_warps=3), other targets ignore them."""
    for option in ("num_warps", "num_stages", "workgroup_size"):
        value = options.get(option)
        if value is None:
            continue
        smallest = 0 if option == "num_stages" else 1
        ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
            and value >= smallest
        if ok and option == "num_warps":
            ok = value & (value - 1) == 0
        if not ok:
            what = "a power of two" if option == "num_warps" else f"an int >= {smallest}"
            raise LaunchError(f"{name}(): {option}={value!r}; it must be {what}",
                              f"for example {name}[grid](..., "
                              f"{option}={4 if option == 'num_warps' else 2})")


def with_argument_hint(err: CompileError, signature: inspect.Signature, args: tuple,
                       kwargs: Mapping[str, Any]) -> CompileError:
    """``err``, naming the launch argument behind it when it is about pointers. An array is a
    pointer in the kernel and a number is not, so an argument passed in the wrong place (an
    array for ``n``, a float for ``x``) fails where the kernel computes with it, with an
    error that does not say which value made it a pointer, or not one."""
    if "pointer" not in err.message or err.loc is None:
        return err
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return err
    named = [name for name in _names_in_span(err.loc) if name in bound]
    arrays = [name for name in named if is_array(bound[name])]
    numbers = [name for name in named if not is_array(bound[name])]
    zero_d = [name for name in arrays
              if isinstance(bound[name], np.ndarray) and bound[name].ndim == 0]
    wants_pointer = "needs a pointer" in err.message
    note = None
    if zero_d:
        note = (f"argument '{zero_d[0]}' is a 0-d NumPy array, which a kernel takes as a "
                f"pointer; pass {zero_d[0]}.item() for a scalar")
    elif wants_pointer and numbers:
        name = numbers[0]
        value = bound[name]
        note = (f"argument '{name}' got {reprlib.repr(value)} ({type(value).__name__}), not "
                "an array; check the order of the launch arguments")
    elif not wants_pointer and len(arrays) == 1:  # two arrays: the kernel's own mistake
        name = arrays[0]
        note = (f"argument '{name}' got an array ({type(bound[name]).__name__}), which a "
                f"kernel takes as a pointer; if '{name}' is a number, pass an int or a float")
    if note is None:
        return err
    return type(err)(err.message, err.loc, f"{note} (else: {err.hint})" if err.hint else note)


def _names_in_span(loc: Loc) -> list[str]:
    """The identifiers in the user's source that ``loc`` underlines."""
    line = linecache.getline(loc.file, loc.line)
    end = loc.end_col if loc.end_col and loc.end_col > loc.col else len(line)
    return re.findall(r"[A-Za-z_]\w*", line[loc.col:end])


def written_args(fn: Function) -> frozenset[str]:
    """The names of the array arguments ``fn`` stores to (atomics included)."""
    return frozenset(fn.arg_names[op.operands[0].type.ptr_base] for op in walk(fn.body)
                     if op.op in _WRITES)


def _read_only(name: str, arg: str) -> LaunchError:
    return LaunchError(f"argument '{arg}' is a read-only NumPy array, and {name} stores to it",
                       f"pass a writable copy, np.array({arg}), and read the result from it")


def check_writable(name: str, bound: Mapping[str, Any], written: frozenset[str]) -> None:
    """Every NumPy array the kernel stores to is writable. Arrays it only loads from may be
    read-only: a frozen input is common (np.frombuffer, a read-only memmap). Without this the
    cpu target fails deep in Numba's typing, and Triton's interpreter writes anyway."""
    for arg, value in bound.items():
        if arg in written and isinstance(value, np.ndarray) and not value.flags.writeable:
            raise _read_only(name, arg)


def writable_guard(launcher: Callable[..., None], args: Sequence[Any], names: Sequence[str],
                   written: frozenset[str], name: str) -> Callable[..., None]:
    """``launcher`` for later launches like this one (same kinds of argument at each
    position), first checking that the NumPy arrays the kernel stores to are writable;
    ``launcher`` itself when no argument it stores to is a NumPy array (GPU arrays)."""
    slots = tuple(i for i, (arg, value) in enumerate(zip(names, args))
                  if arg in written and isinstance(value, np.ndarray))
    if not slots:
        return launcher

    def guarded(grid: tuple[int, int, int], values: list[Any]) -> None:
        for i in slots:
            if not values[i].flags.writeable:
                raise _read_only(name, names[i])
        launcher(grid, values)

    return guarded


# ---- calls and decorations that do not fit ----

def no_grid_error(name: str, params: Sequence[str]) -> LaunchError:
    """A kernel called like a function, at the user's call."""
    return LaunchError(f"{name}() is a kernel, called without a grid",
                       f"launch it on a grid of cubes: {name}[(cubes,)]({', '.join(params)})",
                       user_loc())


def check_decorated(fn: Any, options: Mapping[str, Any]) -> None:
    """``@cube.kernel`` decorates a ``def``, written without arguments, under
    ``@cube.autotune``; anything else is an error at the decorator's line."""
    problem = None
    if fn is None or options:
        problem = ("@cube.kernel takes no arguments", "write @cube.kernel without parentheses; "
                   "launch options go to the launch: kernel[grid](..., num_warps=4)")
    elif type(fn).__module__.startswith("cubepy.autotune"):  # not imported: it sits above
        problem = (f"@cube.kernel is applied to {fn!r}: the decorators are in the wrong order",
                   "put @cube.autotune(...) above @cube.kernel, which goes right on the def")
    elif not inspect.isfunction(inspect.unwrap(fn)):  # a @cube.func or a kernel wraps a def
        what = f"the class {fn.__name__}" if inspect.isclass(fn) else \
            f"{type(fn).__name__} {fn!r}"
        problem = (f"@cube.kernel decorates a function, not {what}",
                   "put @cube.kernel right above a `def`")
    else:
        problem = _variadic_parameter(fn)
    if problem is not None:
        raise CubeError(format_message(problem[0], user_loc(), problem[1]))


def _variadic_parameter(fn: Any) -> tuple[str, str] | None:
    """``*args`` or ``**kwargs`` in a kernel's signature: each launch argument becomes one
    typed parameter, so a kernel names them one by one."""
    for param in inspect.signature(fn).parameters.values():
        stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
        if param.kind in stars:
            return (f"a kernel cannot take {stars[param.kind]}{param.name}: each launch argument "
                    "is one array or scalar parameter",
                    f"name the parameters one by one (def {fn.__name__}(x, y, out, n, ...)), "
                    "or pass one array holding the values")
    return None
