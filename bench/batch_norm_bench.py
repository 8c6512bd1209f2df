"""Batch normalization's training step on the cpu target or a CUDA GPU: forward and backward
of ``burn.batch_norm`` (two reductions and a normalizing kernel; one fused backward pass)
beside the same formulas composed of tensor ops (what ``BatchNorm`` ran before) and torch's
``F.batch_norm`` with its autograd on the same device, in the same process; and a copy of x
as the bandwidth peer (the forward reads x three times and writes once, the backward reads
x and dy twice and writes dx).

Each row: (N, C, H, W) float32 or bfloat16 input with weight and bias; milliseconds per
forward + backward (medians of 7 samples after two warm-up calls, which compile), the
composed version's and torch's time over the fused one's, and the largest difference of dx
from torch's, relative to its largest entry.

    make .venv/.stamp-dev && .venv/bin/python bench/batch_norm_bench.py [--backend cuda]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from norm_backward_cpu_bench import milliseconds  # noqa: E402
from scatter_bench import synchronized  # noqa: E402

import burn  # noqa: E402

SHAPES = [(32, 64, 56, 56), (128, 256, 14, 14), (256, 512, 7, 7), (4096, 1024, 1, 1)]
CPU_SHAPES = [(16, 64, 32, 32), (64, 256, 8, 8), (128, 512, 4, 4), (128, 64, 7, 7),
              (2048, 512, 1, 1)]
EPS = 1e-5


def composed(x: burn.Tensor, w: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    """The formulas in tensor ops, as ``BatchNorm.forward`` composed them before."""
    axes = (0, *range(2, x.ndim))
    per_channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    values = x.to(burn.float32) if x.dtype.bits < 32 else x
    centered = values - values.mean(axis=axes, keepdim=True)
    var = (centered * centered).mean(axis=axes, keepdim=True)
    out = centered * (var + EPS).rsqrt() * w.reshape(per_channel) + b.reshape(per_channel)
    return out.to(x.dtype)


def fused(x: burn.Tensor, w: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    return burn.batch_norm(x, weight=w, bias=b, training=True, eps=EPS)


def burn_step(fn, ad: burn.Backend, x: np.ndarray, w: np.ndarray, dy: np.ndarray, dtype: str):
    xt = burn.from_numpy(x, backend=ad).to(dtype)
    wt = burn.from_numpy(w, backend=ad).require_grad()
    bt = burn.zeros(w.shape, backend=ad).require_grad()
    dyt = burn.from_numpy(dy, backend=ad).to(dtype)

    def step():
        leaf = xt.require_grad()
        grads = fn(leaf, wt, bt).backward(dyt)
        return grads[leaf]

    return step


def torch_step(device: str, x: np.ndarray, w: np.ndarray, dy: np.ndarray, dtype: str):
    torch_dtype = getattr(torch, dtype)
    xt = torch.from_numpy(x).to(device, torch_dtype).requires_grad_()
    wt = torch.from_numpy(w).to(device).requires_grad_()
    bt = torch.zeros(w.shape, device=device, requires_grad=True)
    dyt = torch.from_numpy(dy).to(device, torch_dtype)

    def step():
        xt.grad = None
        out = torch.nn.functional.batch_norm(xt, None, None, wt.to(torch_dtype),
                                             bt.to(torch_dtype), training=True, eps=EPS)
        out.backward(dyt)
        return xt.grad

    return step


def row(ad: burn.Backend, device: str, shape: tuple[int, ...], dtype: str) -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    w = rng.uniform(0.5, 1.5, shape[1]).astype(np.float32)
    cuda = device == "cuda"
    ours = synchronized(burn_step(fused, ad, x, w, dy, dtype), cuda)
    before = synchronized(burn_step(composed, ad, x, w, dy, dtype), cuda)
    theirs = synchronized(torch_step(device, x, w, dy, dtype), cuda)
    xt = torch.from_numpy(x).to(device)
    copy = synchronized(lambda: xt.clone(), cuda)
    fused_ms, composed_ms = milliseconds(ours), milliseconds(before)
    torch_ms, copy_ms = milliseconds(theirs), milliseconds(copy)
    want = theirs().float().cpu().numpy()
    got = ours().to(burn.float32).numpy()
    error = float(np.abs(got - want).max() / np.abs(want).max())
    return {"shape": list(shape), "dtype": dtype, "fused_ms": round(fused_ms, 3),
            "composed_ms": round(composed_ms, 3), "torch_ms": round(torch_ms, 3),
            "copy_ms": round(copy_ms, 3),
            "composed_over_fused": round(composed_ms / fused_ms, 3),
            "torch_over_fused": round(torch_ms / fused_ms, 3),
            "dx_vs_torch": float(f"{error:.3g}")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    ad = burn.Autodiff(burn.backend_for(args.backend))
    device = "cuda" if args.backend == "cuda" else "cpu"
    print(json.dumps({"backend": args.backend, "torch": torch.__version__,
                      "threads": torch.get_num_threads()}), flush=True)
    for shape in SHAPES if device == "cuda" else CPU_SHAPES:
        for dtype in ("float32", "bfloat16"):
            print(json.dumps(row(ad, device, shape, dtype)), flush=True)


if __name__ == "__main__":
    main()
