"""All four CPU-target figures in one run, printed as a markdown table for BENCHMARKS.md.

Every throughput figure is the median of several runs after a warm-up, next to its NumPy peer
measured in the same run; compile and start-up figures come from fresh processes
(see asv_bench/startup.py).

    .venv/bin/python bench/cpu_bench.py [--repeat 7] [--blocks 128,128,64] [--target cpu]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
from pathlib import Path

import numpy as np

# bench/ is a folder of scripts, not a package: reach the shared kernels from the repo root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asv_bench import cpu_kernels as k  # noqa: E402
from asv_bench import startup  # noqa: E402

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
               "CUBEPY_TARGET")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def thread_count() -> str:
    try:
        import numba

        return str(numba.config.NUMBA_NUM_THREADS)
    except ImportError:
        return "?"


def row(name: str, ours: float, peer_name: str, peer: float, check: str) -> str:
    # speed-up = peer time / our time: above 1 means cubepy is faster.
    return (f"| {name} | {ours * 1e3:.2f} ms | {peer_name} | {peer * 1e3:.2f} ms "
            f"| {peer / ours:.2f}x | {check} |")


def max_error(got: np.ndarray, want: np.ndarray) -> str:
    return f"max err {float(np.max(np.abs(got.astype(np.float64) - want))):.1e}"


def bench_gelu(args, rng) -> str:
    x = rng.standard_normal(args.gelu_n, dtype=np.float32)
    out = np.empty_like(x)
    ours = k.median_seconds(lambda: k.gelu(x, out, target=args.target), args.repeat)
    peer = k.median_seconds(lambda: k.gelu_numpy(x), args.repeat)
    from scipy.special import erf

    x64 = x.astype(np.float64)
    want = x64 * 0.5 * (1.0 + erf(x64 / np.sqrt(2.0)))
    return row(f"fused gelu, {args.gelu_n / 2**20:.0f}M f32", ours,
               "NumPy + scipy.special.erf", peer, max_error(out, want))


def bench_softmax(args, rng) -> str:
    rows, cols = args.softmax_shape
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.empty_like(x)
    ours = k.median_seconds(lambda: k.softmax(x, out, target=args.target), args.repeat)
    peer = k.median_seconds(lambda: k.softmax_numpy(x), args.repeat)
    return row(f"row softmax {rows}x{cols} f32", ours, "NumPy", peer,
               max_error(out, k.softmax_numpy(x.astype(np.float64))))


def bench_matmul(args, rng) -> str:
    n = args.matmul_n
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    blocks = args.blocks
    ours = k.median_seconds(lambda: k.matmul(a, b, out, blocks=blocks, target=args.target),
                            args.repeat)
    peer = k.median_seconds(lambda: np.matmul(a, b), args.repeat)
    bm, bn, bk = blocks
    gflops = 2 * n**3 / ours / 1e9
    return row(f"matmul {n}^3 f32, tiles {bm}x{bn}x{bk} ({gflops:.0f} GFLOP/s)", ours,
               "numpy.matmul", peer,
               max_error(out, a.astype(np.float64) @ b.astype(np.float64)))


def bench_startup(args) -> list[str]:
    compiles = [startup.compile_details() for _ in range(args.startup_repeat)]
    compile_s = float(np.median([c["compile"] for c in compiles]))
    first_s = float(np.median([c["first_in_process"] for c in compiles]))
    ours = float(np.median([startup.first_result_seconds("cubepy")
                            for _ in range(args.startup_repeat)]))
    peer = float(np.median([startup.first_result_seconds("numpy")
                            for _ in range(args.startup_repeat)]))
    return [
        f"| compile: new kernel's first call (softmax), empty cache | {compile_s * 1e3:.0f} ms "
        f"| - | - | - | first kernel in a fresh process: {first_s * 1e3:.0f} ms |",
        row("fresh process to first result, warm disk cache", ours,
            "fresh process, NumPy", peer, "softmax 256x1000"),
    ]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7, help="timed runs per figure (median)")
    p.add_argument("--startup-repeat", type=int, default=3, help="fresh processes per figure")
    p.add_argument("--blocks", default=",".join(map(str, k.MATMUL_BLOCKS)),
                   help="matmul BLOCK_M,BLOCK_N,BLOCK_K")
    p.add_argument("--target", default="cpu", help="cubepy target (default cpu)")
    p.add_argument("--gelu-n", type=int, default=1 << 24)
    p.add_argument("--softmax-shape", default="4096,1024")
    p.add_argument("--matmul-n", type=int, default=1024)
    p.add_argument("--only", default="gelu,softmax,matmul,startup",
                   help="comma-separated subset of gelu,softmax,matmul,startup")
    args = p.parse_args(argv)
    args.blocks = tuple(int(v) for v in args.blocks.split(","))
    args.softmax_shape = tuple(int(v) for v in args.softmax_shape.split(","))
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    rng = np.random.default_rng(0)
    only = set(args.only.split(","))
    command = "python bench/cpu_bench.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    print(f"command: `{command.strip()}`  ")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, {thread_count()} Numba threads, "
          f"Python {platform.python_version()}, NumPy {np.__version__}  ")
    # Thread-count variables change every figure (BLAS inside the parallel grid): show them.
    env = [f"{v}={os.environ[v]}" for v in THREAD_VARS if v in os.environ]
    if env:
        print(f"environment: {' '.join(env)}  ")
    print(f"date: {datetime.date.today().isoformat()}  ")
    print("speed-up = NumPy time / cubepy time (above 1: cubepy is faster); "
          f"median of {args.repeat} runs after a warm-up\n")
    print("| workload | cubepy | peer | peer time | speed-up | check |")
    print("| --- | --- | --- | --- | --- | --- |")
    steps = [("gelu", bench_gelu), ("softmax", bench_softmax), ("matmul", bench_matmul)]
    for name, fn in steps:
        if name in only:
            print(fn(args, rng), flush=True)
    if "startup" in only:
        for line in bench_startup(args):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
