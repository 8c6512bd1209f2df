"""The LLVM optimization level cubepy's ``cpu`` kernels compile at, whatever ``NUMBA_OPT`` says.

Numba has one level per process (``NUMBA_OPT``, default 3), which its pass builders read each
time they run. cubepy compiles its kernels, and the helpers they call, at ``CUBEPY_CPU_OPT``
(default 2) by setting Numba's level for the length of each compile, under Numba's compiler
lock, so that no other thread's compile sees it and the user's own Numba code keeps its level.

Why 2: at level 3 LLVM grows the fixed-size loops of tile code several times over. A small 3-D
tile kernel took 21 s to compile at 3 and 5 s at 2, and none of the kernels measured ran
slower at 2 (BENCHMARKS.md, "Compiling cpu kernels at level 2").

One thing stays the process's: the code-generation level of Numba's target machine, which
Numba fixes when it first compiles anything. It changes instruction selection only, never what
code computes.

Example:
    >>> with compiling():            # doctest: +SKIP
    ...     grid_fn.compile(signature)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ... import config


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """Numba compiles at ``CUBEPY_CPU_OPT`` inside this block (and holds its compiler lock)."""
    from numba.core import config as numba_config
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        # Numba re-reads every NUMBA_* variable at the start of a compile when one has changed
        # since it last looked, which would put its own level back: have it look first
        numba_config.reload_config()
        saved = numba_config.OPT
        numba_config.OPT = type(saved)(config.settings().cpu_opt)  # Numba's int subclass
        try:
            yield
        finally:
            numba_config.OPT = saved
