"""burn's Tensor.sort on the Cpu or Wgpu backend, rows of 128 and 1024 float32 (2048 rows),
by the one-tile path (kernels.sort.tile_sort_kernel, rows of up to TILE_ROW) against the
ranking and merging kernels it replaced for such rows (TILE_ROW set to 0); wall clock of the
sort and the copy of its values to NumPy, five runs, medians.

    python3 bench/burn_sort_paths.py cpu|wgpu
"""

from __future__ import annotations

import sys
import time

import numpy as np

import burn
import kernels.sort as sort_kernels


def main(name: str) -> None:
    backend = {"cpu": burn.Cpu, "wgpu": burn.Wgpu}[name]()
    rng = np.random.default_rng(0)
    for cols in (128, 1024):
        x = rng.standard_normal((2048, cols)).astype(np.float32)
        t = burn.tensor(x, backend=backend)
        for path, limit in (("one tile", 1024), ("rank + merge", 0)):
            sort_kernels.TILE_ROW = limit
            values, _ = t.sort(1)
            assert np.array_equal(values.numpy(), np.sort(x, 1, kind="stable"))
            times = []
            for _ in range(5):
                start = time.perf_counter()
                values, _ = t.sort(1)
                values.numpy()
                times.append(time.perf_counter() - start)
            print(f"{name}, 2048 rows of {cols}: {path} {np.median(times) * 1e3:.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1])
