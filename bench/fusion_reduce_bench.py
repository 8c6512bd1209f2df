"""Reductions and softmaxes of pending elementwise values under ``burn.Fusion``, on the cpu
target or a CUDA GPU: the fused kernel (the chain computed inside the reduction or the
softmax) against the same Fusion backend computing the chain first and running the plain op
on it (two launches, what Fusion did before), torch's eager ops on the same memory, and a
copy of the input as the bandwidth peer, all in the same process.

Cases: a mean squared error ``((a - b) ** 2).mean()`` (a full reduction, split over cubes),
row sums of ``exp(x - c)`` with a per-row ``c`` (the softmax denominator), column sums
of ``x * w`` with a per-column ``w`` (a tall reduction), a row ``logsumexp`` of ``x + b``
(a cross-entropy's, over logits with a bias: two passes), a row softmax of ``x * 0.125 + m``
(attention scores, scaled and masked) and a row ``log_softmax`` of ``x + b``. Each row:
milliseconds per call (cpu: medians of 7 wall-clock calls after two; cuda: GPU time of 20
calls queued behind a GPU sleep, and the host's microseconds per call of each), the unfused
and torch times over the fused one, the copy's time over the fused one, and the largest
difference from float64.

    make .venv/.stamp-dev && .venv/bin/python bench/fusion_reduce_bench.py [--backend cuda] \
        [--cases row_softmax,...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from norm_backward_cpu_bench import milliseconds  # noqa: E402

import burn  # noqa: E402

CPU_SIZES = {"mse": (1 << 20,), "row_exp_sum": (1024, 1024), "col_weighted_sum": (1024, 1024),
             "row_logsumexp": (1024, 1024), "row_softmax": (1024, 1024),
             "row_log_softmax": (1024, 1024)}
# (on the GPU, also a 4096-element loss: bound by the host path, where one launch is saved)
GPU_SIZES = {"mse": [(1 << 26,), (4096,)], "row_exp_sum": (8192, 8192),
             "col_weighted_sum": (8192, 8192), "row_logsumexp": (8192, 8192),
             "row_softmax": [(16384, 1024), (64, 128)], "row_log_softmax": (8192, 8192)}


def operands(case: str, shape: tuple[int, ...], rng: np.random.Generator
             ) -> list[np.ndarray]:
    """The case's inputs, float32 (cast to the dtype on the device)."""
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    if case == "mse":
        return [x, rng.uniform(-1, 1, shape).astype(np.float32)]
    if case == "row_exp_sum":
        return [x, x.max(axis=1, keepdims=True)]
    return [x, rng.uniform(0, 1, shape[1:]).astype(np.float32)]  # a weight or bias per column


#: each case as (the elementwise chain, the reduction of its value), on burn or torch tensors
CASES = {
    "mse": (lambda a, b: (a - b) ** 2, lambda v: v.mean()),
    "row_exp_sum": (lambda a, b: (a - b).exp(), lambda v: v.sum(1)),
    "col_weighted_sum": (lambda a, b: a * b, lambda v: v.sum(0)),
    "row_logsumexp": (lambda a, b: a + b, lambda v: v.logsumexp(1)),
    "row_softmax": (lambda a, b: a * 0.125 + b, lambda v: v.softmax(1)),
    "row_log_softmax": (lambda a, b: a + b, lambda v: v.log_softmax(1)),
}


def expression(case: str, a, b):
    """The case on burn tensors or torch tensors alike."""
    chain, reduced = CASES[case]
    return reduced(chain(a, b))


def unfused(case: str, fusion: burn.Fusion, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    """The chain computed first (one fused elementwise kernel), then reduced."""
    chain, reduced = CASES[case]
    value = chain(a, b)
    fusion.realize(value)
    return reduced(value)


def reference(case: str, arrays: list[np.ndarray]) -> np.ndarray:
    a, b = (x.astype(np.float64) for x in arrays)
    if case == "row_exp_sum":
        return np.exp(a - b).sum(1)
    if case == "row_logsumexp":
        return np.log(np.exp(a + b).sum(1))
    if case in ("row_softmax", "row_log_softmax"):
        v = a * 0.125 + b if case == "row_softmax" else a + b
        shifted = v - v.max(1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        return np.exp(log_p) if case == "row_softmax" else log_p
    return np.asarray(expression(case, a, b))


def timer(cuda: bool) -> Callable[[Callable[[], object]], float]:
    if not cuda:
        return milliseconds
    from burn_gpu_bench import gpu_only_seconds

    return lambda fn: gpu_only_seconds(fn) * 1e3


def row(case: str, shape: tuple[int, ...], dtype: str, fusion: burn.Fusion, device: str,
        rng: np.random.Generator) -> dict:
    cuda = device == "cuda"
    arrays = operands(case, shape, rng)
    tdtype = getattr(torch, dtype)
    ta, tb = (torch.from_numpy(x).to(device=device, dtype=tdtype) for x in arrays)
    if cuda:
        from burn_gpu_bench import from_torch

        a, b = (from_torch(t, fusion.wraps).to(fusion) for t in (ta, tb))
    else:
        a, b = (burn.from_numpy(x, backend=fusion).to(getattr(burn, dtype)) for x in arrays)
    # the inputs as the device holds them (rounded to the dtype), for the float64 reference
    want = reference(case, [t.float().cpu().numpy() for t in (ta, tb)])
    fused_out = expression(case, a, b).numpy().astype(np.float64)
    scale = float(np.abs(want).max())
    error = float(np.abs(fused_out - want).max()) / scale
    time = timer(cuda)
    fused_ms = time(lambda: fusion.realize(expression(case, a, b)))
    unfused_ms = time(lambda: fusion.realize(unfused(case, fusion, a, b)))
    torch_ms = time(lambda: expression(case, ta, tb))
    copy_ms = time(lambda: ta.clone())
    result = {"case": case, "shape": list(shape), "dtype": dtype, "fused_ms": round(fused_ms, 4),
              "unfused_ms": round(unfused_ms, 4), "torch_ms": round(torch_ms, 4),
              "copy_ms": round(copy_ms, 4),
              "unfused_over_fused": round(unfused_ms / fused_ms, 3),
              "torch_over_fused": round(torch_ms / fused_ms, 3),
              "copy_over_fused": round(copy_ms / fused_ms, 3),
              "error_vs_float64": float(f"{error:.3g}")}
    if cuda:
        from burn_gpu_bench import host_us

        result["host_us"] = {  # per call, queued back to back: what bounds a small call
            "fused": round(host_us(lambda: expression(case, a, b)), 1),
            "unfused": round(host_us(lambda: unfused(case, fusion, a, b)), 1),
            "torch": round(host_us(lambda: expression(case, ta, tb)), 1)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: "
                        + ", ".join(CASES))
    args = parser.parse_args()
    unknown = set(args.cases.split(",")) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {', '.join(sorted(unknown))}; cases: {', '.join(CASES)}")
    cuda = args.backend == "cuda"
    fusion = burn.Fusion(burn.Cuda() if cuda else burn.Cpu())
    print(json.dumps({"backend": args.backend, "torch": torch.__version__,
                      "threads": torch.get_num_threads()}), flush=True)
    rng = np.random.default_rng(0)
    for case, shapes in (GPU_SIZES if cuda else CPU_SIZES).items():
        if case not in args.cases.split(","):
            continue
        for shape in shapes if isinstance(shapes, list) else [shapes]:
            for dtype in args.dtypes.split(","):
                print(json.dumps(row(case, shape, dtype, fusion, args.backend, rng)), flush=True)


if __name__ == "__main__":
    main()
