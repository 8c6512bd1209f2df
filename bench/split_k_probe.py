"""Does splitting the last, part-filled wave of C's tiles along K pay, against cuBLAS?

    python bench/split_k_probe.py [--shapes 4096x4096x4096,...] [--dtypes bf16,fp16]

At 4096³ with 128x256 tiles, C has 512 tiles for the H200's 132 multiprocessors: three full
waves and a fourth of 116, so 12 % of the fourth wave idles (3 % of the run). Run 15 of
BENCHMARKS.md measured stream-K here (the last wave's K slices shared out evenly; git history
of this file); the example matmul now has ``Config(split_k=True)`` instead: the whole waves
as the persistent kernel runs them, then each tile of the last wave cut into as many parts
of its K slices as there are cubes per tile to spare (none at 4096³, where 116 of 132 cubes
are busy: it is then the persistent kernel). For each shape this prints:

1. the kernels cuBLAS runs (from torch's profiler: their names say tile shape and schedule);
2. each config once (``do_bench`` median), with its error against cuBLAS's result;
3. the best config with and without split_k, each in turns with cuBLAS (five rounds of
   ``do_bench`` medians), and the two in turns with each other.

4224x4096x4096 is the control: 33 x 16 = 528 tiles, four whole waves, nothing to split.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import torch
import triton.testing

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gpu_bench_triton import medians_in_turns  # noqa: E402
from tma_probe import shape_and_dtype_runs  # noqa: E402

from examples import matmul as mm  # noqa: E402

BASE = [mm.Config(128, 256, 64, g, 8, 3, persistent=True, c_descriptor=True, flatten=f)
        for g in (8, 16) for f in (False, True)]
BASE += [mm.Config(128, 256, 32, 8, 8, 5, persistent=True, c_descriptor=True, flatten=True)]


def cublas_kernels(a, b, out) -> list[str]:
    """Names of the GPU kernels one ``torch.matmul`` launches."""
    torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        torch.matmul(a, b, out=out)
        torch.cuda.synchronize()
    return sorted({event.name for event in prof.events()
                   if event.device_type == torch.autograd.DeviceType.CUDA})


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def probe(m: int, n: int, k: int, dtype: torch.dtype) -> None:
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen)
    want, c = (torch.empty(m, n, device="cuda", dtype=dtype) for _ in range(2))
    flops = 2 * m * n * k
    print(f"{m}x{n}x{k} {dtype}: cuBLAS runs {cublas_kernels(a, b, want)}", flush=True)
    cublas = bench(lambda: torch.matmul(a, b, out=want))
    print(f"  cuBLAS {cublas * 1e3:7.1f} us {flops / cublas / 1e9:5.0f} TFLOP/s", flush=True)
    timed = []
    for config in BASE + [replace(config, split_k=True) for config in BASE]:
        c.zero_()
        mm.matmul(a, b, c, config=config, target="triton")
        error = float((c.float() - want.float()).abs().max() / want.float().abs().max())
        ms = bench(lambda config=config: mm.matmul(a, b, c, config=config, target="triton"))
        timed.append((ms, config))
        print(f"  {str(config):<52} {ms * 1e3:7.1f} us {flops / ms / 1e9:5.0f} TFLOP/s "
              f"{cublas / ms:.3f}x  rel err {error:.1e}", flush=True)
    plain = min((t for t in timed if not t[1].split_k), key=lambda t: t[0])[1]
    split = min((t for t in timed if t[1].split_k), key=lambda t: t[0])[1]
    launch = {config: (lambda config=config: mm.matmul(a, b, c, config=config,
                                                       target="triton"))
              for config in (plain, split)}
    peer = lambda: torch.matmul(a, b, out=want)  # noqa: E731
    print("  in turns (5 rounds of do_bench medians):", flush=True)
    for config in (plain, split):
        theirs, mine = medians_in_turns(bench, peer, launch[config])
        print(f"  {str(config):<52} {mine * 1e3:7.1f} us vs cuBLAS {theirs * 1e3:7.1f} us "
              f"{theirs / mine:.3f}x", flush=True)
    without, with_split = medians_in_turns(bench, launch[plain], launch[split])
    print(f"  split_k vs without: {without * 1e3:.1f} / {with_split * 1e3:.1f} us = "
          f"{without / with_split:.3f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="4096x4096x4096,4224x4096x4096,8192x8192x8192")
    parser.add_argument("--dtypes", default="bf16,fp16")
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), "multiprocessors",
          torch.cuda.get_device_properties(0).multi_processor_count, flush=True)
    for m, n, k, dtype in shape_and_dtype_runs(args.shapes, args.dtypes):
        probe(m, n, k, dtype)


if __name__ == "__main__":
    main()
