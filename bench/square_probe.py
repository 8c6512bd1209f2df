"""NaN and special values through float16/bfloat16 elementwise ops on the GPU backends
(cuda, and wgpu on NVIDIA's Vulkan driver) against the NumPy reference: run 191 found
``x ** 2`` of a float16 NaN coming out as -0.0 on NVIDIA's Vulkan driver.

    source .whl/gpu-env.sh && CUBEPY_WGPU_ADAPTER=NVIDIA python3 bench/square_probe.py
"""

from __future__ import annotations

import numpy as np

import burn

SPECIAL = [np.inf, -np.inf, np.nan, -0.0, 1e-30, -3e4, 65519.0, 65520.0, 6.0e-8, 1.0e-5]


def mismatches(got: burn.Tensor, want: burn.Tensor) -> list[tuple[float, float]]:
    g, w = (t.numpy().astype(np.float64) for t in (got, want))
    same = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= 1e-2 * np.abs(w))
    return list(zip(g[~same].tolist(), w[~same].tolist()))


def main() -> None:
    ref = burn.NumPy()
    rng = np.random.default_rng(0)
    for name, backend in (("cuda", burn.Cuda()), ("wgpu", burn.Wgpu())):
        for dtype in ("float16", "bfloat16"):
            if dtype not in backend.dtypes:
                continue
            x = np.concatenate([SPECIAL, rng.uniform(-4, 4, 30)]).astype(np.float32)
            ops = {"x ** 2": lambda t: t ** 2, "x * x": lambda t: t * t,
                   "x + 1": lambda t: t + 1, "-x": lambda t: -t, "exp": lambda t: t.exp(),
                   "x ** 3": lambda t: t ** 3}
            for label, op in ops.items():
                got, want = (op(burn.from_numpy(x, backend=b).to(getattr(burn, dtype)))
                             for b in (backend, ref))
                print(name, dtype, label, "mismatches:", mismatches(got, want), flush=True)


if __name__ == "__main__":
    main()
