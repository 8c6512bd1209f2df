"""The backward pass of layer_norm and rms_norm on the cpu target (Numba): burn's fused
``norm_backward`` against the same gradients composed of tensor ops (burn's rule before it)
and torch's CPU backward of ``F.layer_norm`` / ``F.rms_norm``, in the same process.

Each row: the gradients of x, weight and bias of (rows, cols) float32 or bfloat16 inputs for a
random output gradient, checked against float64 (torch's float64 backward of the same rounded
inputs) beside torch's own in the dtype; milliseconds per call (medians of 7
samples after two warm-up calls, which compile); torch's time over burn's fused one.

    make .venv/.stamp-dev && .venv/bin/python bench/norm_backward_cpu_bench.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import burn  # noqa: E402
from burn.autodiff.reductions import _composed_norm_gradients  # noqa: E402

SHAPES = [(4096, 1024), (1024, 4096), (64, 65536)]
EPS = 1e-5


def milliseconds(fn: Callable[[], object], samples: int = 7) -> float:
    """Median milliseconds of one call over ``samples`` calls, after two (which compile)."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def largest_error(got: tuple, expected: list[np.ndarray], cpu: burn.Backend) -> float:
    """The largest difference from float64, relative to its largest entry (three digits)."""
    worst = 0.0
    for value, want in zip(got, expected):
        if isinstance(value, torch.Tensor):
            value = value.detach().double().numpy()
        else:
            value = burn.Tensor(value, cpu) if not isinstance(value, burn.Tensor) else value
            value = value.to("float64").numpy()
        worst = max(worst, float(np.abs(value - want).max() / np.abs(want).max()))
    return float(f"{worst:.3g}")


def row(rows: int, cols: int, dtype: str, rms: bool) -> dict:
    cpu = burn.Cpu()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((rows, cols)).astype(np.float32) * 2 + 0.5,
              rng.random(cols).astype(np.float32) + 0.5, rng.standard_normal(cols).astype(
                  np.float32), rng.standard_normal((rows, cols)).astype(np.float32)]
    x, w, b, g = (burn.from_numpy(a, backend=cpu).to(dtype) for a in arrays)
    tx, tw, tb, tg = (torch.from_numpy(a).to(getattr(torch, dtype)) for a in arrays)
    compute = burn.float32

    def fused():
        return cpu.norm_backward(x.prim, 1, w.prim, g.prim, EPS, rms, True, compute)

    def composed():  # as the rule computed them: in float32, dx then cast to x's dtype
        dx, dw, db = _composed_norm_gradients(x, 1, w, g, EPS, rms, True, compute)
        return dx.to(dtype), dw, db

    tx.requires_grad_()
    tw.requires_grad_()
    tb.requires_grad_()
    f = torch.nn.functional
    y = f.rms_norm(tx, (cols,), tw, EPS) if rms else f.layer_norm(tx, (cols,), tw, tb, EPS)
    inputs = (tx, tw) if rms else (tx, tw, tb)

    def theirs():
        return torch.autograd.grad(y, inputs, tg, retain_graph=True)

    exact = [t.detach().double().requires_grad_() for t in inputs]
    y64 = f.rms_norm(exact[0], (cols,), exact[1], EPS) if rms else \
        f.layer_norm(exact[0], (cols,), exact[1], exact[2], EPS)
    expected = [t.numpy() for t in torch.autograd.grad(y64, exact, tg.double())]
    errors = {name: largest_error(got, expected, cpu) for name, got in
              (("fused", fused()), ("composed", composed()), ("torch", theirs()))}
    if max(errors["fused"], errors["composed"]) > (2e-2 if dtype == "bfloat16" else 1e-4):
        raise SystemExit(f"{rows}x{cols} {dtype}: burn's gradients are off by {errors}")
    times = {"fused": milliseconds(fused), "composed": milliseconds(composed),
             "torch": milliseconds(theirs)}
    return {"op": "rms_norm" if rms else "layer_norm", "shape": [rows, cols], "dtype": dtype,
            "largest_error_vs_float64": errors,
            "ms": {k: round(v, 3) for k, v in times.items()},
            "composed_over_fused": round(times["composed"] / times["fused"], 2),
            "torch_over_fused": round(times["torch"] / times["fused"], 2)}


def main() -> None:
    print(f"cpu target, {torch.get_num_threads()} torch threads, torch {torch.__version__}; "
          "ratios above 1: burn's fused kernel is faster")
    for dtype in ("float32", "bfloat16"):
        for rows, cols in SHAPES:
            for rms in (False, True):
                print(json.dumps(row(rows, cols, dtype, rms)), flush=True)


if __name__ == "__main__":
    main()
