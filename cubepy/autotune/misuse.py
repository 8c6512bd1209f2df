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
import contextlib
import difflib
import inspect
import json
import linecache
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ..errors import CubeError, LaunchError, format_message, in_cubepy, user_loc
from ..ir.core import Loc
from ..lang.builtins import is_comptime_annotation
from ..runtime import checks as launch_checks
from ..runtime.jit import Kernel
from .config import ADDRESS, OPTION_NAMES, Config

_POSITIONS = {"configs": 0, "key": 1}  # autotune(configs, key, ...) written positionally


def trimmed(error: BaseException) -> BaseException:
    """A cubepy error without the tuner's frames (its message points at the user's code);
    any other error as it is, its traceback through the user's code kept."""
    return error.with_traceback(None) if isinstance(error, CubeError) else error


def note(error: BaseException, text: str) -> None:
    """Add ``text`` under ``error``'s traceback (Python 3.11's notes; nothing on 3.10)."""
    if hasattr(error, "add_note"):
        error.add_note(text)


@contextlib.contextmanager
def noting(text: str) -> Iterator[None]:
    """Let an error of the user's hook through as it is (its traceback shows the hook's line),
    with ``text`` saying which autotuner called it and for what: before, a KeyError from a
    prune hook came out of the tuner's lines with nothing to say which kernel's hook it was."""
    try:
        yield
    except CubeError:
        raise
    except Exception as error:
        note(error, text)
        raise


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
    """``@cube.autotune`` takes a kernel or a function whose parameters Python can read."""
    if not isinstance(fn, Kernel) and not callable(fn):
        raise definition_error(repr(fn), f"it decorates {type(fn).__name__} {fn!r}, not a "
                               "kernel or function", "put @cube.autotune(...) right above "
                               "@cube.kernel (or a plain def)", None)
    if not isinstance(fn, Kernel) and _signature(fn) is None:
        # before: ValueError: no signature found for builtin type <class 'int'>, from inspect
        raise definition_error(repr(fn), f"it decorates {fn!r}, whose parameters Python "
                               "cannot read", "decorate a def that calls it, with the tuned "
                               "values as keyword parameters: def f(x, BLOCK=64): ...", None)


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _takes(fn: Any, count: int) -> bool:
    """Whether ``fn`` can be called with ``count`` positional arguments (True when Python
    cannot tell)."""
    signature = _signature(fn)
    if signature is None:
        return True
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def check_hooks(name: str, prune: Any, default: Any, key: Mapping[str, Any]) -> None:
    """``prune(configs, ctx)``, ``default(ctx)`` and every bucket ``f(n)`` are functions of
    that many arguments: before, a wrong one failed at the first call with a TypeError from
    the tuner's lines."""
    for argument, hook, count, spelled in (("prune", prune, 2, "prune(configs, ctx)"),
                                           ("default", default, 1, "default(ctx)")):
        if hook is None:
            continue
        if not callable(hook):
            raise definition_error(name, f"{argument}={hook!r} is not a function",
                                   f"write {argument}=f, with def {spelled}: ...", argument)
        if not _takes(hook, count):
            raise definition_error(name, f"{argument}={getattr(hook, '__name__', hook)} "
                                   f"cannot be called as {spelled}",
                                   f"define it as def {spelled}: ...", argument)
    for index, (param, bucket) in enumerate(key.items()):
        if bucket is not None and not _takes(bucket, 1):
            raise definition_error(name, f"the bucket of key '{param}' "
                                   f"({getattr(bucket, '__name__', bucket)}) cannot be called "
                                   "with one value", "write a function of one int returning "
                                   "its bucket, e.g. pow2_anchor (from cubepy.autotune)",
                                   "key", index)


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
    from .key import pow2_anchor  # key.py calls bucket functions through this module

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


def check_config_values(name: str, fn: Any, signature: inspect.Signature,
                        configs: list[Config]) -> None:
    """Configs that could never run, or whose results could never be found again, are an
    error at the config: before, the first were "discarded" at every tuning (one warning
    each) and the second retuned in every process.

    - a value whose repr holds its address (an object of the user's class): the config list's
      checksum differed in every process, so the cache never answered;
    - on a kernel, ``num_warps``/``num_stages`` or a ``Comptime[int]`` value that every
      launch refuses (``num_warps=3``, ``BLOCK="128"``);
    - a parameter without a default that other configs set but this one leaves out: the call
      may not pass it (autotune chooses it), so this config could not be launched."""
    params = signature.parameters
    tuned = {p for c in configs for p in c.launch_kwargs()}
    required = sorted(p for p in tuned if p in params and params[p].default is params[p].empty
                      and params[p].kind is not params[p].VAR_KEYWORD)
    for index, cfg in enumerate(configs):
        given = cfg.launch_kwargs()
        missing = [p for p in required if p not in given]
        if missing:
            raise definition_error(name, f"{cfg} leaves {', '.join(missing)} unset, which "
                                   "other configs set and the call may not pass",
                                   f"set {missing[0]} in every config, or give it a default "
                                   f"in {fn.__name__}", "configs", index)
        for param, value in given.items():
            shown = json.dumps(cfg.as_json()[param])
            if ADDRESS.search(shown) and not isinstance(value, str):
                raise definition_error(
                    name, f"{cfg} sets {param} to {value!r}, whose repr differs in every "
                    "process, so its tuning results could never be found again",
                    f"set {param} to a plain value (int, float, bool, str) and build the "
                    "object from it in the function", "configs", index)
        if isinstance(fn, Kernel):
            try:
                options = {o: given[o] for o in OPTION_NAMES if o in given}
                launch_checks.check_options(fn.__name__, options)
                kinds = {p: fn.comptime_kinds.get(p) for p in cfg.kwargs}
                launch_checks.check_comptime_values(fn.__name__, cfg.kwargs, kinds)
            except LaunchError as err:
                hint = (err.hint or "").replace(f"{fn.__name__}[grid](..., ", "cube.Config(..., ")
                raise definition_error(name, f"{cfg}: {err.message.split(': ', 1)[-1]}; no "
                                       "launch could use it", hint.replace("pass ", "set ", 1),
                                       "configs", index) from None


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


def bucketed(name: str, param: str, bucket: Callable[[int], Any], value: int) -> Any:
    """``bucket(value)``, the bucket of key ``param``, as JSON data; a bucket that returns
    something else (an object, which could not be written to the cache: a TypeError from
    ``json`` before) is an error at the bucket function, one that raises is let through with
    a note naming the key."""
    with noting(f"autotune {name}: raised by the bucket function of key '{param}' for "
                f"{value}"):
        result = bucket(value)
    if isinstance(result, np.generic):
        result = result.item()  # np.int64(1024): a fine bucket, but not JSON data as it is
    try:
        json.dumps(result)
    except (TypeError, ValueError):
        raise hook_error(name, bucket, f"the bucket function of key '{param}' returned "
                         f"{result!r} for {value}, not a number or a string",
                         "return the bucket as an int (e.g. the next power of two), a float "
                         "or a str") from None
    return result


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
