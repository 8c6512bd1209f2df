"""Small launches on the cpu target: microseconds per call of burn ops on tensors of 256 to
1M float32 elements, of square matmuls, and of a small MLP's training step (forward,
backward, SGD update), each beside torch's CPU eager call in the same process (torch/burn
above 1: burn is faster). Medians of five batches of calls after a warm-up (which compiles).

    make .venv/.stamp-dev && .venv/bin/python bench/cpu_launch_probe.py
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

SIZES = [256, 16384, 262144, 1048576]


def microseconds(fn: Callable[[], object], budget_s: float = 0.05) -> float:
    for _ in range(3):
        fn()
    start = time.perf_counter()
    fn()
    calls = max(1, min(2000, int(budget_s / max(time.perf_counter() - start, 1e-7))))
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples) * 1e6


def op_rows(cpu: burn.Backend, n: int) -> None:
    """The ops on (n / 1024, 1024) float32 tensors (one row below 1024 elements)."""
    values = np.random.default_rng(0).standard_normal((max(1, n // 1024), min(n, 1024)))
    x = burn.from_numpy(values.astype(np.float32), backend=cpu)
    t = torch.from_numpy(values.astype(np.float32))
    ops = {"add": (lambda: x + x, lambda: t + t),
           "row sum": (lambda: x.sum(axis=1), lambda: t.sum(1)),
           "exp": (lambda: x.exp(), lambda: t.exp()),
           "softmax": (lambda: burn.softmax(x, -1), lambda: torch.softmax(t, -1))}
    for name, (ours, theirs) in ops.items():
        burn_us, torch_us = microseconds(ours), microseconds(theirs)
        print(json.dumps({"op": name, "elements": n, "burn_us": round(burn_us, 1),
                          "torch_us": round(torch_us, 1),
                          "torch_over_burn": round(torch_us / burn_us, 3)}), flush=True)


def matmul_row(cpu: burn.Backend, n: int) -> None:
    values = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    x, t = burn.from_numpy(values, backend=cpu), torch.from_numpy(values)
    burn_us, torch_us = microseconds(lambda: x @ x), microseconds(lambda: t @ t)
    print(json.dumps({"op": "matmul", "elements": n * n, "burn_us": round(burn_us, 1),
                      "torch_us": round(torch_us, 1),
                      "torch_over_burn": round(torch_us / burn_us, 3)}), flush=True)


def mlp_row(cpu: burn.Backend, batch: int, width: int) -> None:
    ad = burn.Autodiff(cpu)
    model = burn.nn.Sequential(burn.nn.Linear(width, width, backend=cpu), burn.nn.ReLU(),
                               burn.nn.Linear(width, 10, backend=cpu)).to(ad).require_grad()
    optimizer = burn.optim.SGD(lr=1e-3)
    rng = np.random.default_rng(0)
    x = burn.from_numpy(rng.standard_normal((batch, width)).astype(np.float32), backend=ad)
    y = burn.from_numpy(rng.integers(0, 10, batch), backend=ad)
    state = {"model": model}

    def step() -> None:
        loss = burn.nn.cross_entropy(state["model"](x), y)
        state["model"] = optimizer.step(state["model"], loss.backward())

    tmodel = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                 torch.nn.Linear(width, 10))
    toptimizer = torch.optim.SGD(tmodel.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())

    def torch_step() -> None:
        toptimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(tmodel(tx), ty).backward()
        toptimizer.step()

    burn_us, torch_us = microseconds(step, 0.3), microseconds(torch_step, 0.3)
    print(json.dumps({"step": f"MLP {batch}x{width} -> {width} -> 10, SGD", "burn_us":
                      round(burn_us, 1), "torch_us": round(torch_us, 1),
                      "torch_over_burn": round(torch_us / burn_us, 3)}), flush=True)


def main() -> None:
    print(f"cpu target, torch {torch.__version__} on {torch.get_num_threads()} threads")
    cpu = burn.Cpu()
    for n in SIZES:
        op_rows(cpu, n)
    for n in (32, 128, 512):
        matmul_row(cpu, n)
    for batch, width in ((32, 64), (256, 512)):
        mlp_row(cpu, batch, width)


if __name__ == "__main__":
    main()
