"""burn on a CUDA GPU (the H200): each op beside the raw kernel, torch and the copy bandwidth.

    python bench/burn_gpu_bench.py [--json out.json] [--quick]
    python bench/burn_gpu_bench.py --matmul-shapes "8192,8192,1024;16,8192,8192"
    python bench/burn_gpu_bench.py --host-layers "16,8192,8192;2048,2048,512"

Rows, all measured in this one run with CUDA events (median of 7 samples, each a batch of
back-to-back calls lasting at least ~20 ms, after a warm-up that also autotunes):

- matmul bf16 8192^3: ``burn.matmul`` on the ``Cuda`` backend, the raw kernel launcher
  ``kernels.matmul.matmul`` on the same storage, and ``torch.matmul`` (cuBLAS); TFLOP/s.
- softmax (last axis) and layer norm (last axis, with weight and bias) on 8192 x 8192 bf16:
  ``burn`` and torch, as GB/s of one read plus one write, against a device-to-device copy
  of the same bytes (``torch.Tensor.copy_``); and burn's host cost per call of each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch

import burn
import cubepy as cube
from cubepy.ir import dtypes as dt
from kernels import matmul as matmul_kernels
from kernels.layout import View, contiguous_strides


def from_torch(t: torch.Tensor, backend: burn.Backend) -> burn.Tensor:
    """A burn tensor over a contiguous torch CUDA tensor's memory (no copy)."""
    t = t.contiguous()
    dtype = dt.from_name(str(t.dtype).removeprefix("torch."))
    view = View(t.reshape(-1), 0, tuple(t.shape), contiguous_strides(t.shape), dtype)
    return burn.Tensor(view, backend)


def gpu_seconds(fn: Callable[[], object], min_batch_s: float = 0.02, samples: int = 7) -> float:
    """Median seconds of one call: CUDA events around batches of back-to-back calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    once = max(start.elapsed_time(end) / 1e3, 1e-6)
    batch = max(1, min(200, int(min_batch_s / once)))
    times = []
    for _ in range(samples):
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / batch)
    return statistics.median(times)


def gpu_only_seconds(fn: Callable[[], object], calls: int = 20, samples: int = 5) -> float:
    """Median GPU seconds of one call: ``calls`` calls queued behind a GPU sleep that outlasts
    the host's queuing, between CUDA events."""
    fn()
    torch.cuda.synchronize()
    host = time.perf_counter()
    for _ in range(calls):
        fn()
    host = time.perf_counter() - host
    torch.cuda.synchronize()
    cycles = int(max(host, 1e-4) * 3 * 2e9)  # ~2 GHz: three times the host's queuing time
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples):
        torch.cuda._sleep(cycles)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / calls)
    return statistics.median(times)


def compared_times(ours: Callable[[], object], theirs: Callable[[], object],
                   queued_calls: int = 20) -> dict:
    """The row fields of a burn call timed beside torch's: ``wall_ms`` and ``gpu_ms`` (burn,
    torch; ``gpu_seconds`` and ``gpu_only_seconds``) and ``gpu_ratio``, torch's GPU time over
    burn's (above 1: burn is faster). ``queued_calls`` behind the sleep must launch fewer
    kernels than CUDA's queue holds (about a thousand), or the host waits for the GPU."""
    ours_gpu = gpu_only_seconds(ours, calls=queued_calls)
    theirs_gpu = gpu_only_seconds(theirs, calls=queued_calls)
    return {"wall_ms": [round(gpu_seconds(ours) * 1e3, 3), round(gpu_seconds(theirs) * 1e3, 3)],
            "gpu_ms": [round(ours_gpu * 1e3, 3), round(theirs_gpu * 1e3, 3)],
            "gpu_ratio": round(theirs_gpu / ours_gpu, 3)}


def largest_relative_difference(ours: list, theirs: list[torch.Tensor], limit: float,
                                what: str) -> float:
    """The largest difference of burn's tensors from torch's, pair by pair, relative to the
    largest entry of torch's (three digits); exits naming ``what`` above ``limit``."""
    worst = 0.0
    for got, want in zip(ours, theirs):
        if isinstance(got, burn.Tensor):
            got = torch.from_numpy(got.to(burn.float32).numpy()).cuda()
        want = want.float()
        worst = max(worst, ((got.float() - want).abs().max() / want.abs().max()).item())
    if worst > limit:
        raise SystemExit(f"{what}: burn differs from torch by {worst:.3g} of the largest entry")
    return float(f"{worst:.3g}")


