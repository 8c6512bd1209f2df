"""Calls to plain Python inside a kernel: the few Python builtins kernels accept, compile-time
calls on comptime values, and the messages for everything else (which point at the cube
builtin to write instead where there is one)."""

from __future__ import annotations

import ast
import difflib
from typing import TYPE_CHECKING, Any

from ..ir import Value
from ..ir import dtypes as dt
from ..lang import builtins as B
from .builtins import article, call_builtin
from .semantics import is_value, to_bool

if TYPE_CHECKING:
    from .visitor import FunctionBuilder

# What to write instead of a Python builtin that kernels do not accept.
PY_BUILTIN_HINTS = {
    "sum": "use cube.sum(x, axis=None)",
    "round": "use cube.floor(x + 0.5)",
    "any": "use cube.max(mask.to(cube.int32), axis=None) > 0",
    "all": "use cube.min(mask.to(cube.int32), axis=None) > 0",
    "pow": "use x ** y or cube.pow(x, y)",
    "divmod": "use x // y and x % y",
    "map": "call the function on the whole tile: tiles are computed elementwise",
    "sorted": "kernels cannot sort tiles; reduce them with cube.max()/cube.min()",
}
# Libraries whose functions have a cube builtin of the same name (math.exp -> cube.exp).
LIBRARIES = ("math", "cmath", "numpy", "scipy", "torch", "triton", "builtins")


def cube_name(name: str) -> str | None:
    """``name`` if ``cube.<name>`` is a kernel builtin, e.g. for ``math.exp`` or ``np.sum``."""
    return name if B.is_builtin(getattr(B, name, None)) else None


def unknown_name_hint(name: str) -> tuple[str, str]:
    """The message and hint for a name a kernel cannot see."""
    import builtins as py_builtins

    if hasattr(py_builtins, name):
        same = cube_name(name)
        hint = PY_BUILTIN_HINTS.get(name) or (f"use cube.{same}(...)" if same else
                                              "see docs/language.md for the kernel builtins")
        return f"Python's built-in '{name}' cannot be used in a kernel", hint
    return (f"unknown name '{name}'", "define it before use, pass it as a kernel argument, or "
            "import it at module level")


def did_you_mean(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1)
    return f"did you mean '{close[0]}'?" if close else \
        "check the spelling; the kernel language is listed in docs/language.md"


def describe(value: Any) -> str:
    """A value as the user thinks of it (no IR names)."""
    if is_value(value):
        kind = "pointer" if value.type.is_ptr else "tile" if value.type.shape else "scalar"
        shape = f" of shape {value.type.shape}" if value.type.shape else ""
        return f"{article(value.type.dtype.name)} {kind}{shape}"
    if isinstance(value, (tuple, list)):
        return f"{len(value)} values"
    return repr(value)


# Triton's tensor methods that cubepy has: ``x.sum(1)`` is ``cube.sum(x, 1)``
TILE_METHODS = frozenset({
    "abs", "argmax", "argmin", "associative_scan", "atomic_add", "atomic_and", "atomic_cas",
    "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "broadcast_to", "cast",
    "ceil", "cos", "cumprod", "cumsum", "erf", "exp", "exp2", "expand_dims", "flip", "floor",
    "gather", "histogram", "log", "log2", "max", "min", "permute", "ravel", "reduce",
    "reduce_or", "reshape", "rsqrt", "sigmoid", "sin", "softmax", "sort", "split", "sqrt",
    "sqrt_rn", "sum", "trans", "view", "xor_sum",
})


class Method:
    """``tile.to`` (or another of ``TILE_METHODS``) before it is called."""

    def __init__(self, value: Value, name: str):
        self.value, self.name = value, name


def call_to(fb: FunctionBuilder, node: ast.Call, value: Value, args: list[Any],
            kwargs: dict[str, Any]) -> Value:
    """``tile.to(dtype)`` and ``tile.to(dtype, bitcast=True)``."""
    bitcast = kwargs.pop("bitcast", False)
    if len(args) + len(kwargs) != 1 or (kwargs and "dtype" not in kwargs):
        fb.error(node, "x.to() takes one argument, the dtype, and optionally bitcast=",
                 "write x.to(cube.float32) or x.to(cube.int32, bitcast=True)")
    dtype = args[0] if args else kwargs["dtype"]
    return call_builtin(fb, "cast", [value, dtype], {"bitcast": bitcast})


def _fold(fb: FunctionBuilder, op: str, args: list[Any]) -> Any:
    result = args[0]
    for arg in args[1:]:
        result = call_builtin(fb, op, [result, arg], {})
    return result


def call_python(fb: FunctionBuilder, node: ast.Call, fn: Any, args: list[Any],
                kwargs: dict[str, Any]) -> Any:
    """A call of a plain Python callable: a builtin kernels accept, or a compile-time call."""
    has_values = any(is_value(a) for a in list(args) + list(kwargs.values()))
    if fn is print:
        return call_builtin(fb, "device_print", ["", *args], {})
    if fn in (min, max) and has_values:
        name = fn.__name__
        if len(args) < 2 or kwargs:
            fb.error(node, f"{name}() of one tile: Python's {name} would reduce it",
                     f"use cube.{name}(x, axis=None) to reduce, or {name}(a, b) for the "
                     "elementwise " + ("minimum" if fn is min else "maximum"))
        return _fold(fb, "minimum" if fn is min else "maximum", args)
    if fn is abs and has_values:
        return call_builtin(fb, "abs", args, kwargs)
    if fn in (int, float, bool) and args and is_value(args[0]):
        target = {int: dt.int32, float: dt.float32, bool: dt.bool_}[fn]
        return fb.b.cast(args[0], target) if fn is not bool else to_bool(fb.b, args[0])
    if fn is len and args and is_value(args[0]):
        if not args[0].type.shape:
            fb.error(node, f"len() of {describe(args[0])}", "len() needs a tile")
        return args[0].type.shape[0]
    if fn is range:
        fb.error(node, "range() can only be used as a for-loop's iterator",
                 "write `for i in range(...):`")
    if has_values:
        fname = getattr(fn, "__name__", repr(fn))
        owner = getattr(fn, "__module__", None) or type(fn).__module__ or ""
        same = cube_name(fname)
        if same is not None and owner.split(".")[0] in LIBRARIES:
            fb.error(node, f"{owner}.{fname}() cannot compute on tiles",
                     f"use cube.{same}(...) instead")
        fb.error(node, f"cannot call the Python function '{fname}' on tiles",
                 f"decorate '{fname}' with @cube.func so it is compiled too")
    if not callable(fn):
        fb.error(node.func, f"{fn!r} is not callable")
    try:  # a compile-time call on comptime values, e.g. math.log2(BLOCK)
        return fn(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - reported at the user's line
        fb.error(node, f"compile-time call failed: {type(err).__name__}: {err}",
                 "only comptime values (cube.Comptime parameters, literals) can be passed "
                 "to Python functions in a kernel")
