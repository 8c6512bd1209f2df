"""Sweep matmul configs beyond the tuning list against cuBLAS, in one process (exploration).

For each shape, times ``examples.matmul.matmul`` with every config below and ``torch.matmul``
(cuBLAS) with ``triton.testing.do_bench``, checks each result against cuBLAS, and prints the
ratios best first; ``--turns N`` times the N best again in turns with cuBLAS (five rounds of
medians each); ``--cubes C`` launches the persistent kernels on C cubes instead of one per
multiprocessor; ``--out`` keeps the rows as JSON.

    python bench/matmul_sweep.py [--shapes 4096,4096,4096;8192,8192,8192] [--turns 4]
                                 [--cubes 128] [--out sweep.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_bench_triton import medians_in_turns  # noqa: E402

from cubepy.runtime import device_arrays  # noqa: E402
from examples.matmul import Config, matmul  # noqa: E402

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, persistent)
CONFIGS = [Config(*row) for row in [
    (128, 256, 64, 8, 8, 3, False), (128, 256, 32, 8, 8, 5, False),
    (128, 256, 64, 8, 8, 3, True), (128, 256, 64, 16, 8, 3, True),
    (128, 256, 32, 8, 8, 5, True), (128, 256, 32, 8, 8, 4, True),
    (128, 128, 64, 8, 4, 4, True), (128, 128, 64, 8, 8, 4, True),
    (256, 128, 64, 8, 8, 3, True)]]
# The persistent kernel as the tuner picks it at 4096³ (C by TMA, loops flattened), and its
# neighbours: other groups, K slices of 128 in two stages, four stages with C stored from
# registers (no room for a C tile in shared memory then), 256x128 tiles.
CONFIGS += [Config(128, 256, 64, g, 8, 3, True, True, True) for g in (4, 8, 16, 32)]
CONFIGS += [Config(128, 256, 128, 16, 8, 2, True, True, True),
            Config(128, 256, 64, 16, 8, 4, True, False, True),
            Config(256, 128, 64, 16, 8, 3, True, True, True)]
# K slices of 128 in two stages with C stored from registers (no C tile in shared memory, so
# the two stages fit): half the loop trips and barrier waits of 64-wide slices (sweep 23)
CONFIGS += [Config(128, 256, 128, g, 8, 2, True, False, f) for g in (8, 16) for f in (False, True)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="4096,4096,4096;8192,8192,8192;8192,8192,1024")
    p.add_argument("--turns", type=int, default=0, help="time the N best in turns with cuBLAS")
    p.add_argument("--cubes", type=int, help="persistent kernels on this many cubes")
    p.add_argument("--out", help="write the rows here (JSON)")
    args = p.parse_args()
    if args.cubes:
        device_arrays._MULTIPROCESSORS["torch", torch.cuda.current_device()] = args.cubes
    rows = []
    for text in args.shapes.split(";"):
        m, n, k = (int(v) for v in text.split(","))
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        expected = torch.matmul(a, b).float()
        cublas = triton.testing.do_bench(lambda: torch.matmul(a, b))  # noqa: B023
        flop = 2 * m * n * k
        results = []
        for config in CONFIGS:
            c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            try:
                matmul(a, b, c, config=config)
            except Exception as err:  # a config the device cannot fit: reported, not fatal
                results.append({"config": str(config), "error": str(err)[:200]})
                continue
            error = float((c.float() - expected).abs().max() / expected.abs().max())
            ms = triton.testing.do_bench(
                lambda: matmul(a, b, c, config=config))  # noqa: B023
            results.append({"config": str(config), "ms": ms, "ratio": cublas / ms,
                            "tflops": flop / ms / 1e9, "error": error})
        results.sort(key=lambda r: -r.get("ratio", 0))
        print(f"{m}x{n}x{k} bf16: cuBLAS {cublas:.3f} ms, {flop / cublas / 1e9:.0f} TFLOP/s",
              flush=True)
        for r in results:
            if "ms" in r:
                print(f"  {r['config']:<40} {r['ms']:.3f} ms {r['tflops']:6.0f} TFLOP/s "
                      f"{r['ratio']:.3f}x  (max rel err {r['error']:.1e})", flush=True)
            else:
                print(f"  {r['config']:<40} failed: {r['error']}", flush=True)
        turns = []
        for r in [r for r in results if "ms" in r][:args.turns]:
            config = next(c for c in CONFIGS if str(c) == r["config"])
            c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            theirs, mine = medians_in_turns(
                triton.testing.do_bench, lambda: torch.matmul(a, b),  # noqa: B023
                lambda config=config, c=c: matmul(a, b, c, config=config))  # noqa: B023
            turns.append({"config": r["config"], "ms": mine, "cublas_ms": theirs,
                          "ratio": theirs / mine})
            print(f"  in turns: {r['config']:<40} {mine:.4f} ms vs cuBLAS {theirs:.4f} ms "
                  f"{theirs / mine:.3f}x", flush=True)
        rows.append({"shape": [m, n, k], "cublas_ms": cublas, "configs": results,
                     "turns": turns, "cubes": args.cubes})
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
