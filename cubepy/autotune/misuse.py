"""Mistakes in using ``@cube.autotune``, reported at the user's code.

A mistake in the decorator (a key that names no parameter, a config keyword the kernel does
not take) points at the ``@cube.autotune(...)`` line, the caret under the argument at fault;
a hook that returns something unusable points at the hook; a call that does not fit (a
missing argument, an unknown target) points at the call. Each says what to write instead.

Example:
    >>> unknown_name_hint("BLOK", ["BLOCK", "GROUP"], "comptime parameters")
    "did you mean 'BLOCK'? comptime parameters: BLOCK, GROUP"
"""

from __future__ import annotations

import ast
import difflib
import inspect
import linecache
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import CubeError, LaunchError, format_message, in_cubepy, user_loc
from ..ir.core import Loc
from ..lang.builtins import is_comptime_annotation
from ..runtime.jit import Kernel
from .config import Config
from .key import pow2_anchor

_POSITIONS = {"configs": 0, "key": 1}  # autotune(configs, key, ...) written positionally


def trimmed(error: BaseException) -> BaseException:
    """A cubepy error without the tuner's frames (its message points at the user's code);
    any other error as it is, its traceback through the user's code kept."""
    return error.with_traceback(None) if isinstance(error, CubeError) else error


def at_user(error: LaunchError) -> LaunchError:
    """``error`` pointing at the user's call when it points inside cubepy (the tuner's own
    launch of the kernel) or nowhere; a place in the user's code (a host function) stays."""
    if error.loc is not None and not in_cubepy(error.loc.file):
        return error
    return LaunchError(error.message, error.hint, user_loc())


# ---- mistakes in the decorator ----

def _argument_loc(call: Loc, argument: str, index: int | None) -> Loc:
    """Where ``argument`` (or its ``index``-th element, for a list written out) is in the
    ``autotune(...)`` call at ``call``; the call itself when the source cannot say."""
    try:
        tree = ast.parse("".join(linecache.getlines(call.file)))
    except (SyntaxError, ValueError):
        return call
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or node.lineno != call.line \
                or _called_name(node.func) != "autotune":
            continue
        found: ast.AST | None = next((k for k in node.keywords if k.arg == argument), None)
        position = _POSITIONS.get(argument)
        if found is None and position is not None and position < len(node.args):
            found = node.args[position]
        if found is None:
            continue
        value = getattr(found, "value", found)
        if index is not None and isinstance(value, (ast.List, ast.Tuple)) \
                and index < len(value.elts):
            found = value.elts[index]
        one_line = found.end_lineno == found.lineno
        return Loc(call.file, found.lineno, found.col_offset,
                   found.end_col_offset if one_line else None)
    return call


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def definition_error(name: str, message: str, hint: str, argument: str | None,
                     index: int | None = None) -> CubeError:
    """A mistake in ``@cube.autotune(...)`` of ``name``, at the argument at fault (at the
    whole call for None)."""
    loc = user_loc()
    if loc is not None and argument is not None:
        loc = _argument_loc(loc, argument, index)
    return CubeError(format_message(f"autotune {name}: {message}", loc, hint))


def check_decorated(fn: Any) -> None:
    """``@cube.autotune`` takes a kernel or a function."""
    if not isinstance(fn, Kernel) and not callable(fn):
        raise definition_error(repr(fn), f"it decorates {type(fn).__name__} {fn!r}, not a "
                               "kernel or function", "put @cube.autotune(...) right above "
                               "@cube.kernel (or a plain def)", None)


def check_options(name: str, *, warmup: int, rep: int, drop_ratio: float | None,
                  max_seconds: float) -> None:
    """Timing options out of range are an error (a drop ratio under 1 dropped the leader
    itself, and with it every candidate)."""
    problem = None
    if rep < 1:
        problem = "rep", f"rep={rep}: it must be at least 1", "rep=10 (the default)"
    elif warmup < 0:
        problem = "warmup", f"warmup={warmup}: it must be 0 or more", "warmup=1 (the default)"
    elif drop_ratio is not None and not drop_ratio >= 1:
        problem = ("drop_ratio", f"drop_ratio={drop_ratio}: it must be at least 1, or the "
                   "leader itself is dropped", "drop_ratio=1.5 (the default), or None to time "
                   "every candidate to the end")
    elif not max_seconds >= 0:
        problem = ("max_seconds", f"max_seconds={max_seconds}: it must be 0 or more",
                   "max_seconds=1.0 (the default)")
    if problem is not None:
        argument, message, hint = problem
        raise definition_error(name, message, hint, argument)


