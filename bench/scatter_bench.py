"""``scatter_reduce`` on the cpu target or a CUDA GPU: a graph network's message aggregation,
``nodes.scatter_reduce(0, index, messages, reduce)`` with (edges, features) float32 messages
sent to random rows of (nodes, features), beside torch's ``scatter_reduce`` on the same
device in the same process, and a copy of the messages (the bandwidth peer: the scatter
reads them once and the index once).

Each row: milliseconds per call (medians of 7 samples after two warm-up calls, which
compile), torch's time over burn's, the copy's over burn's, and the largest difference from
torch's result (sums differ in rounding order; max/min/prod of these values agree closely).

    make .venv/.stamp-dev && .venv/bin/python bench/scatter_bench.py [--backend cuda]
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

import burn  # noqa: E402

CASES = [(4096, 65536, 64), (65536, 262144, 32), (1024, 1048576, 8)]  # nodes, edges, features
REDUCTIONS = ["sum", "mean", "amax", "amin", "prod"]


def synchronized(fn, cuda: bool):
    def call():
        out = fn()
        if cuda:
            torch.cuda.synchronize()
        return out

    return call


def row(backend: burn.Backend, device: str, nodes: int, edges: int, features: int,
        reduce: str) -> dict:
    rng = np.random.default_rng(0)
    x = rng.uniform(0.9, 1.1, (nodes, features)).astype(np.float32)
    messages = rng.uniform(0.9, 1.1, (edges, features)).astype(np.float32)  # products stay finite
    targets = np.repeat(rng.integers(0, nodes, (edges, 1)), features, axis=1)
    tx, tm, ti = (torch.from_numpy(a).to(device) for a in (x, messages, targets))
    bx, bm, bi = (burn.from_numpy(a, backend=backend) for a in (x, messages, targets))
    cuda = device == "cuda"
    ours = synchronized(lambda: bx.scatter_reduce(0, bi, bm, reduce), cuda)
    theirs = synchronized(lambda: tx.scatter_reduce(0, ti, tm, reduce), cuda)
    copy = synchronized(lambda: tm.clone(), cuda)
    burn_ms, torch_ms, copy_ms = milliseconds(ours), milliseconds(theirs), milliseconds(copy)
    error = np.abs(ours().numpy() - theirs().cpu().numpy()).max()
    return {"nodes": nodes, "edges": edges, "features": features, "reduce": reduce,
            "burn_ms": round(burn_ms, 3), "torch_ms": round(torch_ms, 3),
            "copy_ms": round(copy_ms, 3), "torch_over_burn": round(torch_ms / burn_ms, 3),
            "copy_over_burn": round(copy_ms / burn_ms, 3), "max_abs_diff": float(error)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    backend = burn.backend_for(args.backend)
    device = "cuda" if args.backend == "cuda" else "cpu"
    print(json.dumps({"backend": args.backend, "torch": torch.__version__,
                      "threads": torch.get_num_threads()}), flush=True)
    for nodes, edges, features in CASES:
        for reduce in REDUCTIONS:
            print(json.dumps(row(backend, device, nodes, edges, features, reduce)), flush=True)


if __name__ == "__main__":
    main()
