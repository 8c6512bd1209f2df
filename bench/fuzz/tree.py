"""Expression trees: nodes, dtype inference under cubepy's rules, and rendering to kernel source."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .dtypes import (
    ARITH,
    BITOPS,
    BITS,
    COMPARE,
    MATH1,
    PYOP,
    ROUNDING,
    SHIFTS,
    int_range,
    is_f,
    is_i,
    literal_dtype,
    math_dtype,
    promote,
    promote_literal,
)


class Invalid(Exception):
    """The generator built something cubepy refuses by its rules (not a finding)."""


@dataclass
class Node:
    op: str  # "in", "lit", a unary, binary, "cast", "where", "fma", "maximum", "minimum"
    args: list[Node] = field(default_factory=list)
    value: object = None  # literal value, or input index for "in"
    to: str = ""  # cast target
    spelling: int = 0  # which of the equivalent spellings the source uses
    dtype: str = ""

    def size(self) -> int:
        return 1 + sum(a.size() for a in self.args)


def operand_dtype(n: Node) -> str | None:
    return None if n.op == "lit" else n.dtype


def common(a: Node, b: Node) -> str:
    if a.op == "lit" and b.op == "lit":
        return promote(literal_dtype(a.value), literal_dtype(b.value))
    if a.op == "lit":
        return promote_literal(b.dtype, a.value)
    if b.op == "lit":
        return promote_literal(a.dtype, b.value)
    return promote(a.dtype, b.dtype)


def check_literal_fits(n: Node, dtype: str) -> None:
    if n.op == "lit" and isinstance(n.value, int) and is_i(dtype):
        lo, hi = int_range(dtype)
        if not lo <= n.value <= hi:
            raise Invalid("literal does not fit")


def infer(n: Node, input_dtypes: list[str]) -> str:
    """Set and return n.dtype by cubepy's rules; Invalid where cubepy gives a compile error."""
    for a in n.args:
        if a.op != "lit":
            infer(a, input_dtypes)
    op = n.op
    if op == "in":
        n.dtype = input_dtypes[n.value]
    elif op == "lit":
        raise Invalid("a bare literal")
    elif op in ("neg", "abs", "inv"):
        d = n.args[0].dtype
        if (op in ("neg", "abs") and d == "bool") or (op == "inv" and is_f(d)):
            raise Invalid(op)
        n.dtype = d
    elif op in MATH1 or op in ROUNDING:
        n.dtype = math_dtype(n.args[0].dtype)
    elif op == "cast":
        n.dtype = n.to
    elif op == "bitcast":
        if n.args[0].op == "lit" or "bool" in (n.args[0].dtype, n.to) \
                or BITS[n.args[0].dtype] != BITS[n.to]:
            raise Invalid("bitcast between widths")
        n.dtype = n.to
    elif op in ARITH or op in COMPARE or op in BITOPS or op in SHIFTS \
            or op in ("maximum", "minimum"):
        a, b = n.args
        if a.op == "lit" and b.op == "lit":
            raise Invalid("two literals")
        d = common(a, b)
        check_literal_fits(a, d)
        check_literal_fits(b, d)
        if op in ("truediv", "pow") and not is_f(d):
            d = "float32"
        if op in ("floordiv", "mod", "sub", "add", "mul") and d == "bool":
            raise Invalid("arith on bool")
        if op in BITOPS and is_f(d):
            raise Invalid("bitop on float")
        if op in SHIFTS and not is_i(d):
            raise Invalid("shift on non-int")
        if op in ("maximum", "minimum") and d == "bool":
            raise Invalid("max of bool")
        n.value = d  # the dtype both operands are computed in
        n.dtype = "bool" if op in COMPARE else d
    elif op == "where":
        c, a, b = n.args
        if c.op == "lit" or (a.op == "lit" and b.op == "lit"):
            raise Invalid("literal where")
        d = common(a, b)
        check_literal_fits(a, d)
        check_literal_fits(b, d)
        n.value = d
        n.dtype = d
    elif op == "fma":
        if any(a.op == "lit" for a in n.args):
            raise Invalid("fma literal")
        d = n.args[0].dtype
        for a in n.args[1:]:
            d = promote(d, a.dtype)
        n.value = d
        n.dtype = math_dtype(d)
    else:
        raise ValueError(op)
    return n.dtype


def dtypes_used(n: Node, input_dtypes: list[str]) -> set[str]:
    out = {n.dtype} if n.dtype else set()
    if n.op == "in":
        out.add(input_dtypes[n.value])
    if isinstance(n.value, str):
        out.add(n.value)
    if n.op in MATH1 or n.op in ROUNDING:
        out.add(math_dtype(n.args[0].dtype))
    for a in n.args:
        if a.op != "lit":
            out |= dtypes_used(a, input_dtypes)
        else:
            out.add(literal_dtype(a.value))
    return out


def render_literal(v: object) -> str:
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INF" if v > 0 else "(-INF)"
        text = repr(v)
        return f"({text})" if text.startswith("-") else text
    return f"({v})" if v < 0 else repr(v)


def render(n: Node, names: list[str], lines: list[str], counter: list[int]) -> str:
    """Source for n; each operation becomes its own `tK = ...` line."""
    if n.op == "in":
        return names[n.value]
    if n.op == "lit":
        return render_literal(n.value)
    a = [render(x, names, lines, counter) for x in n.args]
    op, sp = n.op, n.spelling
    if op == "neg":
        text = f"-{a[0]}"
    elif op == "abs":
        text = f"abs({a[0]})" if sp else f"cube.abs({a[0]})"
    elif op == "inv":
        text = f"~{a[0]}"
    elif op in MATH1 or op in ROUNDING:
        text = f"cube.{op}({a[0]})"
    elif op == "cast":
        text = f"cube.cast({a[0]}, cube.{n.to})" if sp or n.args[0].op == "lit" \
            else f"{a[0]}.to(cube.{n.to})"
    elif op == "bitcast":
        text = f"cube.cast({a[0]}, cube.{n.to}, bitcast=True)" if sp \
            else f"{a[0]}.to(cube.{n.to}, bitcast=True)"
    elif op == "pow" and sp:
        text = f"cube.pow({a[0]}, {a[1]})"
    elif op in PYOP:
        text = f"{a[0]} {PYOP[op]} {a[1]}"
    elif op in ("maximum", "minimum"):
        text = f"{op[:3]}({a[0]}, {a[1]})" if sp else f"cube.{op}({a[0]}, {a[1]})"
    elif op == "where":
        text = f"cube.where({a[0]}, {a[1]}, {a[2]})"
    elif op == "fma":
        text = f"cube.fma({a[0]}, {a[1]}, {a[2]})"
    else:
        raise ValueError(op)
    counter[0] += 1
    name = f"t{counter[0]}"
    lines.append(f"{name} = {text}")
    return name


def subtrees(n: Node, path=()):
    yield path, n
    for i, a in enumerate(n.args):
        yield from subtrees(a, path + (i,))


def replace(n: Node, path: tuple, new: Node) -> Node:
    if not path:
        return new
    args = list(n.args)
    args[path[0]] = replace(args[path[0]], path[1:], new)
    return Node(n.op, args, n.value if n.op in ("in", "lit") else None, n.to, n.spelling)


def clone(n: Node) -> Node:
    return Node(n.op, [clone(a) for a in n.args], n.value if n.op in ("in", "lit") else None,
                n.to, n.spelling)


def used_inputs(n: Node) -> set[int]:
    out = {n.value} if n.op == "in" else set()
    for a in n.args:
        out |= used_inputs(a)
    return out
