"""The host path of small elementwise ops: microseconds per call of burn ops on tensors of
64 x 128 float32 elements, each beside torch's eager call on the same device in the same
process (torch/burn above 1: burn is faster). Under ``Fusion`` an op is only recorded
(nothing runs until a value is read), so its row is burn's tensor layer and Fusion's recording
alone; on the bare backend each op also launches its kernel. A number operand (``x * 0.5``)
and a broadcast bias (``x + b``) take the paths a training step's scaling and biases take.
The last op, a chain of three, is run under ``Fusion`` (one generated kernel). Best of five
batches of calls after a warm-up (which compiles); on CUDA each batch ends with a synchronize,
so a row is the launch rate both sides sustain. ``--profile`` adds cProfile's costliest
functions of each op on the bare backend and of the fused chain.

    make .venv/.stamp-dev && .venv/bin/python bench/host_path_probe.py [--device cpu|cuda]

torch from ``.cache/bench-torch`` when present (``pip install --target .cache/bench-torch
torch==2.13.0``, a CPU wheel), else the one installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / ".cache" / "bench-torch")]

import torch  # noqa: E402
from burn_gpu_bench import profile_host  # noqa: E402

import burn  # noqa: E402


def microseconds(fn: Callable[[], object], sync: Callable[[], None], calls: int) -> float:
    for _ in range(300):
        fn()
    sync()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def small_ops(x: Any, y: Any, b: Any, run: Callable[[Any], Any] = lambda value: value
              ) -> dict[str, Callable[[], object]]:
    """The probed ops on one library's tensors (burn's or torch's: the same spelling). The
    last, a chain of three, is passed to ``run``: ``Fusion.realize`` runs it as one kernel."""
    return {"x * y": lambda: x * y, "x * 0.5": lambda: x * 0.5, "x + b": lambda: x + b,
            "x.exp()": lambda: x.exp(), "(x * 0.5 + b).exp(), run": lambda: run(
                (x * 0.5 + b).exp())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--calls", type=int, default=5000, help="calls per timed batch")
    parser.add_argument("--profile", action="store_true",
                        help="then cProfile each op on the bare backend and the fused chain")
    args = parser.parse_args()
    on_cuda = args.device == "cuda"
    sync = torch.cuda.synchronize if on_cuda else (lambda: None)
    print(json.dumps({"device": args.device, "torch": torch.__version__,
                      "threads": torch.get_num_threads()}))
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32)
              for shape in ((64, 128), (64, 128), (128,))]
    torch_ops = small_ops(*(torch.from_numpy(a).to(args.device) for a in arrays))
    bare = burn.Cuda() if on_cuda else burn.Cpu()
    fusion = burn.Fusion(bare)
    for name, backend in ((f"Fusion({bare!r}), recorded", fusion), (repr(bare), bare)):
        run = fusion.realize if backend is fusion else (lambda value: value)
        ours = small_ops(*(burn.from_numpy(a, backend=backend) for a in arrays), run=run)
        for op, fn in ours.items():
            burn_us = microseconds(fn, sync, args.calls)
            torch_us = microseconds(torch_ops[op], sync, args.calls)
            print(json.dumps({"backend": name, "op": op, "burn_us": round(burn_us, 2),
                              "torch_us": round(torch_us, 2),
                              "torch_over_burn": round(torch_us / burn_us, 3)}), flush=True)
            if args.profile and (backend is bare or op.endswith("run")):
                print(f"--- profile of {name}: {op}, {args.calls} calls", flush=True)
                profile_host(fn, args.calls, sync)


if __name__ == "__main__":
    main()
