"""The line-by-line builtins on a CUDA GPU through Triton, each against its torch peer on the
same data, checked first: ``cube.sort`` (torch.sort, values), ``cube.topk`` (torch.topk),
``cube.gather`` (torch.gather), ``cube.reduce`` with a Welford combine function (torch.var_mean)
and ``cube.histogram`` (torch.bincount). One cube per block of rows; timed in turns with CUDA
events (``burn_gpu_bench.gpu_seconds``), five turns, medians; ``torch/this`` above 1 means
cubepy is faster.

    source .whl/gpu-env.sh && python3 bench/line_ops_gpu_bench.py [--rows 16384]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parents[1]
for folder in (ROOT / "bench", ROOT, ROOT / "tests", ROOT / "tests" / "conformance"):
    sys.path.insert(0, str(folder))

from burn_gpu_bench import gpu_seconds  # noqa: E402
from test_combine_functions import welford  # noqa: E402 - the combine function the tests check

import cubepy as cube  # noqa: E402

ROWS_PER_CUBE = 8


@cube.kernel
def sort_rows(x, out, C: cube.Comptime[int], RB: cube.Comptime[int]):
    offs = (cube.cube_pos(0) * RB + cube.arange(0, RB))[:, None] * C + cube.arange(0, C)[None, :]
    cube.store(out + offs, cube.sort(cube.load(x + offs)))


@cube.kernel
def topk_rows(x, out, C: cube.Comptime[int], K: cube.Comptime[int], RB: cube.Comptime[int]):
    rows = (cube.cube_pos(0) * RB + cube.arange(0, RB))[:, None]
    v = cube.load(x + rows * C + cube.arange(0, C)[None, :])
    cube.store(out + rows * K + cube.arange(0, K)[None, :], cube.topk(v, K))


@cube.kernel
def gather_rows(x, index, out, C: cube.Comptime[int], RB: cube.Comptime[int]):
    offs = (cube.cube_pos(0) * RB + cube.arange(0, RB))[:, None] * C + cube.arange(0, C)[None, :]
    cube.store(out + offs, cube.gather(cube.load(x + offs), cube.load(index + offs), 1))


@cube.kernel
def var_mean_rows(x, var, mean, C: cube.Comptime[int], RB: cube.Comptime[int]):
    rows = cube.cube_pos(0) * RB + cube.arange(0, RB)
    v = cube.load(x + rows[:, None] * C + cube.arange(0, C)[None, :])
    mu, m2, count = cube.reduce((v, cube.zeros((RB, C), cube.float32),
                                 cube.full((RB, C), 1.0, cube.float32)), 1, welford)
    cube.store(var + rows, m2 / count)
    cube.store(mean + rows, mu)


@cube.kernel
def histogram_blocks(x, counts, n, BLOCK: cube.Comptime[int], BINS: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    part = cube.histogram(cube.load(x + offs, mask=offs < n, other=-1), BINS)
    cube.atomic_add(counts + cube.arange(0, BINS), part, sem="relaxed")


def timed(runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(5):
        for name, fn in runs.items():
            times[name].append(gpu_seconds(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def report(title: str, med: dict[str, float], peer: str, nbytes: int) -> None:
    print(title)
    for name, t in med.items():
        print(f"  {name:18s} {t * 1e6:9.1f} us  {nbytes / t / 1e9:7.0f} GB/s  "
              f"{peer}/this {med[peer] / t:.3f}x")


def bench_sort_and_topk(rows: int, c: int, k: int = 8) -> None:
    grid = (rows // ROWS_PER_CUBE,)
    x = torch.randn(rows, c, device="cuda")
    out, top = torch.empty_like(x), torch.empty(rows, k, device="cuda")
    sort_rows[grid](x, out, C=c, RB=ROWS_PER_CUBE)
    assert torch.equal(out, torch.sort(x, dim=1).values), "sort differs from torch's"
    med = timed({"cube.sort": lambda: sort_rows[grid](x, out, C=c, RB=ROWS_PER_CUBE),
                 "torch.sort": lambda: torch.sort(x, dim=1)})
    report(f"sort of {rows} rows of {c} float32", med, "torch.sort", 2 * x.numel() * 4)
    topk_rows[grid](x, top, C=c, K=k, RB=ROWS_PER_CUBE)
    assert torch.equal(top, torch.topk(x, k, dim=1).values), "topk differs from torch's"
    med = timed({"cube.topk": lambda: topk_rows[grid](x, top, C=c, K=k, RB=ROWS_PER_CUBE),
                 "torch.topk": lambda: torch.topk(x, k, dim=1)})
    report(f"top {k} of {rows} rows of {c} float32", med, "torch.topk", x.numel() * 4)


def sweep_sort_blocks(rows: int, c: int) -> None:
    """Long rows: the sort's time for each number of rows per cube and of warps."""
    x = torch.randn(rows, c, device="cuda")
    out = torch.empty_like(x)
    peer = gpu_seconds(lambda: torch.sort(x, dim=1))
    print(f"sort of {rows} rows of {c} float32, by rows per cube and warps "
          f"(torch.sort {peer * 1e6:.1f} us):")
    for rb in (1, 2, 4, 8):
        for warps in (4, 8, 16):
            grid = (rows // rb,)
            t = gpu_seconds(lambda grid=grid, rb=rb, warps=warps: sort_rows[grid](
                x, out, C=c, RB=rb, num_warps=warps))
            print(f"  {rb} rows, {warps:2d} warps: {t * 1e6:8.1f} us  torch.sort/this "
                  f"{peer / t:.3f}x")


def bench_gather(rows: int, c: int = 256) -> None:
    grid = (rows // ROWS_PER_CUBE,)
    x = torch.randn(rows, c, device="cuda")
    index = torch.randint(0, c, (rows, c), device="cuda", dtype=torch.int32)
    index64, out = index.long(), torch.empty_like(x)
    gather_rows[grid](x, index, out, C=c, RB=ROWS_PER_CUBE)
    assert torch.equal(out, torch.gather(x, 1, index64)), "gather differs from torch's"
    med = timed({"cube.gather": lambda: gather_rows[grid](x, index, out, C=c, RB=ROWS_PER_CUBE),
                 "torch.gather": lambda: torch.gather(x, 1, index64)})
    report(f"gather along rows of {rows} x {c} float32", med, "torch.gather", 3 * x.numel() * 4)


def bench_welford(rows: int, c: int = 1024) -> None:
    grid = (rows // ROWS_PER_CUBE,)
    x = torch.randn(rows, c, device="cuda") * 3 + 7
    var, mean = torch.empty(rows, device="cuda"), torch.empty(rows, device="cuda")
    var_mean_rows[grid](x, var, mean, C=c, RB=ROWS_PER_CUBE)
    want_var, want_mean = torch.var_mean(x, dim=1, correction=0)
    print(f"welford: max |var - torch| {(var - want_var).abs().max().item():.2e}, "
          f"|mean - torch| {(mean - want_mean).abs().max().item():.2e}")
    med = timed({"cube.reduce(welford)": lambda: var_mean_rows[grid](
        x, var, mean, C=c, RB=ROWS_PER_CUBE),
        "torch.var_mean": lambda: torch.var_mean(x, dim=1, correction=0)})
    report(f"var and mean of {rows} rows of {c} float32", med, "torch.var_mean", x.numel() * 4)


def bench_histogram(n: int = 1 << 24, bins: int = 64, block: int = 1024) -> None:
    values = torch.randint(0, bins, (n,), device="cuda", dtype=torch.int32)
    counts = torch.zeros(bins, device="cuda", dtype=torch.int32)
    grid = (triton.cdiv(n, block),)
    histogram_blocks[grid](values, counts, n, BLOCK=block, BINS=bins)
    assert torch.equal(counts.long(), torch.bincount(values, minlength=bins)), "histogram"
    med = timed({"cube.histogram": lambda: histogram_blocks[grid](
        values, counts, n, BLOCK=block, BINS=bins),
        "torch.bincount": lambda: torch.bincount(values, minlength=bins)})
    report(f"histogram of {n} int32 into {bins} bins", med, "torch.bincount", n * 4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=16384)
    rows = parser.parse_args().rows
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}, rows = {rows}")
    for c in (128, 1024):
        bench_sort_and_topk(rows, c)
    sweep_sort_blocks(rows, 1024)
    bench_gather(rows)
    bench_welford(rows)
    bench_histogram()


if __name__ == "__main__":
    main()
