"""``burn.Fusion(burn.Cuda())`` against the unfused ``burn.Cuda()``, torch eager and the copy
bandwidth, on chains of elementwise ops.

- ``gelu-tanh``: ``0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x**3)))`` written as
  nine tensor ops (as a user would write it), float32 and bfloat16, 2**26 elements: memory
  bound, so the floor is one read and one write (``x.clone()`` in torch, the copy peer).
- ``swiglu``: ``silu(a + bias) * (b + bias)``, silu written out, two 2**24-element inputs
  and a broadcast bias (the floor is 1.5 copies: two reads and a write).
- ``small``: the gelu-tanh chain on 4096 elements: bound by the host path, where a fused
  chain is one launch instead of nine.

Every fused result is first checked against the unfused one. CUDA events around batches of
calls (``burn_gpu_bench.gpu_seconds``), medians of five turns.

    source .whl/gpu-env.sh && python3 bench/fusion_gpu_bench.py
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import from_torch, gpu_seconds  # noqa: E402

import burn  # noqa: E402

CUDA = burn.Cuda()
FUSION = burn.Fusion(CUDA)


def gelu_tanh(x):
    return 0.5 * x * (1 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())


def swiglu(a, b, bias):
    u = a + bias
    return u / (1 + (-u).exp()) * (b + bias)


def timed(fn: Callable[[], object]) -> float:
    return statistics.median(gpu_seconds(fn) for _ in range(5))


def compare(name: str, make: Callable, inputs: list[torch.Tensor]) -> None:
    plain = [from_torch(t, CUDA) for t in inputs]
    fused = [from_torch(t, FUSION) for t in inputs]
    # both against the float64 result: fused kernels may contract a multiply and an add into
    # one rounding (Triton with TRITON_DEFAULT_FP_FUSION=1), so bf16 bits can differ
    exact = make(*(t.double() for t in inputs)).cpu().numpy()
    errors = [float(np.abs(make(*xs).numpy().astype(np.float64) - exact).max())
              for xs in (plain, fused)]
    print(f"{name}: max error vs float64: unfused {errors[0]:.3g}, fused {errors[1]:.3g}")
    assert errors[1] <= 2 * errors[0] + 1e-6, errors
    before = FUSION.stats.launches, FUSION.stats.ops
    FUSION.realize(make(*fused))
    launches, ops = FUSION.stats.launches - before[0], FUSION.stats.ops - before[1]

    def fused_call():
        FUSION.realize(make(*fused))

    seconds = {
        "burn": timed(lambda: make(*plain)),
        "burn+fusion": timed(fused_call),
        "torch": timed(lambda: make(*inputs)),
        "copy": timed(lambda: inputs[0].clone()),
    }
    line = ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in seconds.items())
    print(f"{name}: {ops} ops in {launches} kernel(s); {line}; unfused/fused "
          f"{seconds['burn'] / seconds['burn+fusion']:.2f}x, torch/fused "
          f"{seconds['torch'] / seconds['burn+fusion']:.2f}x, copy/fused "
          f"{seconds['copy'] / seconds['burn+fusion']:.2f}x")


def main() -> None:
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    torch.manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(1 << 26, device="cuda", dtype=dtype)
        compare(f"gelu-tanh 2^26 {dtype}", gelu_tanh, [x])
    a, b = (torch.randn(1 << 14, 1 << 10, device="cuda") for _ in range(2))
    compare("swiglu 16384x1024 float32", swiglu, [a, b, torch.randn(1 << 10, device="cuda")])
    compare("gelu-tanh 4096 float32 (host bound)", gelu_tanh,
            [torch.randn(4096, device="cuda")])
    print(f"fusion stats: {FUSION.stats}")


if __name__ == "__main__":
    main()
