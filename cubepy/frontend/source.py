"""Finding a Python function's source and mapping AST positions back to the user's file."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from ..errors import CompileError
from ..ir import Loc


@dataclass
class Source:
    """The parsed definition of a kernel or helper, with its place in the user's file."""

    tree: ast.FunctionDef
    file: str
    first_line: int
    indent: int

    def loc(self, node: ast.AST) -> Loc:
        line = self.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + self.indent
        end_col = None
        if getattr(node, "end_lineno", None) == getattr(node, "lineno", None):
            end_col = node.end_col_offset + self.indent  # type: ignore[attr-defined]
        return Loc(self.file, line, col, end_col)


_cache: dict[Any, Source] = {}


def parse_function(fn: Any) -> Source:
    """Parse ``fn``'s definition (cached per code object)."""
    code = fn.__code__
    if code in _cache:
        return _cache[code]
    file = inspect.getsourcefile(fn) or code.co_filename
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except OSError as err:
        raise CompileError(
            f"cannot read the source of {fn.__qualname__}: {err}",
            Loc(file, code.co_firstlineno, 0),
            "kernels must be defined in a file (not typed at an interactive prompt or exec'd "
            "from a string)") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
    module = ast.parse(dedented)
    tree = module.body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise CompileError(f"{fn.__qualname__} is not a plain function definition",
                           Loc(file, first_line, 0), "decorate a `def` function")
    source = Source(tree, file, first_line, indent)
    _cache[code] = source
    return source


def function_globals(fn: Any) -> dict[str, Any]:
    """The names a function sees: its globals, overlaid with its closure's cells."""
    names = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                names[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is assigned later
                pass
    return names
