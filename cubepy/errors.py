"""The errors a user can cause, each pointing at the user's source with a caret."""

from __future__ import annotations

import linecache
import os
import sys
from pathlib import Path

from .ir.core import Loc

CUBEPY_DIR = str(Path(__file__).resolve().parent) + os.sep


class CubeError(Exception):
    """Base of every error cubepy raises because of how it was used."""


class CompileError(CubeError):
    """A kernel could not be compiled: the message names file:line:col, shows the line with a
    caret under the offending code and says what to write instead.

    Example:
        >>> try:
        ...     kernel[(1,)](x, BLOCK=100)  # doctest: +SKIP
        ... except cube.CompileError as err:
        ...     print(err.loc.line, err.hint)
    """

    def __init__(self, message: str, loc: Loc | None = None, hint: str | None = None):
        self.message = message
        self.loc = loc
        self.hint = hint
        super().__init__(format_message(message, loc, hint))


class UnsupportedError(CompileError):
    """The chosen target lacks a dtype or feature the kernel needs."""


class UnshownPrintWarning(UserWarning):
    """A kernel's ``cube.device_print`` runs on a target that cannot show it (WGSL has no
    printf): the kernel runs, without the prints."""


class UncheckedAssertWarning(UserWarning):
    """A kernel's ``cube.device_assert`` runs on a target that cannot check it (WGSL cannot
    stop a launch): the kernel runs, without the checks."""


class LaunchError(CubeError):
    """A launch was given arguments that do not fit the kernel (count, dtype, device, grid).

    Raised from a launch, it names the user's line of the launch with a caret under it.
    """

    def __init__(self, message: str, hint: str | None = None, loc: Loc | None = None):
        self.message = message
        self.hint = hint
        self.loc = loc
        super().__init__(format_message(message, loc, hint) if loc or hint else message)

    def located(self, loc: Loc | None) -> LaunchError:
        """The same error, pointing at ``loc`` (the launch in the user's code)."""
        if self.loc is not None or loc is None:
            return self
        return type(self)(self.message, self.hint, loc)


def source_excerpt(loc: Loc) -> str:
    """The user's line and a caret line under the span ``loc`` covers."""
    line = linecache.getline(loc.file, loc.line).rstrip("\n")
    if not line:
        return ""
    stripped = line.lstrip()
    indent = len(line) - len(stripped)
    end = loc.end_col if loc.end_col and loc.end_col > loc.col else loc.col + 1
    caret = " " * (loc.col - indent) + "^" * max(1, min(end, len(line)) - loc.col)
    return f"    {stripped}\n    {caret}"


def format_message(message: str, loc: Loc | None, hint: str | None) -> str:
    parts = [f"{loc}: {message}" if loc else message]
    if loc is not None:
        excerpt = source_excerpt(loc)
        if excerpt:
            parts.append(excerpt)
    if hint:
        parts.append(f"hint: {hint}")
    return "\n".join(parts)


def caller_loc(depth: int = 2) -> Loc | None:
    """The location of the code that called the function calling this one."""
    frame = sys._getframe(depth)
    code = frame.f_code
    try:
        positions = list(code.co_positions())[frame.f_lasti // 2]
        line, _end_line, col, end_col = positions
    except (AttributeError, IndexError):  # Python 3.10 has no co_positions
        line, col, end_col = frame.f_lineno, 0, None
    if line is None:
        line = frame.f_lineno
    return Loc(code.co_filename, line, col or 0, end_col)


def in_cubepy(filename: str) -> bool:
    """Whether ``filename`` is part of cubepy itself (not the user's code)."""
    return os.path.abspath(filename).startswith(CUBEPY_DIR)


def user_loc() -> Loc | None:
    """Where the innermost frame outside cubepy is: the user's line that called into it."""
    depth, frame = 1, sys._getframe(1)
    while frame is not None and in_cubepy(frame.f_code.co_filename):
        frame, depth = frame.f_back, depth + 1
    return None if frame is None else caller_loc(depth + 1)


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning name the user's line, not cubepy's."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and in_cubepy(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level
