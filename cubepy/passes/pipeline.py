"""The order of the passes: this list is what happens between the frontend and a backend.

1. ``inline``: @cube.func calls are replaced by their bodies.
2. ``fold``: constants are folded; branches on constants are resolved.
   (Comptime ``if`` and ``static_range`` were already folded while building: the frontend
   keeps comptime values as Python values and never builds a dead branch.)
3. ``cse``: pure ops computing the same thing are merged.
4. ``dce``: what nothing uses is removed.

Shape and type inference happens as each op is built (``cubepy/ir/rules.py``), so errors
point at the user's line; ``verify`` re-checks every op against the same rules.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import config
from ..ir import Function, verify
from .cse import cse
from .dce import dce
from .fold import fold
from .inline import inline

PASSES: list[Callable[[Function], None]] = [inline, fold, cse, dce]


def optimize(fn: Function) -> Function:
    """Run every pass in order on ``fn`` (in place) and verify the result.

    Example:
        >>> optimize(build_kernel(pyfn, params))  # doctest: +SKIP
    """
    check_each = config.settings().verify
    for transform in PASSES:
        transform(fn)
        if check_each:
            verify(fn)
    verify(fn)
    return fn
