"""Text form of the IR, stable enough for golden tests (values numbered in print order)."""

from __future__ import annotations

from .core import Block, Function, Operation, Value
from .dtypes import DType


class _Names:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def __call__(self, value: Value) -> str:
        if value.id not in self.names:
            self.names[value.id] = f"%{value.name or ''}{len(self.names)}"
        return self.names[value.id]


def _attr(value: object) -> str:
    if isinstance(value, DType):
        return value.name
    if isinstance(value, tuple):
        return "(" + ", ".join(map(str, value)) + ")"
    if hasattr(value, "arg_names"):  # a callee Function
        return f"@{value.name}"
    return repr(value)


def _op_line(operation: Operation, names: _Names) -> str:
    results = ", ".join(names(r) for r in operation.results)
    head = f"{results} = " if results else ""
    operands = ", ".join(names(v) for v in operation.operands)
    attrs = ", ".join(f"{k}={_attr(v)}" for k, v in sorted(operation.attrs.items()))
    text = f"{head}{operation.op.value}"
    if operands:
        text += f" {operands}"
    if attrs:
        text += f" {{{attrs}}}"
    if operation.results:
        text += " : " + ", ".join(str(r.type) for r in operation.results)
    return text


def _block(block: Block, names: _Names, indent: str, lines: list[str]) -> None:
    for operation in block.ops:
        line = _op_line(operation, names)
        if operation.loc is not None:
            line += f"  // line {operation.loc.line}"
        lines.append(indent + line + (" {" if operation.regions else ""))
        for i, region in enumerate(operation.regions):
            if i:
                lines.append(indent + "} {")
            args = ", ".join(f"{names(a)}: {a.type}" for a in region.args)
            if args:
                lines.append(indent + f"  ^({args}):")
            _block(region, names, indent + "  ", lines)
        if operation.regions:
            lines.append(indent + "}")


def print_function(fn: Function) -> str:
    """The IR of ``fn`` as text.

    Example:
        >>> print(kernel.ir(x, out, n, BLOCK=64))  # doctest: +SKIP
        kernel add(%x0: ptr<f32, arg0>, ...) {
    """
    names = _Names()
    args = ", ".join(f"{names(v)}: {v.type}" for v in fn.args)
    comptime = ", ".join(f"{p.name}={p.comptime_value!r}" for p in fn.params if p.is_comptime)
    header = f"kernel {fn.name}({args})"
    if comptime:
        header += f" comptime({comptime})"
    lines = [header + " {"]
    _block(fn.body, names, "  ", lines)
    lines.append("}")
    return "\n".join(lines)


__all__ = ["print_function"]
