"""Finding a Python function's source and mapping AST positions back to the user's file."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
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
    lines: list[str] = field(default_factory=list)  # the dedented source, for columns

    def loc(self, node: ast.AST) -> Loc:
        """Where ``node`` is in the user's file. A node spanning several lines is underlined to
        the end of its first line's code (a loop header, the start of a long call)."""
        lineno = getattr(node, "lineno", None)
        if lineno is None:  # an operator node (ast.MatMult) has no position of its own
            return Loc(self.file, self.first_line, self.indent)
        text = self.lines[lineno - 1] if lineno <= len(self.lines) else ""
        col = _char_col(text, node.col_offset)  # type: ignore[attr-defined]
        if getattr(node, "end_lineno", None) == lineno:
            end_col = _char_col(text, node.end_col_offset)  # type: ignore[attr-defined]
        else:
            end_col = max(col + 1, _code_end(text))
        return Loc(self.file, self.first_line + lineno - 1, col + self.indent,
                   end_col + self.indent)


def _char_col(text: str, byte_col: int) -> int:
    """AST columns count UTF-8 bytes; carets count characters."""
    return len(text.encode()[:byte_col].decode(errors="ignore"))


def _code_end(text: str) -> int:
    """The column where ``text``'s code ends: before a trailing comment and whitespace."""
    quote = None
    for i, char in enumerate(text):
        if quote is None and char == "#":
            return len(text[:i].rstrip())
        if char in "'\"" and (quote is None or quote == char):
            quote = None if quote else char
    return len(text.rstrip())


_cache: dict[Any, Source] = {}


def parse_function(fn: Any) -> Source:
    """Parse ``fn``'s definition (cached per code object and file)."""
    code = fn.__code__
    # Code objects of one text compare equal whatever file they come from: without the file in
    # the key, a copy of a kernel in a second file would report its errors in the first.
    key = (code, code.co_filename)
    if key in _cache:
        return _cache[key]
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
    source = Source(tree, file, first_line, indent, dedented.splitlines())
    _cache[key] = source
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
