"""Where a training step's GPU time goes: torch.profiler around three forward+backward passes
of the large MLP of ``autodiff_gpu_bench.py`` (bf16), burn's (plain and fused) and torch's,
each kernel's total CUDA time, largest first; and the host time of a step (ten steps
queued, about 500 launches: under the depth of CUDA's launch queue, so the host never waits).

    source .whl/gpu-env.sh && python3 bench/autodiff_profile.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autodiff_gpu_bench import ADS, FUSION, mlp, mlp_case  # noqa: E402
from burn_gpu_bench import from_torch, host_us  # noqa: E402

import burn  # noqa: E402


def show(name: str, fn) -> None:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    total = sum(e.self_device_time_total for e in events)
    print(f"{name}: {total / 3 / 1e3:.3f} ms of kernels per step")
    for e in sorted(events, key=lambda e: -e.self_device_time_total)[:14]:
        print(f"  {e.self_device_time_total / 3 / 1e3:8.3f} ms  x{e.count // 3:<3d} {e.key[:90]}")


def main() -> None:
    torch.manual_seed(0)
    params32, x32, onehot32 = mlp_case(8192, 1024, 4096, 1024)
    params = [p.bfloat16() for p in params32]
    x, onehot = x32.bfloat16(), onehot32.bfloat16()
    tparams = [p.clone().requires_grad_() for p in params]
    for label, ad in ADS.items():
        leaves = [from_torch(p, burn.Cuda()).to(ad).require_grad() for p in params]
        xb, ob = from_torch(x, burn.Cuda()).to(ad), from_torch(onehot, burn.Cuda()).to(ad)

        def step(leaves=leaves, xb=xb, ob=ob):
            grads = mlp(burn, leaves, xb, ob).backward()
            FUSION.realize(*(grads[p] for p in leaves))

        show(label, step)
        print(f"{label}: host {host_us(step, calls=10):.0f} us per step")

    def torch_step():
        torch.autograd.grad(mlp(torch, tparams, x, onehot), tparams)

    show("torch", torch_step)
    print(f"torch: host {host_us(torch_step, calls=10):.0f} us per step")

if __name__ == "__main__":
    main()
