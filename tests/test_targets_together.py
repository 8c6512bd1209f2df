"""Every target present, used in one process in either order.

A process that asked for a WebGPU adapter first (which loads Mesa's lavapipe and the system's
libLLVM) used to die with SIGSEGV when it then imported Triton, whose native library carries
its own LLVM. Each order runs in a fresh interpreter, since the crash takes the process down.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cubepy as cube

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import cubepy as cube

    @cube.kernel
    def twice(x, out, n, BLOCK: cube.Comptime[int]):
        offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
        cube.store(out + offs, cube.load(x + offs, mask=offs < n) * 2.0, mask=offs < n)

    x = np.arange(100, dtype=np.float32)
    for target in sys.argv[1:]:
        out = np.zeros_like(x)
        assert "twice" in twice.source(target, x, out, 100, BLOCK=64)
        # a real GPU refuses NumPy arrays on the triton target: there the source is enough
        if not (target == "triton" and cube.cuda_available()):
            twice[(2,)](x, out, 100, BLOCK=64, target=target)
            np.testing.assert_array_equal(out, 2 * x)
        print(target, "ok")
""")


@pytest.mark.parametrize("order", [("wgsl", "triton"), ("triton", "wgsl")],
                         ids=lambda order: " then ".join(order))
def test_wgsl_and_triton_in_one_process(order, tmp_path):
    missing = {"wgsl", "triton"} - set(cube.available_targets())
    if missing:
        pytest.skip(f"target {', '.join(sorted(missing))} is not present on this machine")
    env = dict(os.environ, CUBEPY_CACHE_DIR=str(tmp_path))
    env.setdefault("XDG_RUNTIME_DIR", str(tmp_path))
    script = tmp_path / "both_targets.py"  # a file: kernels are read back with inspect
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), *order], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert done.stdout.split() == [order[0], "ok", order[1], "ok"]
