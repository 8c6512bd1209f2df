"""``burn.conv2d`` on the H200 against torch's (cuDNN) on ResNet and decoder layers.

Each result is checked against torch's first (float32 compared with cuDNN's TF32 switched off,
the same IEEE arithmetic as burn's). Per case: torch, burn (NCHW input, so with the copy to
channels-last), burn's kernel alone on a channels-last input, and with ``--sweep`` every
config of the GPU list on its own (``kernels.conv.run``), to say which tiles the list needs.

Two clocks. "wall": CUDA events around batches of back-to-back calls, medians
(``burn_gpu_bench.gpu_seconds``): what a caller waits, host time included when the host is
the slower side. "GPU": the same batch queued behind a GPU sleep long enough for the host to
queue all of it first, so the events time the GPU work alone. ``--profile`` prints host
microseconds per call of each layer and a cProfile of ``burn.conv2d``.

    source .whl/gpu-env.sh && python3 bench/conv_gpu_bench.py [--sweep] [--profile] [--cases 6,0]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import from_torch, gpu_only_seconds, gpu_seconds, host_us  # noqa: E402

import burn  # noqa: E402
from kernels import conv  # noqa: E402
from kernels.elementwise import copy  # noqa: E402

CASES = [  # (N, C, H, W, O, kernel, stride, padding)
    (32, 64, 56, 56, 64, 3, 1, 1),      # ResNet stage 1
    (32, 128, 28, 28, 128, 3, 1, 1),    # stage 2
    (32, 256, 14, 14, 256, 3, 1, 1),    # stage 3
    (32, 512, 7, 7, 512, 3, 1, 1),      # stage 4
    (32, 256, 56, 56, 64, 1, 1, 0),     # bottleneck 1x1
    (32, 128, 56, 56, 128, 3, 2, 1),    # strided
    (32, 3, 224, 224, 64, 7, 2, 3),     # stem
    (32, 256, 64, 64, 128, 4, 1, 2),    # decoder (run 129's spread problem)
    (16, 64, 128, 128, 64, 3, 1, 1),    # decoder, high resolution
]


def profile(case: tuple[int, ...]) -> None:
    """Host microseconds per call of each layer of ``burn.conv2d`` on ``case`` (bf16), and
    the functions with the most own time."""
    n, c, h, w, o, k, stride, pad = case
    backend = burn.Cuda()
    x = torch.randn(n, c, h, w, device="cuda", dtype=torch.bfloat16)
    weight = torch.randn(o, c, k, k, device="cuda", dtype=torch.bfloat16)
    bx, bw = from_torch(x, backend), from_torch(weight, backend)
    ctx = backend.ctx
    geometry = dict(stride=(stride, stride), padding=(pad, pad), dilation=(1, 1), groups=1,
                    out_size=(h // stride, w // stride))
    plan = conv.plan_conv2d(ctx, bx.prim, bw.prim, None, **geometry)
    tiles = conv.conv_tiles(ctx.target, plan.dtype, plan.m, plan.step_depth, plan.o_group)
    nhwc = bx.prim.with_layout(0, (n, h, w, c), (c * h * w, w, 1, h * w))
    layers = {
        "torch.nn.functional.conv2d": lambda: torch.nn.functional.conv2d(
            x, weight, stride=stride, padding=pad),
        "burn.conv2d": lambda: burn.conv2d(bx, bw, stride=stride, padding=pad),
        "kernels.conv.conv2d": lambda: conv.conv2d(ctx, bx.prim, bw.prim, None, **geometry),
        "kernels.conv.plan_conv2d (two copies)": lambda: conv.plan_conv2d(
            ctx, bx.prim, bw.prim, None, **geometry),
        "kernels.elementwise.copy (the input)": lambda: copy(ctx, nhwc),
        "kernels.conv.run (one launch)": lambda: conv.run(plan, **tiles),
        "ctx.new (the result)": lambda: ctx.new((n, o, h, w), plan.dtype),
    }
    for name, fn in layers.items():
        print(f"host {name}: {host_us(fn, calls=500, warmup=20):7.1f} us per call", flush=True)
    stats = cProfile.Profile()
    stats.enable()
    for _ in range(500):
        burn.conv2d(bx, bw, stride=stride, padding=pad)
    stats.disable()
    torch.cuda.synchronize()
    pstats.Stats(stats).sort_stats("tottime").print_stats(25)


def measure(dtype: torch.dtype, case: tuple[int, ...], sweep: bool) -> None:
    """Lines for ``case``: the times and ratios, after checking burn's result."""
    n, c, h, w, o, k, stride, pad = case
    f = torch.nn.functional
    backend = burn.Cuda()
    x = torch.randn(n, c, h, w, device="cuda", dtype=dtype)
    weight = torch.randn(o, c, k, k, device="cuda", dtype=dtype) / (c * k * k) ** 0.5
    bx, bw = from_torch(x, backend), from_torch(weight, backend)
    want = f.conv2d(x, weight, stride=stride, padding=pad).float()
    got = burn.conv2d(bx, bw, stride=stride, padding=pad)
    got = torch.as_tensor(got.prim.storage)[:got.numel()].reshape(want.shape).float()
    error = float((got - want).abs().max() / want.abs().max())
    assert error < (2e-2 if dtype == torch.bfloat16 else 1e-4), error
    flop = 2 * n * o * want.shape[2] * want.shape[3] * c * k * k
    torch_s = gpu_seconds(lambda: f.conv2d(x, weight, stride=stride, padding=pad))
    burn_s = gpu_seconds(lambda: burn.conv2d(bx, bw, stride=stride, padding=pad))
    ctx = backend.ctx
    geometry = dict(stride=(stride, stride), padding=(pad, pad), dilation=(1, 1), groups=1,
                    out_size=tuple(want.shape[2:]))
    x_cl = from_torch(x.permute(0, 2, 3, 1).contiguous(), backend).prim
    x_view = x_cl.with_layout(0, (n, c, h, w), (x_cl.strides[0], 1, x_cl.strides[1],
                                                 x_cl.strides[2]))
    kernel_s = gpu_seconds(lambda: conv.conv2d(ctx, x_view, bw.prim, None, **geometry))
    torch_gpu = gpu_only_seconds(lambda: f.conv2d(x, weight, stride=stride, padding=pad))
    burn_gpu = gpu_only_seconds(lambda: burn.conv2d(bx, bw, stride=stride, padding=pad))
    name = str(dtype).removeprefix("torch.")
    label = f"{name:8s} x ({n}, {c}, {h}, {w}) w ({o}, {c}, {k}, {k}) s{stride} p{pad}"
    print(f"{label}: wall: torch {torch_s * 1e6:8.1f} us  burn {burn_s * 1e6:8.1f} us  "
          f"torch/burn {torch_s / burn_s:5.2f}x  (channels-last input: {kernel_s * 1e6:8.1f} "
          f"us, {torch_s / kernel_s:5.2f}x);  GPU: torch {torch_gpu * 1e6:8.1f} us "
          f"{flop / torch_gpu / 1e12:6.1f} TFLOP/s  burn {burn_gpu * 1e6:8.1f} us "
          f"{flop / burn_gpu / 1e12:6.1f} TFLOP/s  torch/burn {torch_gpu / burn_gpu:5.2f}x  "
          f"max rel error {error:.1e}", flush=True)
    if sweep:
        plan = conv.plan_conv2d(ctx, x_view, bw.prim, None, **geometry)
        configs = conv.GPU_HALF if dtype == torch.bfloat16 else conv.GPU_FLOAT32
        for cfg in configs:
            kw = cfg.launch_kwargs()
            try:
                s = gpu_only_seconds(lambda kw=kw: conv.run(plan, **kw))
            except Exception as err:  # a config that cannot compile here
                print(f"{label}:   {kw}: failed ({type(err).__name__})", flush=True)
                continue
            print(f"{label}:   {kw}: GPU {s * 1e6:8.1f} us {torch_gpu / s:5.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="time every config on its own")
    parser.add_argument("--profile", action="store_true", help="host time per layer, then exit")
    parser.add_argument("--cases", help="indices into CASES, e.g. 6,0 (default: all)")
    args = parser.parse_args()
    cases = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES
    if args.profile:
        profile(CASES[2])
        return
    torch.backends.cudnn.allow_tf32 = False  # IEEE float32, as burn computes
    torch.backends.cudnn.benchmark = True    # cuDNN's own autotuning, as burn's
    for dtype in (torch.bfloat16, torch.float32):
        for case in cases:
            measure(dtype, case, args.sweep)


if __name__ == "__main__":
    main()
