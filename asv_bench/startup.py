"""Compile-time and start-up measurements, each taken in a fresh Python process.

A fresh process is the only honest way to measure them: an in-process kernel cache, a warm
LLVM or an imported module would otherwise hide the cost a user pays. The parent sets
``CUBEPY_CACHE_DIR`` (and Numba's and Triton's cache folders) to a folder it controls, so the
disk cache is exactly as empty or as warm as the measurement says.

Example:
    >>> from asv_bench import startup
    >>> seconds = startup.compile_seconds()          # a new kernel's first call, cold cache
    >>> wall = startup.first_result_seconds("cubepy")  # needs a warm cache folder to mean much

Run as ``python -m asv_bench.startup MODE`` it is the child side of those functions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
ROWS, COLS = 256, 1000  # small: the figures are about compiling and starting, not computing


def _child_env(cache_dir: str) -> dict[str, str]:
    env = dict(os.environ)
    env["CUBEPY_CACHE_DIR"] = cache_dir
    env["NUMBA_CACHE_DIR"] = os.path.join(cache_dir, "numba")
    env["TRITON_CACHE_DIR"] = os.path.join(cache_dir, "triton")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def _run_child(mode: str, cache_dir: str) -> tuple[float, str]:
    """Runs the child; returns (wall seconds from spawn to exit, its last stdout line)."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "asv_bench.startup", mode],
        env=_child_env(cache_dir), cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"child {mode!r} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return wall, proc.stdout.strip().splitlines()[-1]


def compile_details() -> dict[str, float]:
    """Timings of one child with an empty cache: see ``_child_compile`` for the keys."""
    with tempfile.TemporaryDirectory(prefix="cubepy-cold-") as cache_dir:
        _, line = _run_child("compile", cache_dir)
    return json.loads(line)


def compile_seconds() -> float:
    """Seconds a new kernel's first call costs beyond a warm call, with an empty disk cache.

    Another kernel is compiled first in the same process, so one-time start-up of the
    toolchain (Numba's LLVM) is not counted; ``compile_details()["first_in_process"]`` has it.
    """
    return compile_details()["compile"]


def first_result_seconds(impl: str, cache_dir: str | None = None) -> float:
    """Wall seconds for a fresh ``python`` to import and print a row softmax.

    ``impl`` is ``"cubepy"`` (the kernel, its disk cache warmed first by an untimed child
    unless ``cache_dir`` is given already warm) or ``"numpy"`` (the peer).
    """
    if cache_dir is not None:
        return _run_child(f"first-result-{impl}", cache_dir)[0]
    with tempfile.TemporaryDirectory(prefix="cubepy-warm-") as tmp:
        _run_child(f"first-result-{impl}", tmp)  # fills the disk cache
        return _run_child(f"first-result-{impl}", tmp)[0]


def _input():
    import numpy as np

    return np.random.default_rng(0).standard_normal((ROWS, COLS), dtype=np.float32)


def _child_compile() -> None:
    import numpy as np

    from asv_bench import cpu_kernels as k

    start = time.perf_counter()
    k.gelu(np.ones(8192, np.float32))  # pays the toolchain's one-time start-up
    first_in_process = time.perf_counter() - start
    x = _input()
    start = time.perf_counter()
    k.softmax(x)
    first = time.perf_counter() - start
    start = time.perf_counter()
    k.softmax(x)
    warm = time.perf_counter() - start
    print(json.dumps({"first_in_process": first_in_process, "first": first, "warm": warm,
                      "compile": max(first - warm, 0.0)}))


def _child_first_result(impl: str) -> None:
    x = _input()
    if impl == "cubepy":
        from asv_bench import cpu_kernels as k

        y = k.softmax(x)
    else:
        import numpy as np

        e = np.exp(x - x.max(axis=1, keepdims=True))
        y = e / e.sum(axis=1, keepdims=True)
    print(float(y.sum()))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "compile":
        _child_compile()
    elif mode.startswith("first-result-"):
        _child_first_result(mode.removeprefix("first-result-"))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
