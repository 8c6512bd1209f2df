"""Where an eager training step's host time goes on the GPU: a transformer block small
enough that its kernels take a fraction of the step (``transformer_gpu_bench.py``'s step),
its wall time beside torch's eager step, then cProfile over ``--steps`` steps: the top
functions by own time and by cumulative time, and the host time per kernel launch.

    source .whl/gpu-env.sh && python3 bench/eager_host_profile.py [--case 2,64,64,2]
        [--precision bf16|float32] [--fusion]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transformer_gpu_bench import burn_step, kernel_ms, step_seconds, torch_step  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="2,64,64,2", help="B,S,d_model,heads")
    parser.add_argument("--precision", default="bf16", choices=["bf16", "float32"])
    parser.add_argument("--fusion", action="store_true", help="Autodiff(Fusion(Cuda()))")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lines", type=int, default=40, help="rows of each table")
    args = parser.parse_args()
    case = tuple(int(v) for v in args.case.split(","))
    ours = burn_step(*case, fusion=args.fusion, precision=args.precision)
    theirs = torch_step(*case, precision=args.precision)
    ours_s, theirs_s = step_seconds(ours), step_seconds(theirs)
    (our_gpu_ms, launches), (their_gpu_ms, their_launches) = kernel_ms(ours), kernel_ms(theirs)
    print(f"{torch.cuda.get_device_name()}, case {case}, {args.precision}, fusion "
          f"{args.fusion}: step {ours_s * 1e3:.2f} ms (torch {theirs_s * 1e3:.2f} ms); GPU "
          f"kernels {our_gpu_ms:.3f} ms (torch {their_gpu_ms:.3f}); {launches:.0f} launches "
          f"(torch {their_launches:.0f}); host per launch {ours_s * 1e6 / launches:.0f} us "
          f"(torch {theirs_s * 1e6 / their_launches:.0f} us)", flush=True)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.steps):
        ours()
    torch.cuda.synchronize()
    profiler.disable()
    for order in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(args.lines)
        print(text.getvalue().replace(str(Path(__file__).resolve().parents[1]) + "/", ""))


if __name__ == "__main__":
    main()