def checked_configs(name: str, configs: Any) -> list[Config]:
    """``configs`` as a list of ``Config``; an error at the decorator otherwise."""
    hint = "write configs=[cube.Config(BLOCK=64), cube.Config(BLOCK=128)]"
    if isinstance(configs, (Config, str, Mapping)) or not isinstance(configs, Iterable):
        raise definition_error(name, f"configs={configs!r} is not a list of cube.Config",
                               hint, "configs")
    configs = list(configs)
    if not configs:
        raise definition_error(name, "configs is empty: there is nothing to tune", hint,
                               "configs")
    for index, cfg in enumerate(configs):
        if not isinstance(cfg, Config):
            spelled = (", ".join(f"{k}={v!r}" for k, v in cfg.items())
                       if isinstance(cfg, Mapping) else "...")
            raise definition_error(name, f"configs[{index}] is {cfg!r}, not a cube.Config",
                                   f"write cube.Config({spelled})", "configs", index)
    return configs


def checked_key(name: str, key: Any) -> dict[str, Callable[[int], int] | None]:
    """``key`` as a dict of names to bucket functions (``pow2_anchor`` for a list of names)."""
    if isinstance(key, str):  # iterated, key="size" would be the names s, i, z and e
        raise definition_error(name, f"key={key!r} is one string, not a list of parameter "
                               "names", f"write key=[{key!r}]", "key")
    if isinstance(key, Mapping):
        for index, (param, bucket) in enumerate(key.items()):
            if bucket is not None and not callable(bucket):
                raise definition_error(
                    name, f"key[{param!r}] is {bucket!r}, not a bucket function",
                    f"write key={{{param!r}: pow2_anchor}} (from cubepy.autotune), or "
                    f"{{{param!r}: None}} to key on exact values", "key", index)
        return dict(key)
    if not isinstance(key, Iterable) or not all(isinstance(k, str) for k in key):
        raise definition_error(name, f"key={key!r} is not a list of parameter names",
                               "write key=['n'] (names of the parameters whose values "
                               "select a result)", "key")
    return {param: pow2_anchor for param in key}


def unknown_setting(fn: Any, signature: inspect.Signature, cfg: Config) -> str | None:
    """The first name ``cfg`` sets that is not a comptime parameter of the kernel ``fn`` (not
    a parameter of the host function ``fn``); None when there is none."""
    if isinstance(fn, Kernel):
        return next((name for name in cfg.kwargs if name not in fn.comptime), None)
    params = signature.parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return next((name for name in cfg.launch_kwargs() if name not in params), None)


def names_hint(fn: Any, name: str) -> str:
    """What a config should set instead of ``name``."""
    if isinstance(fn, Kernel):
        return unknown_name_hint(name, fn.comptime, f"comptime parameters of {fn.__name__}")
    return unknown_name_hint(name, inspect.signature(fn).parameters,
                             f"parameters of {fn.__name__}")


def check_names(name: str, fn: Any, signature: inspect.Signature, configs: list[Config],
                key: Mapping[str, Any]) -> None:
    """Every name a config sets is a comptime parameter of the kernel (a parameter of a host
    function), and every key name is a parameter the configs do not set."""
    is_kernel = isinstance(fn, Kernel)
    for index, cfg in enumerate(configs):
        bad = unknown_setting(fn, signature, cfg)
        if bad is not None:
            what = "comptime parameter" if is_kernel else "parameter"
            raise definition_error(name, f"{cfg} sets '{bad}', which is not a {what} of "
                                   f"{fn.__name__}", names_hint(fn, bad), "configs", index)
    params = signature.parameters
    tuned = {param for c in configs for param in (c.kwargs if is_kernel else c.launch_kwargs())}
    for index, param in enumerate(key):
        if param not in params or param in tuned:
            why = "is set by the configs" if param in params else "is not a parameter"
            untuned = [p for p in params if p not in tuned]
            raise definition_error(name, f"key '{param}' {why} of {fn.__name__}",
                                   unknown_name_hint(param, untuned, "parameters to key on"),
                                   "key", index)