def host_us(fn: Callable[[], object], calls: int = 300, warmup: int = 1) -> float:
    """Host microseconds per call: launches queued back to back, synchronized once at the end
    (when this exceeds an op's GPU time, the op is bound by its host path)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def checked_operands(backend: burn.Backend, m: int, n: int, k: int) -> tuple:
    """Random bf16 A (M, K) and B (K, N) as torch tensors and burn tensors over the same
    memory, with burn.matmul's first product checked against torch's; and the seconds that
    first call took (it autotunes, or finds the shipped result)."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    ta, tb = from_torch(a, backend), from_torch(b, backend)
    start = time.perf_counter()
    got = torch.as_tensor(burn.matmul(ta, tb).prim.storage).reshape(m, n).float()
    first_s = time.perf_counter() - start
    expected = torch.matmul(a, b).float()
    error = float((got - expected).abs().max() / expected.abs().max())
    assert error < 2e-2, f"burn matmul differs from torch at {m}x{n}x{k}: {error}"
    return a, b, ta, tb, first_s


def matmul_rows(backend: burn.Backend, n: int) -> dict[str, float]:
    a, b, ta, tb, _ = checked_operands(backend, n, n, n)
    flop = 2 * n**3
    rows = {
        "burn.matmul": gpu_seconds(lambda: burn.matmul(ta, tb)),
        "kernels.matmul (raw)": gpu_seconds(
            lambda: matmul_kernels.matmul(backend.ctx, ta.prim, tb.prim, dt.bfloat16)),
        "torch.matmul (cuBLAS)": gpu_seconds(lambda: torch.matmul(a, b)),
    }
    return {name: flop / s / 1e12 for name, s in rows.items()}


def matmul_shape_rows(backend: burn.Backend, shapes: list[tuple[int, int, int]],
                      profile: bool = False) -> list[dict]:
    """burn.matmul against torch.matmul on (M, N, K) shapes, timed in turns (five rounds);
    the first call of each shape autotunes (or finds the shipped result) and is timed too."""
    rows = []
    for m, n, k in shapes:
        a, b, ta, tb, first_s = checked_operands(backend, m, n, k)

        def ours_once(ta=ta, tb=tb):
            return burn.matmul(ta, tb)

        def cublas_once(a=a, b=b):
            return torch.matmul(a, b)

        turns = [(gpu_seconds(ours_once), gpu_seconds(cublas_once)) for _ in range(5)]
        ours = statistics.median(t[0] for t in turns)
        peer = statistics.median(t[1] for t in turns)
        host, peer_host = host_us(ours_once), host_us(cublas_once)
        rows.append({"shape": [m, n, k], "first_call_s": first_s, "burn_s": ours,
                     "cublas_s": peer, "vs_cublas": peer / ours, "host_us": host,
                     "torch_host_us": peer_host})
        print(f"  burn.matmul {m}x{n}x{k}: {2 * m * n * k / ours / 1e12:.0f} TFLOP/s, "
              f"{peer / ours:.3f}x cuBLAS (first call {first_s:.2f} s, host {host:.1f} µs "
              f"per call, torch.matmul's {peer_host:.1f})", flush=True)
        if profile:
            profile_host(ours_once)
    return rows


