"""cubepy's random builtins and value hints on a CUDA GPU, against Triton's and torch's.

    source .whl/gpu-env.sh && python3 bench/random_gpu_bench.py [--n 67108864]

1. Bits: ``cube.randint4x``/``randint``/``rand``/``randn`` compiled for the GPU against Triton's
   ``tl.*`` in kernels of the same shape (equal words, equal uniforms, normals within 2e-6).
2. Speed: a fused dropout (``rand(seed, offs) > p``, scale the kept values) over ``--n``
   float32 values: examples/dropout.py's two kernels (one ``rand`` per value, one ``rand4x``
   per four), the first with its block start hinted, and Triton's with ``tl.rand``,
   against ``torch.nn.functional.dropout`` and a device copy of the same bytes (the bandwidth
   peer), timed in turns with CUDA events (``burn_gpu_bench.gpu_seconds``); GB/s counts one read
   and one write.
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
from examples.dropout import dropout4x_kernel, dropout_kernel  # noqa: E402

BLOCK = 1024


@cube.kernel
def cube_streams(seed, words, uniform, normal, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    w0, w1, w2, w3 = cube.randint4x(seed, offs)
    cube.store(words + offs, cube.randint(seed, offs) ^ w1 ^ w2 ^ w3, mask=m)
    cube.store(uniform + offs, cube.rand(seed, offs), mask=m)
    cube.store(normal + offs, cube.randn(seed, offs), mask=m)


@triton.jit
def triton_streams(seed, words, uniform, normal, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    w0, w1, w2, w3 = tl.randint4x(seed, offs)
    tl.store(words + offs, tl.randint(seed, offs) ^ w1 ^ w2 ^ w3, mask=m)
    tl.store(uniform + offs, tl.rand(seed, offs), mask=m)
    tl.store(normal + offs, tl.randn(seed, offs), mask=m)


@cube.kernel
def cube_dropout_hinted(x, out, n, p, seed, BLOCK: cube.Comptime[int]):
    # examples/dropout.py's dropout_kernel with the block start hinted: the hint's effect
    start = cube.multiple_of(cube.cube_pos(0) * BLOCK, BLOCK)
    offs = start + cube.arange(0, BLOCK)
    m = offs < n
    v = cube.load(x + offs, mask=m)
    cube.store(out + offs, cube.where(cube.rand(seed, offs) > p, v / (1.0 - p), 0.0), mask=m)


@triton.jit
def triton_dropout(x, out, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    keep = tl.rand(seed, offs) > p
    tl.store(out + offs, tl.where(keep, v / (1.0 - p), 0.0), mask=m)


def check_bits(seed: int, n: int) -> None:
    got = [torch.zeros(n, dtype=torch.uint32, device="cuda"),
           torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")]
    want = [torch.zeros_like(t) for t in got]
    grid = (triton.cdiv(n, BLOCK),)
    cube_streams[grid](seed, *got, n, BLOCK=BLOCK)
    triton_streams[grid](seed, *want, n, BLOCK=BLOCK)
    torch.cuda.synchronize()
    words_equal = torch.equal(got[0].view(torch.int32), want[0].view(torch.int32))
    print(f"bits, seed {seed}, {n} offsets: words equal {words_equal}, uniforms equal "
          f"{torch.equal(got[1], want[1])}, normals max |diff| "
          f"{(got[2] - want[2]).abs().max().item():.2e}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 26)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, Triton "
          f"{triton.__version__}", flush=True)
    for seed in (1234, -5, 2**40 + 77):
        check_bits(seed, 1 << 20)
    n, p, seed = args.n, 0.5, 42
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, BLOCK),)
    rows = {
        "cubepy dropout (cube.rand)": lambda: dropout_kernel[grid](
            x, out, n, p, seed, BLOCK=BLOCK),
        "cubepy dropout, hinted": lambda: cube_dropout_hinted[grid](
            x, out, n, p, seed, BLOCK=BLOCK),
        "cubepy dropout, one rand4x per 4 values": lambda: dropout4x_kernel[grid](
            x, out, n, p, seed, BLOCK=BLOCK),
        "Triton dropout (tl.rand)": lambda: triton_dropout[grid](x, out, n, p, seed, BLOCK=BLOCK),
        "torch.nn.functional.dropout": lambda: torch.nn.functional.dropout(x, p, training=True),
        "device copy (peer)": lambda: out.copy_(x),
    }
    for name, fn in rows.items():
        if "dropout" in name and "torch" not in name:  # a kernel's result: kept ones scaled
            out.zero_()
            fn()
            kept = out != 0
            scaled = torch.equal(out[kept], x[kept] / (1.0 - p))
            print(f"{name}: kept {kept.float().mean().item():.4f}, kept values scaled {scaled}")
        fn()
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.rounds):  # in turns, so clocks and heat treat every row alike
        for name, fn in rows.items():
            times[name].append(gpu_seconds(fn))
    copy = statistics.median(times["device copy (peer)"])
    torch_time = statistics.median(times["torch.nn.functional.dropout"])
    print(f"\n{n} float32, p={p}, {args.rounds} rounds in turns (medians)")
    print("| kernel | µs | GB/s | vs copy | vs torch dropout |")
    print("| --- | --- | --- | --- | --- |")
    for name, samples in times.items():
        t = statistics.median(samples)
        print(f"| {name} | {t * 1e6:.1f} | {2 * 4 * n / t / 1e9:.0f} | {copy / t:.3f}x | "
              f"{torch_time / t:.3f}x |")


if __name__ == "__main__":
    main()
