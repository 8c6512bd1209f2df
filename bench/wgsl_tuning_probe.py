"""burn's matmul on the ``wgsl`` target of a GPU: which tiles, and does a power cap reorder them?

    CUBEPY_WGPU_ADAPTER=NVIDIA python bench/wgsl_tuning_probe.py [--shapes "4096,4096,4096"]
        [--dtypes float32,float16] [--settle-s 1.0] [--configs all|list]

For each shape and dtype, every candidate tiling of ``kernels.matmul``'s dense kernel (the one
burn launches for a 2-D product) on the adapter wgpu picks:

1. is checked against NumPy in float64 (64 rows of C);
2. is timed as the tuner's first rounds time it: one sample (runs lasting ~2 ms) per
   candidate, in turns, ten rounds, after idle ("cold");
3. is timed sustained: ``--settle-s`` of untimed runs back to back, then five samples of
   ~20 ms of runs, while ``nvidia-smi`` samples the SM clock and board power ("sustained").

Then the autotuner's benchmark loop itself (``cubepy.autotune.bench.benchmark``) picks among
the candidates twice: with the plain WGSL clock (``WgslTimer``: the close final) and with the
settling one (``SettlingWgslTimer``: the sustained final). Each pick is reported as its
sustained time over the best sustained time. cuBLAS (``torch.matmul``, float32 without TF32)
of the same shape is the peer where torch has CUDA.

With ``--burn``, ``burn.matmul`` itself on the ``wgpu`` backend instead: its first call of each
shape (which tunes among ``kernels.matmul_configs.WGSL``, on empty caches), then its time per
call against the 64x64x32 tiles with 128 invocations that were its only config before run 78,
in turns after 0.3 s of warm-up; ``--profile`` adds cProfile's view of each first call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sustained_probe import Sampler  # noqa: E402

import cubepy as cube  # noqa: E402
from cubepy.autotune import bench  # noqa: E402
from cubepy.autotune.clocks import SettlingWgslTimer, WgslTimer  # noqa: E402
from cubepy.backends.wgsl.device import get_device  # noqa: E402
from cubepy.ir import dtypes as dt  # noqa: E402
from kernels import matmul as mk  # noqa: E402
from kernels.layout import Context, View, contiguous_strides  # noqa: E402

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps); num_warps None: the backend's choice
# from the tile (256 invocations for these tiles, at most 64 accumulators each)
CANDIDATES = [(64, 64, 32, 8, 4), (64, 64, 32, 8, None), (64, 64, 16, 8, 4),
              (128, 64, 32, 8, None), (64, 128, 32, 8, None), (128, 64, 16, 8, None),
              (128, 128, 16, 8, None), (128, 128, 32, 8, None), (128, 128, 8, 8, None),
              (32, 32, 32, 8, None)]


def tiles_of(row: tuple) -> dict:
    bm, bn, bk, group, warps = row
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group, num_warps=warps)


def name_of(row: tuple) -> str:
    bm, bn, bk, group, warps = row
    return f"{bm}x{bn}x{bk} g{group}" + (f" w{warps}" if warps else "")


def dense_plan(m: int, n: int, k: int, dtype: str, rng: np.random.Generator):
    """A dense (M, K) @ (K, N) plan on wgsl, and its host operands."""
    ctx = Context("wgsl", lambda numel, d: cube.empty((numel,), d, device="wgpu"))
    a_host = rng.standard_normal((m, k), np.float32).astype(dtype)
    b_host = rng.standard_normal((k, n), np.float32).astype(dtype)
    cube_dtype = dt.from_name(dtype)

    def view(host):
        return View(cube.asarray(host.reshape(-1), device="wgpu"), 0, host.shape,
                    contiguous_strides(host.shape), cube_dtype)

    a, b = view(a_host), view(b_host)
    c = ctx.new((m, n), cube_dtype)
    plan = mk._plan(ctx, a, b, c, (0, 0, 0), (0, 0), (0, 0), 1, 1)
    return plan, a_host, b_host


def rel_error(plan, a_host, b_host) -> float:
    rows = min(plan.m, 64)
    got = cube.to_numpy(plan.c.storage)[: rows * plan.n].reshape(rows, plan.n)
    want = a_host[:rows].astype(np.float64) @ b_host.astype(np.float64)
    return float(np.abs(got - want).max() / np.abs(want).max())


def cold_times(plan, rows: list[tuple], timer: WgslTimer, rounds: int = 10) -> dict:
    """Seconds per run, the tuner's first-rounds pattern: ~2 ms samples in turns."""
    repeats = {}
    for row in rows:
        once = timer(lambda r=row: mk.run(plan, **tiles_of(r)))
        repeats[row] = max(1, min(100, int(bench.SAMPLE_SECONDS / max(once, 1e-7))))
    samples = {row: [] for row in rows}
    for _ in range(rounds):
        for row in rows:
            count = repeats[row]
            samples[row].append(timer(lambda r=row: mk.run(plan, **tiles_of(r)), count) / count)
    return {row: statistics.median(s) for row, s in samples.items()}


