"""GPU time of fused kernels against the unfused ones they replace (torch.profiler, kernel
self time, so host time does not count): ``gelu(a + bias)`` over 8192 x 4096 bf16 with the
bias broadcast along rows, the same with a full-size second operand (every leaf in order),
and the unfused ``add`` and ``gelu`` kernels.

    source .whl/gpu-env.sh && python3 bench/fusion_kernel_probe.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import from_torch, kernel_events  # noqa: E402

import burn  # noqa: E402


def kernel_us(label: str, fn, calls: int = 10) -> None:
    events = kernel_events(fn, calls, warmup=3)
    parts = ", ".join(f"{e.key[:28]} {e.self_device_time_total / calls:.1f} us"
                      for e in sorted(events, key=lambda e: -e.self_device_time_total))
    total = sum(e.self_device_time_total for e in events) / calls
    print(f"{label}: {total:.1f} us of kernels per call ({parts})")


def probe(name: str, fusion: burn.Fusion, a: burn.Tensor, full: burn.Tensor,
          bias: burn.Tensor) -> None:
    kernel_us(f"{name} gelu(a + bias)", lambda: fusion.realize(burn.gelu(a + bias)))
    kernel_us(f"{name} gelu(a + full)", lambda: fusion.realize(burn.gelu(a + full)))
    kernel_us(f"{name} (a + full) * 2 + 1", lambda: fusion.realize((a + full) * 2 + 1))


def main() -> None:
    cuda = burn.Cuda()
    fusion = burn.Fusion(cuda)
    a = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    full = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    for name, backend in (("unfused", cuda), ("fused", fusion)):
        probe(name, fusion, *(from_torch(t, backend) for t in (a, full, bias)))
    kernel_us("torch gelu(a + bias)", lambda: torch.nn.functional.gelu(a + bias))
    kernel_us("torch copy", lambda: a.clone())


if __name__ == "__main__":
    main()
