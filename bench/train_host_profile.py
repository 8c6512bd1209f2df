"""Where a training step's host time goes: cProfile over epochs of the hand-written burn loop
of ``bench/train_gpu_bench.py`` (H=256, batches of 512, cuda), after a warm-up epoch. Prints
the functions with the most own time and the most cumulative time, per step.

    source .whl/gpu-env.sh && python3 bench/train_host_profile.py [--backend cuda] [--fusion]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train_gpu_bench  # noqa: E402

import burn  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--fusion", action="store_true")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    backend = burn.backend_for(args.backend)
    if args.fusion:
        backend = burn.Fusion(backend)
    run_epoch = train_gpu_bench.burn_loop(backend, 256)
    run_epoch(0)
    profile = cProfile.Profile()
    profile.enable()
    for epoch in range(1, args.epochs + 1):
        run_epoch(epoch)
    profile.disable()
    steps = args.epochs * -(-train_gpu_bench.POINTS // train_gpu_bench.BATCH)
    stats = pstats.Stats(profile)
    print(f"{backend!r}: {stats.total_tt / steps * 1e3:.2f} ms of host time per step "
          f"({steps} steps profiled)")
    for key in ("tottime", "cumulative"):
        print(f"--- by {key} ---")
        stats.sort_stats(key).print_stats(30)


if __name__ == "__main__":
    main()
