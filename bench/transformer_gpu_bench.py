"""A transformer block's training step in burn against the same step in torch, on the H200.

One pre-norm ``TransformerEncoderLayer`` (GELU, causal self-attention, no dropout unless
``--dropout P``: burn drops the attention output and the feed-forward's activations and
output; torch also drops the attention weights, inside its fused attention), ``AdamW``; the
step is forward, ``mean(y ** 2)``, backward and the optimizer's update. ``--precision``:
``bf16`` (the default), bf16 parameters and activations; ``mixed``, float32 parameters and
bf16 compute (burn: ``burn.train.MixedPrecision("bfloat16")``; torch: ``torch.autocast``);
``float32``, float32 throughout (both with IEEE float32 matmuls, no TF32).
burn: ``burn.nn.TransformerEncoderLayer`` on ``Autodiff(Cuda())``
(its attention is the fused flash kernels, forward and backward); torch:
``torch.nn.TransformerEncoderLayer(norm_first=True, batch_first=True)`` with its causal mask
(``is_causal``), ``torch.optim.AdamW``. The first steps of burn tune its kernels; times are
medians of steps after that, each synchronized (wall clock, host included).

    source .whl/gpu-env.sh && python3 bench/transformer_gpu_bench.py [--cases "16,512,512,8;..."]
        [--fusion] [--captured] [--dropout P] [--precision bf16|mixed|float32] [--gpu-time]
        [--profile]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import from_torch, kernel_events, profile_host  # noqa: E402

import burn  # noqa: E402

CASES = [(16, 512, 512, 8), (8, 1024, 1024, 16), (64, 128, 256, 4)]  # (B, S, d_model, heads)


def step_seconds(step: Callable[[], None], warmup: int = 5, steps: int = 15) -> float:
    """Median wall seconds of one synchronized step, after ``warmup`` steps."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def kernel_ms(step: Callable[[], None], steps: int = 5) -> tuple[float, float]:
    """(GPU kernel milliseconds, kernels) per step, from torch.profiler's CUDA activity."""
    events = kernel_events(step, steps)
    total = sum(e.self_device_time_total for e in events)
    return total / 1e3 / steps, sum(e.count for e in events) / steps


PARAMETER_DTYPES = {"bf16": torch.bfloat16, "mixed": torch.float32, "float32": torch.float32}


def burn_step(b: int, s: int, d: int, heads: int, fusion: bool = False,
              captured: bool = False, dropout: float = 0.0, precision: str = "bf16"
              ) -> Callable[[], None]:
    """A closure running one burn training step (it keeps the model between calls), on
    ``Autodiff(Fusion(Cuda()))`` with ``fusion``, as a ``burn.train.CapturedStep`` (one CUDA
    graph after three warm-up steps) with ``captured``."""
    ad = burn.Autodiff(burn.Fusion(burn.Cuda()) if fusion else burn.Cuda())
    dtype = str(PARAMETER_DTYPES[precision]).removeprefix("torch.")
    layer = burn.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=dropout,
                                            dtype=dtype, backend="cuda",
                                            generator=burn.Generator(0))
    state = {"model": layer.to(ad).require_grad()}
    optimizer = burn.optim.AdamW(lr=1e-4)
    x = from_torch(torch.randn(b, s, d, device="cuda", dtype=PARAMETER_DTYPES[precision]), ad)
    amp = burn.train.MixedPrecision("bfloat16") if precision == "mixed" else None

    def train(model: burn.nn.Module, x: burn.Tensor) -> burn.nn.Module:
        if amp is None:
            y = model(x, causal=True)
            return optimizer.step(model, (y * y).mean().backward())
        y = amp.output(amp.compute_model(model)(*amp.inputs([x]), causal=True))
        return optimizer.step(model, amp.unscale(amp.scale((y * y).mean()).backward()))

    run = burn.train.CapturedStep(train, optimizer) if captured else train

    def step() -> None:
        state["model"] = run(state["model"], x)

    return step


def torch_step(b: int, s: int, d: int, heads: int, dropout: float = 0.0,
               precision: str = "bf16") -> Callable[[], None]:
    dtype = PARAMETER_DTYPES[precision]
    layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=dropout, activation="gelu",
                                             batch_first=True, norm_first=True, device="cuda",
                                             dtype=dtype)
    optimizer = torch.optim.AdamW(layer.parameters(), lr=1e-4)
    x = torch.randn(b, s, d, device="cuda", dtype=dtype)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(s, device="cuda", dtype=dtype)

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "mixed"):
            y = layer(x, src_mask=mask, is_causal=True)
        if precision == "mixed":  # as burn's MixedPrecision.output: the loss in float32
            y = y.float()
        loss = (y * y).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help='"B,S,d_model,heads;..." (default: the list here)')
    parser.add_argument("--fusion", action="store_true", help="burn on Autodiff(Fusion(Cuda))")
    parser.add_argument("--gpu-time", action="store_true",
                        help="also each step's GPU kernel time and kernel count (profiler)")
    parser.add_argument("--captured", action="store_true",
                        help="burn's step as a burn.train.CapturedStep (a CUDA graph)")
    parser.add_argument("--dropout", type=float, default=0.0,
                        help="the layers' dropout probability (both in training mode)")
    parser.add_argument("--precision", choices=sorted(PARAMETER_DTYPES), default="bf16",
                        help="bf16 parameters, float32 ones with bf16 compute, or float32")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile 20 burn steps of the first case, then exit")
    args = parser.parse_args()
    cases = [tuple(map(int, c.split(","))) for c in args.cases.split(";")] if args.cases \
        else CASES
    torch.backends.cuda.matmul.allow_tf32 = False  # burn's float32 matmuls are IEEE too
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; ratio: torch's step "
          f"time over burn's (above 1: burn is faster)")
    if args.profile:
        step = burn_step(*cases[0], fusion=args.fusion)
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        profile_host(step, calls=20)
        return
    for case in cases:
        start = time.perf_counter()
        ours_step = burn_step(*case, fusion=args.fusion, captured=args.captured,
                              dropout=args.dropout, precision=args.precision)
        ours_step()
        torch.cuda.synchronize()
        first = time.perf_counter() - start
        their_step = torch_step(*case, dropout=args.dropout, precision=args.precision)
        ours, theirs = step_seconds(ours_step), step_seconds(their_step)
        b, s, d, heads = case
        row = {"case": f"B={b} S={s} d={d} heads={heads}", "captured": args.captured,
               "precision": args.precision,
               "dropout": args.dropout,
               "first_step_s": round(first, 2),
               "step_ms": (round(ours * 1e3, 2), round(theirs * 1e3, 2)),
               "ratio": round(theirs / ours, 3)}
        if args.gpu_time:
            (our_ms, our_kernels), (their_ms, their_kernels) = \
                kernel_ms(ours_step), kernel_ms(their_step)
            row["gpu_kernel_ms"] = (round(our_ms, 3), round(their_ms, 3))
            row["kernels_per_step"] = (round(our_kernels), round(their_kernels))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