def sustained_time(plan, row: tuple, timer: SettlingWgslTimer, settle_s: float,
                   per_run: float) -> tuple[float, str]:
    """Seconds per run after ``settle_s`` of the same runs back to back, and what the
    sampler saw."""
    run = lambda: mk.run(plan, **tiles_of(row))  # noqa: E731
    count = max(1, min(200, int(20e-3 / per_run)))
    with Sampler() as sampler:
        timer.settle(run, max(1, int(settle_s / per_run)))
        times = [timer(run, count) / count for _ in range(5)]
    return statistics.median(times), sampler.summary()


def tuner_pick(plan, rows: list[tuple], timer) -> tuple:
    """The config ``bench.benchmark`` picks with ``timer``."""
    candidates = [(i, cube.Config(**tiles_of(row))) for i, row in enumerate(rows)]
    snapshot = bench.Snapshot({"c": plan.c.storage})
    outcomes = bench.benchmark(candidates, lambda cfg: mk.run(plan, **cfg.kwargs),
                               lambda _: {"c": bench.to_host(plan.c.storage)}, snapshot, timer)
    best = min((o for o in outcomes if o.status == "ok"), key=lambda o: o.median)
    return rows[best.index]


def cublas_float32(m: int, n: int, k: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    from triton.testing import do_bench

    return do_bench(lambda: torch.matmul(a, b)) / 1e3


def probe(shape: tuple[int, int, int], dtype: str, rows: list[tuple], settle_s: float) -> None:
    m, n, k = shape
    device = get_device()
    plan, a_host, b_host = dense_plan(m, n, k, dtype, np.random.default_rng(0))
    flops = 2 * m * n * k
    print(f"\n{m}x{n}x{k} {dtype} on {device.adapter_summary}")
    checked = []
    for row in rows:
        started = time.perf_counter()
        try:
            mk.run(plan, **tiles_of(row))
        except cube.UnsupportedError as err:  # more workgroup memory than the adapter has
            print(f"  {name_of(row):<18} {str(err).splitlines()[0].split(': ', 1)[-1]}")
            continue
        err = rel_error(plan, a_host, b_host)
        ok = err < (1e-5 if dtype == "float32" else 2e-3)
        print(f"  {name_of(row):<18} compiled and ran in {time.perf_counter() - started:6.2f} s;"
              f" rel err {err:.1e} {'ok' if ok else 'WRONG'}", flush=True)
        if ok:
            checked.append(row)
    plain, settling = WgslTimer(), SettlingWgslTimer()
    cold = cold_times(plan, checked, plain)
    sustained = {}
    for row in sorted(checked, key=cold.get):
        sustained[row] = sustained_time(plan, row, settling, settle_s, cold[row])
        time.sleep(1.0)  # let the board cool a little before the next burst
    best_cold = min(cold.values())
    best_sustained = min(t for t, _ in sustained.values())
    peer = cublas_float32(m, n, k)
    print(f"  {'config':<18}{'cold ms':>9}{'/best':>7}{'sust. ms':>10}{'/best':>7}"
          f"{'TFLOP/s':>9}{'vs fp32 cuBLAS':>16}   during the sustained runs")
    for row in sorted(checked, key=lambda r: sustained[r][0]):
        t, seen = sustained[row]
        versus = f"{peer / t:.3f}x" if peer else "-"
        print(f"  {name_of(row):<18}{cold[row] * 1e3:9.3f}{cold[row] / best_cold:7.3f}"
              f"{t * 1e3:10.3f}{t / best_sustained:7.3f}{flops / t / 1e12:9.1f}{versus:>16}"
              f"   {seen}", flush=True)
    if peer:
        print(f"  cuBLAS float32 (no TF32): {peer * 1e3:.3f} ms, {flops / peer / 1e12:.1f} TFLOP/s")
    for label, timer in (("plain clock (close final)", plain),
                         ("settling clock (sustained final)", settling)):
        started = time.perf_counter()
        pick = tuner_pick(plan, checked, timer)
        print(f"  tuner with the {label}: {name_of(pick)} in "
              f"{time.perf_counter() - started:.1f} s; sustained "
              f"{sustained[pick][0] / best_sustained:.3f}x the best", flush=True)


def in_turns(calls: list, seconds: float = 0.3, samples: int = 9) -> list[float]:
    """Median seconds per call of each of ``calls``, timed in turns (~5 ms samples) after
    ``seconds`` of them in turns untimed: right after a pause the first milliseconds of
    Vulkan work on the H200 ran up to 3.6x slower (runs 79 and 81)."""
    timer = WgslTimer()
    once = [max(timer(call), 1e-6) for call in calls]
    counts = [max(1, min(100, int(5e-3 / t))) for t in once]
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for call, count in zip(calls, counts):
            timer(call, count)
    times = [[] for _ in calls]
    for _ in range(samples):
        for call, count, out in zip(calls, counts, times):
            out.append(timer(call, count) / count)
    return [statistics.median(t) for t in times]


def burn_probe(shape: tuple[int, int, int], dtype: str, profile: bool = False) -> None:
    """``burn.matmul`` on wgpu: the first call (tuning), then tuned against the old tiles;
    with ``profile``, cProfile's view of the first call too."""
    import cProfile
    import pstats

    import burn

    m, n, k = shape
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((m, k), np.float32).astype(dtype)
    b_host = rng.standard_normal((k, n), np.float32).astype(dtype)
    a, b = burn.from_numpy(a_host, "wgpu"), burn.from_numpy(b_host, "wgpu")
    tunings = mk.tuned_matmul.stats.tunings
    profiler = cProfile.Profile()
    started = time.perf_counter()
    if profile:
        profiler.enable()
    c = burn.matmul(a, b)
    profiler.disable()
    rows = min(m, 64)
    want = a_host[:rows].astype(np.float64) @ b_host.astype(np.float64)
    got = c.numpy()[:rows]
    err = float(np.abs(got - want).max() / np.abs(want).max())
    first = time.perf_counter() - started
    plan, _, _ = dense_plan(m, n, k, dtype, rng)
    tuned, old = in_turns([lambda: burn.matmul(a, b),
                           lambda: mk.run(plan, **tiles_of(CANDIDATES[0]))])
    chosen = mk.tuned_matmul.last_config
    print(f"  burn.matmul {m}x{n}x{k} {dtype}: first call {first:.2f} s "
          f"({mk.tuned_matmul.stats.tunings - tunings} tuning), rel err {err:.1e}; "
          f"{tuned * 1e3:.3f} ms per call with {chosen}, {2 * m * n * k / tuned / 1e12:.1f} "
          f"TFLOP/s; the old 64x64x32 w4 tiles {old * 1e3:.3f} ms: {old / tuned:.2f}x faster",
          flush=True)
    if profile:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(40)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="4096,4096,4096;2048,2048,2048;1024,1024,1024")
    parser.add_argument("--dtypes", default="float32,float16")
    parser.add_argument("--settle-s", type=float, default=1.0)
    parser.add_argument("--burn", action="store_true", help="burn.matmul, tuned, instead")
    parser.add_argument("--profile", action="store_true", help="with --burn: cProfile too")
    args = parser.parse_args()
    print(f"on {get_device().adapter_summary}")
    for text in args.shapes.split(";"):
        shape = tuple(int(x) for x in text.split(","))
        for dtype in args.dtypes.split(","):
            if dtype == "float16" and "float16" not in get_device().supported_dtypes:
                print(f"\n{text} float16: the adapter has no shader-f16")
            elif args.burn:
                burn_probe(shape, dtype, args.profile)
            else:
                probe(shape, dtype, CANDIDATES, args.settle_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
