"""Where a burn training step's time goes on a CUDA GPU: its host profile, its GPU kernel
time beside torch's, and whether the forward and backward can be captured as a CUDA graph.

    python3 bench/step_host_probe.py --out DIR
"""

from __future__ import annotations

import argparse
import cProfile
import pathlib
import pstats
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from transformer_gpu_bench import burn_step, kernel_ms, step_seconds, torch_step  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp")
    parser.add_argument("--case", default="16,512,512,8")
    args = parser.parse_args()
    case = tuple(map(int, args.case.split(",")))
    out = pathlib.Path(args.out)
    ours, theirs = burn_step(*case), torch_step(*case)
    print(f"case {case}: wall ms/step burn {step_seconds(ours) * 1e3:.2f}, "
          f"torch {step_seconds(theirs) * 1e3:.2f}")
    for name, step in (("burn", ours), ("torch", theirs)):
        ms, launches = kernel_ms(step)
        print(f"{name}: GPU kernel ms/step {ms:.3f}, kernels/step {launches:.0f}")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        ours()
    profiler.disable()
    torch.cuda.synchronize()
    profiler.dump_stats(out / "burn-step.pstats")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(80)
    capture(case)


def capture(case) -> None:
    """Try capturing one whole step (forward, backward, optimizer) as a CUDA graph."""
    step = burn_step(*case)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            step()
    except Exception as err:  # noqa: BLE001 - a probe: report what failed
        print(f"capture failed: {type(err).__name__}: {err}")
        return
    graph.replay()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(50):
        graph.replay()
    torch.cuda.synchronize()
    print(f"captured step replay: {(time.perf_counter() - start) / 50 * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
