"""cpu:debug's errors in the user's terms: an index out of an array's bounds, raised by NumPy
inside generated code, becomes a LaunchError at the kernel's line that made the access, naming
the array. (Compiled targets do not check: a load or store without a mask past the end of an
array reads or writes memory that is not the array's, as on a GPU.)"""

from __future__ import annotations

import linecache
import re
from pathlib import Path

from ...errors import LaunchError
from ...ir import Loc

_SOURCE_COMMENT = re.compile(r"^\s*# line (\d+)(?: of (.+))?$")
_ARRAY_PARAM = re.compile(r"\ba_(\w+?)_\d+\b")  # how generated code names an array argument


def out_of_bounds(err: IndexError, generated: Path, kernel_name: str,
                  kernel_file: str) -> LaunchError | None:
    """The LaunchError for ``err``, raised while running the generated module ``generated``;
    None when no frame of that module is in its traceback (not the kernel's own access)."""
    line_no = None
    tb = err.__traceback__
    while tb is not None:  # the innermost frame of the generated module made the access
        if Path(tb.tb_frame.f_code.co_filename) == generated:
            line_no = tb.tb_lineno
        tb = tb.tb_next
    if line_no is None:
        return None
    lines = linecache.getlines(str(generated))
    arrays = sorted(set(_ARRAY_PARAM.findall(lines[line_no - 1]))) if line_no <= len(lines) \
        else []
    what = f"array '{arrays[0]}'" if len(arrays) == 1 else "an array"
    return LaunchError(f"kernel '{kernel_name}' accessed {what} out of its bounds ({err})",
                       "mask the access: cube.load(p + offs, mask=offs < n, other=0) and "
                       "cube.store(p + offs, v, mask=offs < n)",
                       _user_loc(lines[:line_no], kernel_file))


def _user_loc(lines: list[str], kernel_file: str) -> Loc | None:
    """The user's line the last source comment in ``lines`` names, the whole statement."""
    for text in reversed(lines):
        match = _SOURCE_COMMENT.match(text)
        if match:
            file = match.group(2) or kernel_file
            line = int(match.group(1))
            source = linecache.getline(file, line).rstrip()
            col = len(source) - len(source.lstrip())
            return Loc(file, line, col, len(source) if source else None)
    return None
