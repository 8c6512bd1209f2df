"""``burn.scaled_dot_product_attention`` on the H200 against torch's (its flash kernel).

Per (B, H, S, D) case, bf16, with and without the causal mask:

- forward: ``burn.scaled_dot_product_attention`` on ``burn.Cuda`` against
  ``torch.nn.functional.scaled_dot_product_attention``, each result checked against torch's
  first (largest difference over torch's largest value);
- backward: ``kernels.attention.attention_backward`` (what burn's autodiff rule runs) against
  ``torch.autograd.grad`` of torch's forward, checked the same way.

The first burn call of a big case tunes its key (``kernels.attention``'s autotuner; the time
of that first call is printed). Two clocks, as in ``conv_gpu_bench.py``: "GPU" times the calls
queued behind a GPU sleep (the kernels alone), "wall" back-to-back calls (host time included
when the host is slower). TFLOP/s count the products: 4·B·H·S²·D forward, 10·B·H·S²·D
backward, halved when causal.

    source .whl/gpu-env.sh && python3 bench/attention_gpu_bench.py [--cases "4,32,1024,64;..."]
                                                                   [--profile]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: N812 - torch's own name for it

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import (  # noqa: E402
    from_torch,
    gpu_only_seconds,
    gpu_seconds,
    host_us,
    profile_host,
)

import burn  # noqa: E402
from kernels import attention as attention_kernels  # noqa: E402
from kernels import flash  # noqa: E402

CASES = [(4, 32, 1024, 64), (4, 32, 4096, 64), (4, 32, 1024, 128), (4, 32, 4096, 128),
         (16, 12, 512, 64), (8, 8, 256, 64)]


def as_torch(view: object) -> torch.Tensor:
    """A kernels ``View`` over CUDA storage as a torch tensor (no copy)."""
    return torch.as_strided(view.storage, view.shape, view.strides, view.offset)


def difference(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest difference over the largest magnitude of ``want``."""
    return float((got.float() - want.float()).abs().max() / want.float().abs().max())


def case_rows(backend: burn.Backend, b: int, h: int, s: int, d: int, causal: bool) -> dict:
    """Times, ratios and differences of one case (forward and backward)."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, g = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=gen)
                  for _ in range(4))
    bq, bk, bv, bg = (from_torch(t, backend) for t in (q, k, v, g))
    scale = 1 / math.sqrt(d)
    start = time.perf_counter()
    out = burn.scaled_dot_product_attention(bq, bk, bv, causal=causal)
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    row = {"case": f"{b}x{h}x{s}x{d}", "causal": causal, "first_call_s": round(first, 2),
           "fwd_diff": difference(as_torch(out.prim), want)}
    burn_fwd = lambda: burn.scaled_dot_product_attention(bq, bk, bv, causal=causal)  # noqa: E731
    torch_fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
    work = 4 * b * h * s * s * d / (2 if causal else 1)
    for clock, timer in (("gpu", gpu_only_seconds), ("wall", gpu_seconds)):
        ours, theirs = timer(burn_fwd), timer(torch_fwd)
        row[f"fwd_{clock}_us"] = (round(ours * 1e6, 1), round(theirs * 1e6, 1))
        row[f"fwd_{clock}_ratio"] = round(theirs / ours, 3)
    row["fwd_tflops"] = (round(work / row["fwd_gpu_us"][0] / 1e6, 1),
                         round(work / row["fwd_gpu_us"][1] / 1e6, 1))

    ctx = backend.ctx
    prim_out, lse = attention_kernels.attention(ctx, bq.prim, bk.prim, bv.prim, causal, scale)
    start = time.perf_counter()
    grads = attention_kernels.attention_backward(ctx, bq.prim, bk.prim, bv.prim, prim_out, lse,
                                                 bg.prim, causal, scale)
    torch.cuda.synchronize()
    row["bwd_first_call_s"] = round(time.perf_counter() - start, 2)
    tq, tk, tv = (t.detach().requires_grad_() for t in (q, k, v))
    t_out = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    want_grads = torch.autograd.grad(t_out, (tq, tk, tv), g, retain_graph=True)
    row["bwd_diff"] = max(difference(as_torch(grad), want)
                          for grad, want in zip(grads, want_grads))
    burn_bwd = lambda: attention_kernels.attention_backward(  # noqa: E731
        ctx, bq.prim, bk.prim, bv.prim, prim_out, lse, bg.prim, causal, scale)
    torch_bwd = lambda: torch.autograd.grad(t_out, (tq, tk, tv), g,  # noqa: E731
                                            retain_graph=True)
    ours, theirs = gpu_only_seconds(burn_bwd), gpu_only_seconds(torch_bwd)
    row["bwd_gpu_us"] = (round(ours * 1e6, 1), round(theirs * 1e6, 1))
    row["bwd_gpu_ratio"] = round(theirs / ours, 3)
    row["bwd_tflops"] = (round(2.5 * work / ours / 1e12, 1), round(2.5 * work / theirs / 1e12, 1))
    return row


def profile(b: int, h: int, s: int, d: int) -> None:
    """Host microseconds per call of each layer of a causal bf16 forward, then the
    functions with the most own time under ``burn.scaled_dot_product_attention``."""
    backend = burn.Cuda()
    q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
    bq = from_torch(q, backend)
    ctx, scale = backend.ctx, 1 / math.sqrt(d)
    sizes = flash.Sizes(b, h, s, s, d)
    heads = flash.Heads.contiguous(q)
    out, lse = torch.empty_like(q), torch.empty(b, h, s, device="cuda")
    layers = {
        "torch scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(
            q, q, q, is_causal=True),
        "burn.scaled_dot_product_attention": lambda: burn.scaled_dot_product_attention(
            bq, bq, bq, causal=True),
        "kernels.attention.attention": lambda: attention_kernels.attention(
            ctx, bq.prim, bq.prim, bq.prim, True, scale),
        "kernels.flash.launch_forward (one launch)": lambda: flash.launch_forward(
            heads, heads, heads, flash.Heads.contiguous(out), lse, sizes, True, scale, 64, 64,
            num_warps=4, num_stages=3),
        "ctx.new (the result)": lambda: ctx.new((b, s, h, d), bq.dtype),
    }
    for name, fn in layers.items():
        print(f"host {name}: {host_us(fn, warmup=3):8.1f} us per call", flush=True)
    profile_host(layers["burn.scaled_dot_product_attention"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help='"B,H,S,D;..." (default: the list in this file)')
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--profile", action="store_true",
                        help="host time per layer of the 8x8x256x64 forward, then exit")
    args = parser.parse_args()
    if args.profile:
        profile(8, 8, 256, 64)
        return
    cases = [tuple(map(int, c.split(","))) for c in args.cases.split(";")] if args.cases \
        else CASES
    backend = burn.Cuda()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; ratios are torch's "
          f"time over burn's (above 1: burn is faster)")
    rows = []
    for case in cases:
        for causal in (False, True):
            row = case_rows(backend, *case, causal)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