def kernel_events(fn: Callable[[], object], calls: int, warmup: int = 1) -> list:
    """torch.profiler's averaged events of the GPU work of ``calls`` calls of ``fn`` (after
    ``warmup`` calls): kernels and copies, each with its ``self_device_time_total`` (µs)
    and ``count``."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return [e for e in prof.key_averages() if e.device_type.name == "CUDA"]


def profile_host(fn: Callable[[], object], calls: int = 2000,
                 sync: Callable[[], None] = torch.cuda.synchronize) -> None:
    """Where the host time of ``calls`` calls goes: cProfile's top functions by own time
    (``sync`` waits for the device; a no-op on the cpu)."""
    import cProfile
    import pstats

    fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    sync()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def host_layer_rows(backend: burn.Backend, shapes: list[tuple[int, int, int]],
                    rounds: int = 5) -> list[dict]:
    """Host µs per call of burn.matmul's layers, outermost first, beside torch.matmul's, for
    products that take the dense kernel: each layer is the one below plus its own work. The
    layers take turns, ``rounds`` times; medians."""
    rows = []
    for m, n, k in shapes:
        layers = matmul_layers(backend, m, n, k)
        samples = {name: [] for name in layers}
        for _ in range(rounds):
            for name, fn in layers.items():
                samples[name].append(host_us(fn))
        row = {name: statistics.median(values) for name, values in samples.items()}
        rows.append({"shape": [m, n, k], "host_us": row})
        print(f"  host µs per call, {m}x{n}x{k} (median of {rounds} rounds in turns):")
        for name, us in row.items():
            print(f"    {name:<38} {us:6.1f}  {us / row['torch.matmul (peer)']:5.2f}x torch")
    return rows


def matmul_layers(backend: burn.Backend, m: int, n: int, k: int) -> dict[str, Callable]:
    """burn.matmul of (M, K) by (K, N) bf16 as calls to each of its layers in turn, then
    pieces of the host path alone."""
    a, b, ta, tb, _ = checked_operands(backend, m, n, k)
    ctx = backend.ctx
    c = ctx.new((m, n), dt.bfloat16)
    plan = matmul_kernels._plan(ctx, ta.prim, tb.prim, c, (0, 0, 0), (0, 0), (0, 0), 1, 1)
    buckets = tuple(map(matmul_kernels.pow2_anchor, (m, n, k)))
    chosen = next(kwargs for key, kwargs in matmul_kernels._CHOSEN.items()
                  if key[-5:-2] == buckets)  # the key's (M, N, K) buckets
    assert not {"PERSISTENT", "SPLIT_K"} & set(chosen), f"{m}x{n}x{k} takes {chosen}"
    tiling = {key: chosen[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M",
                                           "num_warps", "num_stages")}
    grid = (cube.cdiv(m, tiling["BLOCK_M"]) * cube.cdiv(n, tiling["BLOCK_N"]),)
    even = not (m % tiling["BLOCK_M"] or n % tiling["BLOCK_N"] or k % tiling["BLOCK_K"])
    launch = matmul_kernels.matmul_dense_kernel[grid]
    return {
        "burn.matmul": lambda: burn.matmul(ta, tb),
        "kernels.matmul.matmul (plan, key, C)": lambda: matmul_kernels.matmul(
            ctx, ta.prim, tb.prim, dt.bfloat16),
        "kernels.matmul._launch (key)": lambda: matmul_kernels._launch(plan),
        "kernels.matmul.run (tiles)": lambda: matmul_kernels.run(plan, **chosen),
        "cubepy launch": lambda: launch(ta.prim.storage, tb.prim.storage, c.storage, m, n, k,
                                        ACC=dt.float32, DT=dt.bfloat16, EVEN=even,
                                        target="triton", **tiling),
        # beside the stack: the pieces that kernels.matmul.matmul adds to run
        "cubepy launch, a new C each call": lambda: launch(
            ta.prim.storage, tb.prim.storage, torch.empty(m * n, dtype=torch.bfloat16,
                                                          device="cuda"),
            m, n, k, ACC=dt.float32, DT=dt.bfloat16, EVEN=even, target="triton", **tiling),
        "_launch of a new plan and C": lambda: matmul_kernels._launch(matmul_kernels._plan(
            ctx, ta.prim, tb.prim, ctx.new((m, n), dt.bfloat16), (0, 0, 0), (0, 0), (0, 0), 1,
            1)),
        "ctx.new (C's view)": lambda: ctx.new((m, n), dt.bfloat16),
        "torch.empty (C)": lambda: torch.empty(m * n, dtype=torch.bfloat16, device="cuda"),
        "_plan": lambda: matmul_kernels._plan(ctx, ta.prim, tb.prim, c, (0, 0, 0), (0, 0),
                                              (0, 0), 1, 1),
        "torch.matmul (peer)": lambda: torch.matmul(a, b),
    }


def bandwidth_rows(backend: burn.Backend, rows: int, cols: int) -> dict[str, float]:
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    tx, tw, tb = (from_torch(t, backend) for t in (x, w, bias))
    copy_target = torch.empty_like(x)
    moved = 2 * x.numel() * x.element_size()  # one read, one write

    def check(got: burn.Tensor, expected: torch.Tensor, name: str) -> None:
        values = torch.as_tensor(got.prim.storage).reshape(rows, cols).float()
        error = float((values - expected.float()).abs().max())
        assert error < 5e-2, f"burn {name} differs from torch by {error}"

    check(burn.softmax(tx, -1), torch.softmax(x, -1), "softmax")
    check(burn.layer_norm(tx, (cols,), tw, tb),
          torch.nn.functional.layer_norm(x, (cols,), w, bias), "layer_norm")
    seconds = {
        "copy (torch copy_)": gpu_seconds(lambda: copy_target.copy_(x)),
        "burn.softmax": gpu_seconds(lambda: burn.softmax(tx, -1)),
        "torch.softmax": gpu_seconds(lambda: torch.softmax(x, -1)),
        "burn.layer_norm": gpu_seconds(lambda: burn.layer_norm(tx, (cols,), tw, tb)),
        "torch layer_norm": gpu_seconds(
            lambda: torch.nn.functional.layer_norm(x, (cols,), w, bias)),
    }
    host = {
        "burn.softmax": host_us(lambda: burn.softmax(tx, -1)),
        "burn.layer_norm": host_us(lambda: burn.layer_norm(tx, (cols,), tw, tb)),
    }
    for name, us in host.items():
        print(f"  host cost of {name}: {us:.1f} µs per call (GPU time "
              f"{seconds[name] * 1e6:.1f} µs)")
    return {name: moved / s / 1e9 for name, s in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    parser.add_argument("--matmul-shapes", help="M,N,K;...: only burn.matmul on these, in turns "
                        "with cuBLAS")
    parser.add_argument("--profile", action="store_true",
                        help="with --matmul-shapes: profile each shape's host path (cProfile)")
    parser.add_argument("--host-layers", help="M,N,K;...: burn.matmul's host time per call, "
                        "layer by layer, beside torch.matmul's")
    args = parser.parse_args()
    backend = burn.backend_for("cuda")
    assert getattr(backend, "on_gpu", False), "the Cuda backend found no GPU"
    if args.host_layers:
        shapes = [tuple(int(v) for v in shape.split(",")) for shape in args.host_layers.split(";")]
        rows = host_layer_rows(backend, shapes)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"date": time.strftime("%Y-%m-%d"),
                           "device": torch.cuda.get_device_name(), "host_layers": rows}, f,
                          indent=1)
        return
    if args.matmul_shapes:
        shapes = [tuple(int(v) for v in shape.split(","))
                  for shape in args.matmul_shapes.split(";")]
        rows = matmul_shape_rows(backend, shapes, args.profile)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"date": time.strftime("%Y-%m-%d"),
                           "device": torch.cuda.get_device_name(), "matmul": rows}, f, indent=1)
        return
    n = 2048 if args.quick else 8192
    started = time.time()
    matmul = matmul_rows(backend, n)
    bandwidth = bandwidth_rows(backend, n, n)
    copy = bandwidth["copy (torch copy_)"]
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"({time.time() - started:.0f} s)")
    print(f"matmul bf16 {n}^3 (TFLOP/s):")
    raw = matmul["kernels.matmul (raw)"]
    for name, value in matmul.items():
        print(f"  {name:<24} {value:8.1f}  {value / raw:6.3f}x raw")
    print(f"{n}x{n} bf16 rows, last axis (GB/s of one read + one write):")
    for name, value in bandwidth.items():
        print(f"  {name:<24} {value:8.1f}  {value / copy:6.3f}x copy")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name(),
                       "n": n, "matmul_tflops": matmul, "bandwidth_gbs": bandwidth}, f, indent=1)


if __name__ == "__main__":
    main()
