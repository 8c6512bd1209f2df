"""The backward pass of layer_norm and rms_norm on the H200: burn's fused ``norm_backward``
against the same gradients composed of tensor ops (burn's rule before it) and torch's
backward of ``F.layer_norm`` / ``F.rms_norm``, with the copy of ``x`` as the bandwidth peer.

Kernel rows: (rows, cols) inputs of bf16 or float32, the gradients of x, weight and bias for a
random output gradient, each checked against float64 first (torch's float64 backward of the
same rounded inputs), torch's own error beside them. Columns: GPU time (calls queued
behind a GPU sleep), the effective bandwidth as a fraction of the copy's (bytes of x, the
output gradient and dx, the least any backward moves, over the time), the peak of the memory
allocated during one call beyond what was allocated before it, and the host time per call.

Step rows: a pre-norm ``TransformerEncoderLayer`` training step (as
``transformer_gpu_bench.py``: forward, ``mean(y ** 2)``, backward, AdamW) with the fused
rule and, in the same process, with ``norm_backward`` replaced by the composed ops, beside
torch's step.

    source .whl/gpu-env.sh && python3 bench/norm_backward_gpu_bench.py [--skip-steps]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import (  # noqa: E402
    from_torch,
    gpu_only_seconds,
    host_us,
    largest_relative_difference,
)
from checkpoint_gpu_bench import peak_mib  # noqa: E402
from transformer_gpu_bench import burn_step, kernel_ms, step_seconds, torch_step  # noqa: E402

import burn  # noqa: E402
from burn.autodiff.reductions import _composed_norm_gradients  # noqa: E402
from burn.backend.cube.reduce import CubeReduce  # noqa: E402

SHAPES = [(8192, 1024), (16384, 768), (4096, 4096), (2048, 8192), (512, 32768)]
EPS = 1e-5


def composed_norm_backward(self, x, k, weight, d_out, eps, rms, params, compute):
    """``norm_backward`` as burn's rule computed it before the fused kernel: tensor ops in
    ``compute``, dx cast to x's dtype (as the autodiff graph cast it)."""
    wrap = (lambda v: None if v is None else burn.Tensor(v, self))
    dx, dw, db = _composed_norm_gradients(wrap(x), k, wrap(weight), wrap(d_out), eps, rms,
                                          params, compute)
    return dx.to(x.dtype).prim, None if dw is None else dw.prim, None if db is None else db.prim


def torch_backward(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, g: torch.Tensor,
                   rms: bool, dtype: torch.dtype | None = None) -> Callable[[], tuple]:
    """torch's backward of one normalization (in ``dtype``, else the inputs'), its graph
    built once and kept."""
    x, w, b = (t.detach().to(dtype or t.dtype).requires_grad_() for t in (x, w, b))
    g = g.to(dtype or g.dtype)
    f = torch.nn.functional
    y = f.rms_norm(x, (x.shape[-1],), w, EPS) if rms else \
        f.layer_norm(x, (x.shape[-1],), w, b, EPS)
    inputs = (x, w) if rms else (x, w, b)
    return lambda: torch.autograd.grad(y, inputs, g, retain_graph=True)


def kernel_row(rows: int, cols: int, dtype: torch.dtype, rms: bool) -> dict:
    cuda = burn.Cuda()
    x = torch.randn(rows, cols, device="cuda", dtype=dtype) * 2 + 0.5
    w = torch.rand(cols, device="cuda", dtype=dtype) + 0.5
    b = torch.randn(cols, device="cuda", dtype=dtype)
    g = torch.randn(rows, cols, device="cuda", dtype=dtype)
    tx, tw, tg = (from_torch(t, cuda) for t in (x, w, g))
    compute = burn.float32 if dtype != torch.float64 else burn.float64

    def fused():
        return cuda.norm_backward(tx.prim, 1, tw.prim, tg.prim, EPS, rms, True, compute)

    def composed():
        return composed_norm_backward(cuda, tx.prim, 1, tw.prim, tg.prim, EPS, rms, True,
                                      compute)

    theirs = torch_backward(x, w, b, g, rms)
    exact = list(torch_backward(x, w, b, g, rms, torch.float64)())  # of the rounded inputs
    limit = 2e-2 if dtype == torch.bfloat16 else 1e-4
    results = {"fused": [burn.Tensor(v, cuda) for v in fused()[:len(exact)]],
               "composed": [burn.Tensor(v, cuda) for v in composed()[:len(exact)]],
               "torch": list(theirs())}
    errors = {name: largest_relative_difference(  # torch's own error is reported, not judged
        got, exact, math.inf if name == "torch" else limit, f"{name} {rows}x{cols}")
        for name, got in results.items()}
    times = {name: gpu_only_seconds(fn) for name, fn in
             (("fused", fused), ("composed", composed), ("torch", theirs),
              ("copy", lambda: x.clone()))}
    moved = 3 * x.numel() * x.element_size()  # x, the output gradient, dx
    copy_bandwidth = 2 * x.numel() * x.element_size() / times["copy"]
    return {
        "op": "rms_norm" if rms else "layer_norm", "shape": [rows, cols],
        "dtype": str(dtype).removeprefix("torch."),
        "error_vs_float64": errors,
        "gpu_us": {k: round(v * 1e6, 1) for k, v in times.items()},
        "torch_over_fused": round(times["torch"] / times["fused"], 3),
        "composed_over_fused": round(times["composed"] / times["fused"], 3),
        "fraction_of_copy_bandwidth": {
            k: round(moved / times[k] / copy_bandwidth, 3) for k in ("fused", "torch")},
        "peak_mib": {k: round(peak_mib(fn), 1) for k, fn in
                     (("fused", fused), ("composed", composed), ("torch", theirs))},
        "x_mib": round(x.numel() * x.element_size() / 2**20, 1),
        "host_us": {k: round(host_us(fn, calls=100), 1) for k, fn in
                    (("fused", fused), ("composed", composed), ("torch", theirs))},
    }


def step_rows(case: tuple[int, int, int, int]) -> list[dict]:
    """The transformer layer's step with the fused rule, then with the composed ops."""
    rows = []
    theirs = torch_step(*case)
    their_s = step_seconds(theirs)
    their_kernel_ms, their_kernels = kernel_ms(theirs)
    fused_method = CubeReduce.norm_backward
    for name in ("fused", "composed"):
        CubeReduce.norm_backward = fused_method if name == "fused" else composed_norm_backward
        try:
            ours = burn_step(*case)
            ours()
            our_s = step_seconds(ours)
            our_kernel_ms, our_kernels = kernel_ms(ours)
        finally:
            CubeReduce.norm_backward = fused_method
        b, s, d, heads = case
        rows.append({"step": f"TransformerEncoderLayer B={b} S={s} d={d} heads={heads} bf16",
                     "norm_backward": name,
                     "step_ms": [round(our_s * 1e3, 2), round(their_s * 1e3, 2)],
                     "ratio": round(their_s / our_s, 3),
                     "gpu_kernel_ms": [round(our_kernel_ms, 3), round(their_kernel_ms, 3)],
                     "kernels_per_step": [round(our_kernels), round(their_kernels)]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-steps", action="store_true", help="kernel rows only")
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; [burn, torch] pairs; "
          f"ratios above 1: burn's fused kernel is faster")
    for dtype in (torch.bfloat16, torch.float32):
        for rows, cols in SHAPES:
            for rms in (False, True):
                print(json.dumps(kernel_row(rows, cols, dtype, rms)), flush=True)
    if not args.skip_steps:
        for case in ((16, 512, 512, 8), (64, 128, 256, 4)):
            for row in step_rows(case):
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
