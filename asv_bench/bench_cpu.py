"""The CPU target's headline figures, each next to its NumPy peer in the same asv run."""

from __future__ import annotations

import numpy as np

from . import cpu_kernels as k
from . import startup

IMPLS = ["cubepy", "numpy"]


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


class Gelu:
    """Fused GELU, x*0.5*(1+erf(x/sqrt 2)), on 16M float32: one cubepy kernel vs the same
    formula in NumPy + scipy.special.erf (which allocates its temporaries)."""

    params = IMPLS
    param_names = ["impl"]
    timeout = 300

    def setup(self, impl: str) -> None:
        self.x = _rng().standard_normal(1 << 24, dtype=np.float32)
        self.out = np.empty_like(self.x)
        self.time_gelu(impl)  # compiles (or loads) the kernel outside the timing

    def time_gelu(self, impl: str) -> None:
        if impl == "cubepy":
            k.gelu(self.x, self.out)
        else:
            k.gelu_numpy(self.x)


class Softmax:
    """Row softmax of a 4096x1024 float32 matrix: one cube per row vs NumPy's
    max/exp/sum/divide along axis 1."""

    params = IMPLS
    param_names = ["impl"]
    timeout = 300

    def setup(self, impl: str) -> None:
        self.x = _rng().standard_normal((4096, 1024), dtype=np.float32)
        self.out = np.empty_like(self.x)
        self.time_softmax(impl)

    def time_softmax(self, impl: str) -> None:
        if impl == "cubepy":
            k.softmax(self.x, self.out)
        else:
            k.softmax_numpy(self.x)


class Matmul:
    """1024x1024x1024 float32 matmul: the cubepy tiled kernel (cube.dot on
    BLOCK_M x BLOCK_N x BLOCK_K tiles, see cpu_kernels.MATMUL_BLOCKS) vs numpy.matmul (BLAS)."""

    params = IMPLS
    param_names = ["impl"]
    timeout = 300

    def setup(self, impl: str) -> None:
        rng = _rng()
        self.a = rng.standard_normal((1024, 1024), dtype=np.float32)
        self.b = rng.standard_normal((1024, 1024), dtype=np.float32)
        self.out = np.empty((1024, 1024), np.float32)
        self.time_matmul(impl)

    def time_matmul(self, impl: str) -> None:
        if impl == "cubepy":
            k.matmul(self.a, self.b, self.out)
        else:
            np.matmul(self.a, self.b, out=self.out)


class CompileTime:
    """Seconds a new kernel's first call costs beyond a warm call (row softmax), in a fresh
    process with an empty disk cache, after another kernel has started the toolchain."""

    timeout = 300
    repeat = 3

    def track_compile_new_kernel(self) -> float:
        return startup.compile_seconds()

    track_compile_new_kernel.unit = "seconds"


class FirstResult:
    """Wall seconds from spawning a fresh python to a printed 256x1000 row softmax, with
    cubepy's disk cache warm, vs a fresh python doing the same in NumPy."""

    params = IMPLS
    param_names = ["impl"]
    timeout = 300
    repeat = 3

    def track_first_result(self, impl: str) -> float:
        return startup.first_result_seconds(impl)

    track_first_result.unit = "seconds"
