"""Autotune the example matmul on this GPU, time cold tuning and a warm new process, and export
the results for ``autotune_cache/`` (issue 5's H200 figures).

    python bench/h200_autotune.py --out DIR      # DIR receives the exported JSON files

Cold tuning: the first call of each key benchmarks every config (the tuner's own clock, CUDA
events). The tuned call and cuBLAS (``torch.matmul``) are then timed in turns, five
``do_bench`` medians each, and their medians compared. Warm: a fresh process with the same
cache folder reaches its first result without benchmarking; its time beyond compilation is
reported.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cubepy.autotune import STATS  # noqa: E402
from examples import matmul as mm  # noqa: E402

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (1024, 8192, 8192),
          (16, 8192, 8192), (1024, 1024, 32768)]  # the last: fewer tiles than multiprocessors
tuned_matmul = mm.matmul_tuned


def run(shapes, dtype: str) -> list[dict]:
    import torch
    import triton.testing
    from gpu_bench_triton import medians_in_turns  # here: the warm process imports this file

    rows = []
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=getattr(torch, dtype))
        b = torch.randn(k, n, device="cuda", dtype=getattr(torch, dtype))
        c = torch.empty(m, n, device="cuda", dtype=getattr(torch, dtype))
        before = STATS.tunings
        start = time.perf_counter()
        tuned_matmul(a, b, c, m, n, k)
        torch.cuda.synchronize()
        first = time.perf_counter() - start
        out = torch.empty_like(c)
        peer, ours = medians_in_turns(
            lambda fn: triton.testing.do_bench(fn, return_mode="median"),
            lambda a=a, b=b, out=out: torch.matmul(a, b, out=out),
            lambda a=a, b=b, c=c, m=m, n=n, k=k: tuned_matmul(a, b, c, m, n, k))
        rows.append({"shape": [m, n, k], "dtype": dtype, "first_call_s": first,
                     "tuned": STATS.tunings > before, "ours_ms": ours, "cublas_ms": peer,
                     "ratio": peer / ours, "best": tuned_matmul.last_config.as_json()
                     if tuned_matmul.last_config else None})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def warm_process() -> dict:
    """A fresh process: first call of a tuned key, with the disk cache warm."""
    code = ("import time; t0 = time.perf_counter(); import sys; sys.path.insert(0, 'bench'); "
            "import h200_autotune as h, torch; from cubepy.autotune import STATS; "
            "a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); "
            "c = torch.empty_like(a); t1 = time.perf_counter(); "
            "h.tuned_matmul(a, a, c, 4096, 4096, 4096); torch.cuda.synchronize(); "
            "t2 = time.perf_counter(); h.tuned_matmul(a, a, c, 4096, 4096, 4096); "
            "torch.cuda.synchronize(); t3 = time.perf_counter(); "
            "print({'tunings': STATS.tunings, 'benchmark_runs': STATS.benchmark_runs, "
            "'import_s': t1 - t0, 'first_call_s': t2 - t1, 'second_call_s': t3 - t2})")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=os.environ.copy(), timeout=300)
    print(out.stdout.strip(), out.stderr.strip()[-2000:], flush=True)
    return {"stdout": out.stdout.strip()}


def main() -> int:
    import h200_autotune as module  # this file under its own name: cache keys name the module

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)  # the export below writes nothing untuned
    rows = module.run(SHAPES, "bfloat16")
    warm = module.warm_process()
    subprocess.run([sys.executable, "-m", "cubepy.autotune", "export", "--device",
                    "NVIDIA H200", "--out", str(args.out)], cwd=ROOT, check=False)
    (args.out / "h200_autotune.json").write_text(json.dumps({"rows": rows, "warm": warm},
                                                            indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
