"""burn on the host: the cost of one small op, beside torch (CPU) and NumPy in the same run.

    python bench/burn_bench.py [--json out.json]

Rows: ``x + y`` on two 1,000-element float32 tensors, timed as the median over 20 batches of
2,000 calls after a warm-up (the kernel is compiled and cached first). What it measures is the
host path of an op: broadcasting and dtype rules, the allocation of the result, and the launch
of a cubepy kernel; the arithmetic itself is about 0.1 µs. torch is imported from
``.cache/bench-torch`` when present (``pip install --target .cache/bench-torch torch==2.13.0``)
so the test environment stays torch-free.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".cache", "bench-torch"))

import burn  # noqa: E402

SIZE = 1000
CALLS = 2000
BATCHES = 20


def per_call_us(fn: Callable[[], object]) -> float:
    """Median over batches of the mean time of one call, in microseconds."""
    for _ in range(200):
        fn()
    batches = []
    for _ in range(BATCHES):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        batches.append((time.perf_counter() - start) / CALLS * 1e6)
    return statistics.median(batches)


def rows() -> dict[str, float]:
    a = np.random.default_rng(0).random(SIZE, dtype=np.float32)
    b = np.random.default_rng(1).random(SIZE, dtype=np.float32)
    result = {"numpy add": per_call_us(lambda: np.add(a, b))}
    for name in ("cpu", "wgpu", "numpy"):
        try:
            backend = burn.backend_for(name)
        except burn.BurnError:
            continue
        x, y = burn.from_numpy(a, backend=backend), burn.from_numpy(b, backend=backend)
        np.testing.assert_allclose((x + y).numpy(), a + b, rtol=1e-6)
        result[f"burn {name} add"] = per_call_us(lambda x=x, y=y: x + y)
    try:
        import torch

        torch.set_num_threads(os.cpu_count() or 1)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        result[f"torch {torch.__version__} cpu add"] = per_call_us(lambda: ta + tb)
    except ImportError:
        print("torch not importable: no torch row", file=sys.stderr)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    figures = rows()
    width = max(map(len, figures))
    print(f"host cost of one op on {SIZE} float32 elements (median of {BATCHES} x {CALLS} calls)")
    for name, us in figures.items():
        print(f"  {name:<{width}}  {us:8.2f} µs")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "rows_us": figures}, f, indent=1)


if __name__ == "__main__":
    main()
