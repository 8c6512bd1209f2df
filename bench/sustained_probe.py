"""Does a kernel's time depend on how long the GPU has been running it? Burst probe.

    python bench/sustained_probe.py [--shape B,H,S,D] [--dtype bfloat16] [--burst 600]
                                    [--idle-s 0.5] [--flush] [--matmul M,N,K]

For each of a few configs of the flash-attention example (64x64 with 4 warps, the tuner's
pick in runs 63-69, and the 128-row configs that ``do_bench`` ranks first), the GPU idles for
``--idle-s``, then runs ``--burst`` launches back to back, each between two CUDA events (with
``--flush``, each after zeroing 256 MB as ``do_bench`` does). Prints the median time of the
launches in stretches of the burst (1-5, 6-20, 21-60, ...) with the SM clock and the board
power that ``nvidia-smi`` sampled during the burst, then the same configs timed as the
tuner's first rounds time them (one run each, in turns, on its ``CudaEventTimer``). A GPU that
clocks down under sustained load shows it as later stretches running slower. With
``--matmul``, the kernels are cuBLAS (``torch.matmul``) and the autotuned example matmul
(``examples.matmul.matmul_tuned``, from ``autotune_cache/`` on an H200) instead.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cubepy.autotune.clocks import CudaEventTimer  # noqa: E402
from examples import flash_attention as fa  # noqa: E402
from examples import matmul as mm  # noqa: E402

CONFIGS = {"64x64 w4": (64, 64, 4), "128x128 w8": (128, 128, 8), "128x64 w8": (128, 64, 8)}
STRETCHES = [(0, 5), (5, 20), (20, 60), (60, 150), (150, 300), (300, 600), (600, 1200)]


class Sampler:
    """``nvidia-smi`` sampling the SM clock, power and throttle reasons every 20 ms."""

    def __enter__(self):
        self.file = tempfile.NamedTemporaryFile("w+", suffix=".csv")
        self.process = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,"
             "clocks_event_reasons.active", "--format=csv,noheader,nounits", "-lms", "20"],
            stdout=self.file, stderr=subprocess.DEVNULL)
        time.sleep(0.3)  # nvidia-smi's start
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait()
        self.file.seek(0)
        rows = [line.split(", ") for line in self.file.read().splitlines() if line.strip()]
        self.rows = [r for r in rows if len(r) == 4 and r[0].strip().isdigit()]
        self.file.close()

    def summary(self) -> str:
        if not self.rows:
            return "no nvidia-smi samples"
        clocks = [int(r[0]) for r in self.rows]
        power = [float(r[1]) for r in self.rows]
        reasons = sorted({r[3].strip() for r in self.rows})
        return (f"SM clock {min(clocks)}-{max(clocks)} MHz (median {statistics.median(clocks)}),"
                f" power up to {max(power):.0f} W, {int(self.rows[-1][2])} °C, "
                f"reasons {','.join(reasons)}")


def attention_launches(args):
    """``launch(config)`` of the flash-attention example, and its configs by name."""
    import torch

    batch, heads, seq, head_dim = (int(x) for x in args.shape.split(","))
    q, k, v = (torch.randn((batch, heads, seq, head_dim), device="cuda",
                           dtype=getattr(torch, args.dtype)) for _ in range(3))
    out = torch.empty_like(q)

    def launch(config):
        bm, bn, warps = config
        fa.attention(q, k, v, out, block_m=bm, block_n=bn, num_warps=warps, num_stages=3)

    return launch, CONFIGS


def matmul_launches(args):
    """``launch(kernel)`` of cuBLAS or the tuned example matmul on one shape."""
    import torch

    m, n, k = (int(x) for x in args.matmul.split(","))
    dtype = getattr(torch, args.dtype)
    a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda",
                                                                       dtype=dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)

    def launch(kernel):
        if kernel == "cublas":
            torch.matmul(a, b, out=c)
        else:
            mm.matmul_tuned(a, b, c, m, n, k)

    return launch, {"cuBLAS": "cublas", "cubepy tuned": "cubepy"}


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4,32,4096,128")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--burst", type=int, default=600)
    parser.add_argument("--idle-s", type=float, default=0.5)
    parser.add_argument("--flush", action="store_true")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--matmul", default="", help="M,N,K: cuBLAS against the tuned matmul")
    args = parser.parse_args()
    launch, kernels = (matmul_launches if args.matmul else attention_launches)(args)
    scratch = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for config in kernels.values():  # compile (and tune, where the cache lacks the key)
        launch(config)
    torch.cuda.synchronize()
    shape = args.matmul or args.shape
    print(f"{torch.cuda.get_device_name()} {shape} {args.dtype}, bursts of {args.burst} "
          f"after {args.idle_s} s idle, flush={args.flush}")
    stretches = [(a, b) for a, b in STRETCHES if b <= args.burst]
    print(f"  {'config':<12}" + "".join(f"{f'{a + 1}-{b}':>9}" for a, b in stretches)
          + "   (ms per launch, median)")
    for _ in range(args.repeats):
        for name, config in kernels.items():
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(args.burst)]
            with Sampler() as sampler:
                time.sleep(args.idle_s)
                for start, end in events:
                    if args.flush:
                        scratch.zero_()
                    start.record()
                    launch(config)
                    end.record()
                torch.cuda.synchronize()
            times = [s.elapsed_time(e) for s, e in events]
            cells = "".join(f"{statistics.median(times[a:b]):9.3f}" for a, b in stretches)
            print(f"  {name:<12}{cells}   {sampler.summary()}", flush=True)

    # The tuner's first rounds: one run per sample on its own clock, configs in turns.
    timer = CudaEventTimer("torch")
    samples = {name: [] for name in kernels}
    with Sampler() as sampler:
        for _ in range(30):
            for name, config in kernels.items():
                samples[name].append(timer(lambda c=config: launch(c)) * 1e3)
    print(f"  the tuner's pattern (one run per sample, in turns, L2 zeroed {timer.flushes}x "
          "before each): "
          + ", ".join(f"{n} {statistics.median(t):.3f}" for n, t in samples.items())
          + f" ms; {sampler.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
