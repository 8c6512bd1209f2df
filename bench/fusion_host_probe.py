"""Host cost of ``burn.Fusion`` on the GPU machine: microseconds per call of the pieces of a
fused launch (recording, tracing, launching) against unfused ops, on tiny tensors (the host
path alone), a cProfile of a fused step, and where bf16 chains differ from unfused ones.

    source .whl/gpu-env.sh && python3 bench/fusion_host_probe.py
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import burn  # noqa: E402
from burn.fusion import codegen  # noqa: E402


def per_call_us(fn, n: int = 2000) -> float:
    for _ in range(50):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    cuda = burn.Cuda()
    fusion = burn.Fusion(cuda)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((8, 32)).astype(np.float32)
    bs = rng.standard_normal(32).astype(np.float32)
    xc, bc = burn.from_numpy(xs, backend=cuda), burn.from_numpy(bs, backend=cuda)
    xf, bf = burn.from_numpy(xs, backend=fusion), burn.from_numpy(bs, backend=fusion)
    y = burn.gelu(xf + bf)
    traced = codegen.trace(y.prim.storage)
    rows = {
        "unfused x + b": lambda: xc + bc,
        "unfused gelu(x)": lambda: burn.gelu(xc),
        "unfused x * 2": lambda: xc * 2,
        "fusion: record x + b": lambda: xf + bf,
        "fusion: trace gelu(x + b)": lambda: codegen.trace(y.prim.storage),
        "fusion: launch gelu(x + b)": lambda: codegen.launch(cuda.ctx, y.prim.storage, traced),
        "fusion: record + realize gelu(x + b)": lambda: fusion.realize(burn.gelu(xf + bf)),
    }
    for label, fn in rows.items():
        print(f"{label}: {per_call_us(fn):.1f} us")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(2000):
        fusion.realize(burn.gelu(xf + bf))
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    import ml_dtypes

    x = rng.standard_normal(1 << 16).astype(ml_dtypes.bfloat16)
    parts = {"x*x": lambda t: t * t, "c*x": lambda t: 0.044715 * t,
             "c*(x*x)": lambda t: 0.044715 * (t * t), "x+c*x": lambda t: t + 0.044715 * t,
             "tanh(x)": lambda t: t.tanh(), "1+tanh(c*x)": lambda t: 1 + (0.79 * t).tanh()}
    parts["gelu-tanh"] = lambda t: 0.5 * t * (1 + (0.7978845608 * (t + 0.044715 * t * t * t)
                                                  ).tanh())
    parts["inner"] = lambda t: 0.7978845608 * (t + 0.044715 * t * t * t)
    parts["x*x*x"] = lambda t: t * t * t
    parts["0.5*x*y"] = lambda t: 0.5 * t * (1 + t.tanh())
    for label, fn in parts.items():
        want = fn(burn.from_numpy(x, backend=cuda)).numpy().astype(np.float32)
        got = fn(burn.from_numpy(x, backend=fusion)).numpy().astype(np.float32)
        print(f"bf16 {label}: {int(np.sum(want != got))} of {x.size} differ")
    lazy = parts["gelu-tanh"](burn.from_numpy(x, backend=fusion)).prim.storage
    print(codegen.kernel_source("probe", codegen.trace(lazy).key))


if __name__ == "__main__":
    main()
