"""Activation checkpointing on the H200: peak memory and step time of a residual MLP,
burn with and without ``burn.checkpoint`` per block, beside torch with and without
``torch.utils.checkpoint``.

The network: ``depth`` blocks ``h + gelu(layer_norm(h @ W1 + b1)) @ W2`` (weights shared by
the blocks, so the activations dominate), bf16, then the mean of squares. A step is the
forward and the backward pass for the weights' gradients. Columns: the peak of the CUDA
memory allocated during a step above what was allocated before it (burn's Cuda backend
allocates through torch, so one counter measures both), the step's wall time (CUDA
events around batches of steps, medians) and its GPU time (one step queued behind a GPU
sleep: what the kernels take when the host is not the bound).

    source .whl/gpu-env.sh && python3 bench/checkpoint_gpu_bench.py [--depth 12]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.utils.checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import (  # noqa: E402
    from_torch,
    gpu_only_seconds,
    gpu_seconds,
    largest_relative_difference,
)

import burn  # noqa: E402


def peak_mib(step: Callable[[], object]) -> float:
    """MiB allocated at the peak of one step beyond what was allocated before it."""
    step()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2**20


def torch_step(x: torch.Tensor, params: list[torch.Tensor], depth: int, checkpointed: bool):
    w1, b1, w2 = params
    f = torch.nn.functional

    def block(h: torch.Tensor) -> torch.Tensor:
        return h + f.gelu(f.layer_norm(h @ w1 + b1, (w1.shape[1],))) @ w2

    def step() -> list[torch.Tensor]:
        h = x
        for _ in range(depth):
            h = torch.utils.checkpoint.checkpoint(block, h, use_reentrant=False) \
                if checkpointed else block(h)
        return torch.autograd.grad((h.float() ** 2).mean(), params)

    return step


def burn_step(x: torch.Tensor, params: list[torch.Tensor], depth: int, checkpointed: bool):
    cuda = burn.Cuda()
    ad = burn.Autodiff(cuda)
    bx = from_torch(x, cuda).to(ad)
    weights = [from_torch(p.detach(), cuda).to(ad).require_grad() for p in params]
    w1, b1, w2 = weights

    def block(h: burn.Tensor) -> burn.Tensor:
        return h + burn.gelu(burn.layer_norm(h @ w1 + b1, w1.shape[1])) @ w2

    def step() -> list[burn.Tensor]:
        h = bx
        for _ in range(depth):
            h = burn.checkpoint(block, h) if checkpointed else block(h)
        grads = (h.to(burn.float32) ** 2).mean().backward()
        return [grads[w] for w in weights]

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(args.batch, args.width, device="cuda", dtype=torch.bfloat16)
    params = [(torch.randn(*s, device="cuda") / s[0] ** 0.5).to(torch.bfloat16).requires_grad_()
              for s in ((args.width, args.width), (args.width,), (args.width, args.width))]
    rows = []
    reference = torch_step(x, params, args.depth, False)()
    for framework, make in (("torch", torch_step), ("burn", burn_step)):
        for checkpointed in (False, True):
            step = make(x, params, args.depth, checkpointed)
            row = {"framework": framework, "checkpointed": checkpointed,
                   "shape": [args.batch, args.width, args.depth],
                   # W1's and W2's, with bf16 activations through every block: within 5 %
                   "grad_error": largest_relative_difference(
                       step()[::2], reference[::2], 0.05, f"{framework} gradients"),
                   "peak_mib": round(peak_mib(step), 1),
                   "step_ms": round(gpu_seconds(step, samples=5) * 1e3, 3),
                   # one step behind the sleep: burn's ~500 launches fit CUDA's queue
                   "gpu_ms": round(gpu_only_seconds(step, calls=1) * 1e3, 3)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
