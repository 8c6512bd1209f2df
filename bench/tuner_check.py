"""Does the tuner rank configs as ``do_bench`` does? One key of the autotuned flash attention.

    python bench/tuner_check.py [--shape B,H,S,D] [--dtype bfloat16] [--causal] [--rounds 5]
                                [--reps-ms 5,100] [--heat-s 20] [--tuner-flush-mb 256]

Tunes ``examples.flash_attention.attention_tuned`` for one key in an empty cache folder and
reads every candidate's median from the tuner's cache entry (the final's, timed under
sustained load, and the cold-start medians of those it dropped). Then times each candidate, all
taking turns for ``--rounds`` rounds, three ways: ``triton.testing.do_bench`` (each run after
a 256 MB cache flush, for ``rep`` ms of runs; several ``--reps-ms`` give a column each); 50
launches back to back without a flush, as a model's loop makes them; the tuner's own clock
outside the tuner (5 runs, each from a cold L2). Prints the medians per config and how much
slower than each column's best the tuner's choice is.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["CUBEPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="tuner-check-")

from cubepy.autotune import cache  # noqa: E402
from cubepy.autotune.clocks import CudaEventTimer  # noqa: E402
from examples import flash_attention as fa  # noqa: E402


def tuner_medians() -> dict[str, tuple[float, str]]:
    """Config (as JSON text) -> the tuner's median seconds and its status (``ok``: timed in
    the final, sustained on CUDA; ``dropped``: from a cold start), from the only entry."""
    (path, doc), = [(p, d) for p, d in cache.cache_files(cache.user_dir())
                    if d and "attention_tuned" in d["kernel"]]
    entry, = doc["entries"].values()
    return {json.dumps(t["config"], sort_keys=True): (t["median_s"], t["status"])
            for t in entry["timings"]
            if t.get("status") in ("ok", "dropped") and t.get("median_s")}


def pretend_l2(size: int) -> None:
    """Make torch report an L2 cache of ``size`` bytes (the tuner's timer zeroes twice it)."""
    import torch

    real = torch.cuda.get_device_properties

    class Properties:
        L2_cache_size = size

        def __init__(self, device):
            self._real = real(device)

        def __getattr__(self, name):
            return getattr(self._real, name)

    torch.cuda.get_device_properties = Properties


def loop_seconds(launch, count: int = 50) -> float:
    """Seconds per launch of ``count`` launches back to back (CUDA events around all)."""
    import torch

    launch()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(count):
        launch()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3 / count


def main() -> int:
    import torch
    import triton.testing

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4,32,4096,128")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps-ms", default="100",
                        help="do_bench's rep (ms of back-to-back runs), one column each: a GPU "
                             "under sustained load clocks down")
    parser.add_argument("--tuner-flush-mb", type=int, default=0,
                        help="make the tuner zero this many MB before each run (by telling it "
                             "the L2 is half that size) instead of twice the L2")
    parser.add_argument("--heat-s", type=float, default=0.0,
                        help="run the first tuning config back to back this long before "
                             "tuning, so that the tuner meets a GPU already under load")
    args = parser.parse_args()
    batch, heads, seq, head_dim = (int(x) for x in args.shape.split(","))
    if args.tuner_flush_mb:
        pretend_l2(args.tuner_flush_mb << 19)
    q, k, v = (torch.randn((batch, heads, seq, head_dim), device="cuda",
                           dtype=getattr(torch, args.dtype)) for _ in range(3))
    out = torch.empty_like(q)
    heat_until = time.perf_counter() + args.heat_s
    while time.perf_counter() < heat_until:
        for _ in range(20):
            fa.attention(q, k, v, out, causal=args.causal, block_m=128, block_n=64, num_warps=8)
        torch.cuda.synchronize()
    fa.attention_tuned(q, k, v, out, seq, seq, head_dim, args.causal)
    chosen = json.dumps(fa.attention_tuned.last_config.as_json(), sort_keys=True)
    tuner = tuner_medians()
    configs = {text: json.loads(text) for text in tuner}

    def launch(config: dict) -> None:
        fa.attention(q, k, v, out, causal=args.causal, block_m=config["BM"],
                     block_n=config["BN"], descriptors=config["DESC"],
                     num_warps=config["num_warps"], num_stages=config["num_stages"])

    reps = [int(r) for r in args.reps_ms.split(",")]
    samples = {(text, rep): [] for text in configs for rep in reps + ["loop", "timer", "timer1"]}
    for _ in range(args.rounds):
        for text, config in configs.items():
            for rep in reps:
                samples[text, rep].append(triton.testing.do_bench(
                    lambda c=config: launch(c), rep=rep, return_mode="median") * 1e-3)
    for _ in range(args.rounds):  # as in a model's loop: back to back, no flush between
        for text, config in configs.items():
            samples[text, "loop"].append(loop_seconds(lambda c=config: launch(c)))
    timer = CudaEventTimer("torch")  # the tuner's clock, outside the tuner
    for _ in range(args.rounds):
        for text, config in configs.items():
            samples[text, "timer"].append(timer(lambda c=config: launch(c), 5) / 5)
    print(f"  the tuner's clock zeroed the L2 {timer.flushes} times before each run "
          f"({timer.flush_seconds * 1e6:.0f} µs each)")
    timer.flushes, timer._cover = 1, lambda seconds: None  # as do_bench: one zeroing
    for _ in range(args.rounds):
        for text, config in configs.items():
            samples[text, "timer1"].append(timer(lambda c=config: launch(c), 5) / 5)
    bench = {key: statistics.median(times) for key, times in samples.items()}
    print(f"{torch.cuda.get_device_name()} {args.shape} {args.dtype} causal={args.causal}: "
          f"tuner chose {chosen}")
    reps += ["loop", "timer", "timer1"]
    names = {"loop": "50 in a loop", "timer": "tuner's clock", "timer1": "one zeroing"}
    heads = "".join(f" {names.get(rep, f'do_bench {rep} ms'):>16}" for rep in reps)
    print(f"  {'config':<72} {'tuner ms':>9}{heads}")
    for text in sorted(configs, key=lambda t: bench[t, "loop"]):
        cells = "".join(f" {bench[text, rep] * 1e3:16.3f}" for rep in reps)
        mark = " <- tuner" if text == chosen else ""
        median, status = tuner[text]
        mark += "" if status == "ok" else f" ({status} cold)"
        print(f"  {text:<72} {median * 1e3:9.3f}{cells}{mark}")
    for rep in reps:
        best = min(configs, key=lambda t: bench[t, rep])
        ratios = [tuner[t][0] / bench[t, rep] for t in configs]
        print(f"  {names.get(rep, f'do_bench {rep} ms')}: the tuner's choice is "
              f"{bench[chosen, rep] / bench[best, rep]:.3f}x its best; tuner/do_bench time per "
              f"config {min(ratios):.3f}-{max(ratios):.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