def unknown_name_hint(name: str, known: Iterable[str], what: str) -> str:
    """What to write instead of ``name``: the closest known name, and all of them."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1)
    listing = f"{what}: {', '.join(known)}" if known else f"there are no {what}"
    return (f"did you mean '{close[0]}'? " if close else "") + listing


def call_error(message: str, hint: str) -> CubeError:
    """A call of a tuned kernel or function that cannot work, at the user's line."""
    return CubeError(format_message(message, user_loc(), hint))


def grid_on_function(name: str, fn: Callable[..., Any], signature: inspect.Signature
                     ) -> CubeError:
    """A tuned host function launched like a kernel; often a kernel missing @cube.kernel."""
    if any(is_comptime_annotation(p.annotation) for p in signature.parameters.values()):
        hint = "it has cube.Comptime parameters: did you forget @cube.kernel under @cube.autotune?"
    else:
        hint = f"call it: {fn.__name__}(...)"
    return call_error(f"{name} is an autotuned host function, launched with a grid", hint)


def binding_error(fn: Any, signature: inspect.Signature, tuned: Iterable[str],
                  problem: str) -> LaunchError:
    """Arguments that do not fit a tuned kernel or function, and how to call it."""
    untuned = [_spelled(p) for p in signature.parameters.values() if p.name not in tuned]
    call = f"{fn.__name__}{'[grid]' if isinstance(fn, Kernel) else ''}"
    return LaunchError(f"{fn.__name__}(): {problem}", f"call it as {call}({', '.join(untuned)})")


def _spelled(param: inspect.Parameter) -> str:
    """``n``, ``BLOCK=64``, ``*args``: a parameter as a call would pass it."""
    if param.kind is param.VAR_POSITIONAL:
        return f"*{param.name}"
    if param.kind is param.VAR_KEYWORD:
        return f"**{param.name}"
    return param.name if param.default is param.empty else f"{param.name}={param.default!r}"


# ---- mistakes in hooks ----

def hook_loc(hook: Callable[..., Any]) -> Loc | None:
    """Where a hook is defined (its ``def`` or ``lambda``), for errors about what it returned."""
    code = getattr(hook, "__code__", None)
    if code is None:
        return None
    line = linecache.getline(code.co_filename, code.co_firstlineno)
    col = line.find("lambda") if hook.__name__ == "<lambda>" else -1
    if col < 0:
        col = len(line) - len(line.lstrip())
    return Loc(code.co_filename, code.co_firstlineno, col, len(line.rstrip()) or None)


def hook_error(name: str, hook: Callable[..., Any], message: str, hint: str) -> CubeError:
    """A hook of ``name``'s autotuner returned something unusable."""
    return CubeError(format_message(f"autotune {name}: {message}", hook_loc(hook), hint))


def checked_prune(name: str, hook: Callable[..., Any], kept: Any, where: str) -> list[Config]:
    """What ``prune`` returned, as a list of configs; an error naming the hook otherwise."""
    hint = "return the configs to keep, e.g. `return [c for c in configs if ...]`"
    if isinstance(kept, (Config, str, bytes, Mapping)) or not isinstance(kept, Iterable):
        raise hook_error(name, hook, f"prune returned {kept!r} for {where}, not a list of "
                         "configs", hint)
    kept = list(kept)
    for cfg in kept:
        if not isinstance(cfg, Config):
            raise hook_error(name, hook, f"prune returned {cfg!r} among the configs for "
                             f"{where}, not a cube.Config", hint)
    if not kept:
        raise hook_error(name, hook, f"prune dropped every config for {where}",
                         "keep at least one config for every call (a small, safe one), or "
                         "add a config that fits these sizes to configs=")
    return kept
