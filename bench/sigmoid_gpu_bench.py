"""cube.sigmoid on a CUDA GPU, now exp(x) / (1 + exp(x)) below 0 (one exp, a select), against
torch.sigmoid and Triton's own tl.sigmoid (1 / (1 + exp(-x))) in a kernel of the same shape,
and a device copy of the same bytes (the bandwidth peer); timed in turns with CUDA events
(``burn_gpu_bench.gpu_seconds``), five turns, medians.

    source .whl/gpu-env.sh && python3 bench/sigmoid_gpu_bench.py [--n 67108864]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import gpu_seconds  # noqa: E402

import cubepy as cube  # noqa: E402

BLOCK = 1024


@cube.kernel
def cube_sigmoid(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    cube.store(out + offs, cube.sigmoid(cube.load(x + offs, mask=m)), mask=m)


@triton.jit
def triton_sigmoid(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m).to(tl.float32)
    tl.store(out + offs, tl.sigmoid(v).to(out.dtype.element_ty), mask=m)


def bench(n: int, dtype: torch.dtype) -> None:
    grid = (triton.cdiv(n, BLOCK),)
    x = torch.randn(n, device="cuda", dtype=dtype) * 20
    out, peer = torch.empty_like(x), torch.empty_like(x)
    cube_sigmoid[grid](x, out, n, BLOCK=BLOCK)
    err = (out.float() - torch.sigmoid(x.float())).abs().max().item()
    runs = {
        "cube.sigmoid": lambda: cube_sigmoid[grid](x, out, n, BLOCK=BLOCK),
        "tl.sigmoid": lambda: triton_sigmoid[grid](x, out, n, BLOCK=BLOCK),
        "torch.sigmoid": lambda: torch.sigmoid(x, out=out),
        "copy": lambda: peer.copy_(x),
    }
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(5):
        for name, fn in runs.items():
            times[name].append(gpu_seconds(fn))
    med = {k: statistics.median(v) for k, v in times.items()}
    gbs = 2 * n * x.element_size() / 1e9
    print(f"{dtype}: max |cube - torch| {err:.2e}")
    for name, t in med.items():
        print(f"  {name:14s} {t * 1e6:8.1f} us  {gbs / t:7.0f} GB/s  "
              f"copy/this {med['copy'] / t:.3f}x  torch/this {med['torch.sigmoid'] / t:.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1 << 26)
    n = parser.parse_args().n
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}, n = {n}")
    for dtype in (torch.float32, torch.bfloat16):
        bench(n, dtype)


if __name__ == "__main__":
    main()
