"""The attention backward example, autotuned, against torch's fused attention backward.

    python bench/h200_attention_backward.py [--out FILE.json] [--shapes B,H,S,D;...]
                                            [--dtypes ...] [--sweep [--atomic-only]]

For each shape, dtype and mask: the forward pass with ``lse`` (examples/flash_attention.py),
the first call of ``examples.flash_attention_backward.attention_backward_tuned`` (cold
tuning of its key, with compiles), the largest difference of dq, dk, dv from torch's
(``scaled_dot_product_attention`` with ``is_causal`` where masked, differentiated by
``torch.autograd.grad``), then both backward passes timed in turns (five ``do_bench``
medians each, a cold L2 every run) and their medians compared. torch picks its own fused
backward kernel for sm_90. TFLOP/s count the backward's five products of 2 * B * H * S^2 * D
each (with P recomputed: 2.5x the forward's), halved when causal. With ``--sweep``, each of
the tuner's configs (or only those that sum dQ by atomics) is timed against torch instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from h200_attention import each_case, time_candidates  # noqa: E402

from cubepy.autotune import STATS  # noqa: E402
from examples import flash_attention as fa  # noqa: E402
from examples import flash_attention_backward as fab  # noqa: E402

SHAPES = "4,32,1024,64;4,32,4096,64;4,32,1024,128;4,32,4096,128"


def run_one(batch: int, heads: int, seq: int, head_dim: int, dtype: str, causal: bool) -> dict:
    import torch
    import triton.testing
    from gpu_bench_triton import medians_in_turns

    shape = (batch, heads, seq, head_dim)
    q, k, v, d_out = (torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
                      for _ in range(4))
    out = torch.empty_like(q)
    lse = torch.empty(shape[:3], device="cuda", dtype=torch.float32)
    fa.attention_tuned(q, k, v, out, seq, seq, head_dim, causal)  # the forward's tuned blocks
    forward = fa.attention_tuned.last_config
    fa.attention(q, k, v, out, causal=causal, lse=lse, block_m=forward.kwargs["BM"],
                 block_n=forward.kwargs["BN"], descriptors=forward.kwargs["DESC"],
                 num_warps=forward.num_warps, num_stages=forward.num_stages)
    grads = [torch.empty_like(q) for _ in range(3)]

    def ours():
        fab.attention_backward_tuned(q, k, v, out, lse, d_out, *grads, seq, seq, head_dim,
                                     causal)

    before = STATS.tunings
    start = time.perf_counter()
    ours()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    torch_out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)

    def theirs():
        return torch.autograd.grad(torch_out, leaves, d_out, retain_graph=True)

    want = theirs()
    errors = {name: (got.float() - ref.float()).abs().max().item() / ref.float().abs().max()
              .item() for name, got, ref in zip(("dq", "dk", "dv"), grads, want)}
    peer, mine = medians_in_turns(
        lambda fn: triton.testing.do_bench(fn, return_mode="median"), theirs, ours)
    flops = 10 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)
    row = {"shape": list(shape), "dtype": dtype, "causal": causal, "first_call_s": first,
           "tuned": STATS.tunings > before, "max_rel_diff_vs_torch": errors, "ours_ms": mine,
           "torch_ms": peer, "ratio": peer / mine, "ours_tflops": flops / mine * 1e-9,
           "torch_tflops": flops / peer * 1e-9,
           "best": fab.attention_backward_tuned.last_config.as_json()
           if fab.attention_backward_tuned.last_config else None}
    print(json.dumps(row), flush=True)
    return row


def sweep_one(batch: int, heads: int, seq: int, head_dim: int, dtype: str, causal: bool
              ) -> list[dict]:
    """Each of the tuner's configs in turns with torch's backward; sorted fastest first."""
    import torch

    shape = (batch, heads, seq, head_dim)
    q, k, v, d_out = (torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
                      for _ in range(4))
    out = torch.empty_like(q)
    lse = torch.empty(shape[:3], device="cuda", dtype=torch.float32)
    fa.attention(q, k, v, out, causal=causal, lse=lse)
    grads = [torch.empty_like(q) for _ in range(3)]
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    torch_out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)

    def ours(c):
        return lambda: fab.attention_backward(
            q, k, v, out, lse, d_out, *grads, causal=causal, block_kept=c.kwargs["KEPT"],
            block_step=c.kwargs["STEP"], atomic_dq=c.kwargs["ATOMIC"], num_warps=c.num_warps,
            num_stages=c.num_stages)

    candidates = [(c.as_json(), ours(c)) for c in fab.TUNING_CONFIGS]
    return time_candidates(
        candidates, lambda: torch.autograd.grad(torch_out, leaves, d_out, retain_graph=True),
        f"{shape} {dtype} causal={causal}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument("--sweep", action="store_true", help="time every tuner config instead")
    parser.add_argument("--atomic-only", action="store_true",
                        help="with --sweep: only the configs that sum dQ by atomics")
    args = parser.parse_args()
    if args.atomic_only:
        fab.TUNING_CONFIGS[:] = [c for c in fab.TUNING_CONFIGS if c.kwargs["ATOMIC"]]
    run = sweep_one if args.sweep else run_one
    rows = [run(*case) for case in each_case(args.shapes, args.dtypes)]
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
