"""``burn.conv3d``, ``conv_transpose3d`` and the 3-D pools on the H200 against torch's
(cuDNN): the convolution forward and forward + backward on video and volume layers, the
transposed one and the pools forward.

Each result is checked against torch's first (float32 with cuDNN's TF32 off, the IEEE
arithmetic of burn's kernels). burn's 3-D ops are built from its 2-D ones
(``burn/tensor/volume.py``): the convolution copies the input KD times over (the depth
unfolded into channels) and runs one 2-D convolution; the pools run two 2-D pools. Clocks
as ``conv_gpu_bench.py``: "wall", CUDA events around batches of back-to-back calls
(medians), and "GPU", the same calls queued behind a GPU sleep so the events time the GPU
work alone.

    source .whl/gpu-env.sh && python3 bench/conv3d_gpu_bench.py [--dtypes bfloat16,float32]
        [--cases 0,2] [--only conv|transposed|pool]
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import compared_times, from_torch  # noqa: E402

import burn  # noqa: E402

CASES = [  # (N, C, D, H, W, O, kernel, stride, padding)
    (8, 64, 8, 56, 56, 64, 3, 1, 1),      # video: a 3-D ResNet stage 1
    (8, 128, 4, 28, 28, 128, 3, 1, 1),    # stage 2
    (8, 64, 8, 56, 56, 128, 3, 2, 1),     # strided
    (2, 32, 64, 64, 64, 32, 3, 1, 1),     # volume: a 3-D U-Net level
    (4, 3, 16, 112, 112, 64, 3, 1, 1),    # video stem (C3D)
]


def check(ours: burn.Tensor, theirs: torch.Tensor, what: str, dtype: torch.dtype) -> None:
    error = (torch.from_numpy(ours.to(burn.float32).numpy()).cuda()
             - theirs.float()).abs().max().item()
    scale = theirs.float().abs().max().item()
    limit = (2e-2 if dtype == torch.bfloat16 else 1e-4) * max(scale, 1.0)
    if error > limit:
        raise SystemExit(f"{what}: burn differs from torch by {error} (scale {scale})")


def conv_row(case: tuple[int, ...], dtype: torch.dtype) -> dict:
    n, c, d, h, w, o, k, stride, pad = case
    backend = burn.Cuda()
    x = torch.randn(n, c, d, h, w, device="cuda", dtype=dtype)
    weight = torch.randn(o, c, k, k, k, device="cuda", dtype=dtype) / (c * k ** 3) ** 0.5
    bx, bw = from_torch(x, backend), from_torch(weight, backend)

    def theirs() -> torch.Tensor:
        return torch.nn.functional.conv3d(x, weight, stride=stride, padding=pad)

    def ours() -> burn.Tensor:
        return burn.conv3d(bx, bw, stride=stride, padding=pad)

    check(ours(), theirs(), f"conv3d {case}", dtype)
    ad = burn.Autodiff(backend)
    tx, tw = x.clone().requires_grad_(), weight.clone().requires_grad_()
    ax, aw = bx.to(ad).require_grad(), bw.to(ad).require_grad()

    def their_training() -> None:
        torch.autograd.grad(torch.nn.functional.conv3d(tx, tw, stride=stride,
                                                       padding=pad).sum(), (tx, tw))

    def our_training() -> None:
        burn.conv3d(ax, aw, stride=stride, padding=pad).sum().backward()

    row = {"op": "conv3d", "case": list(case), "dtype": str(dtype).removeprefix("torch.")}
    for name, (a, b) in {"forward": (ours, theirs),
                         "forward+backward": (our_training, their_training)}.items():
        row[name] = compared_times(a, b)
    return row


TRANSPOSED_CASES = [  # (N, C, D, H, W, O, kernel, stride, padding, output_padding)
    (2, 64, 16, 32, 32, 32, 2, 2, 0, 0),   # a 3-D U-Net's upsampling
    (4, 128, 8, 16, 16, 64, 3, 2, 1, 1),
]


def transposed_row(case: tuple[int, ...], dtype: torch.dtype) -> dict:
    """``conv_transpose3d``, forward only: the spread input's convolution does stride ** 3
    times the useful work."""
    n, c, d, h, w, o, k, stride, pad, extra = case
    backend = burn.Cuda()
    x = torch.randn(n, c, d, h, w, device="cuda", dtype=dtype)
    weight = torch.randn(c, o, k, k, k, device="cuda", dtype=dtype) / (c * k ** 3) ** 0.5
    bx, bw = from_torch(x, backend), from_torch(weight, backend)

    def theirs() -> torch.Tensor:
        return torch.nn.functional.conv_transpose3d(x, weight, stride=stride, padding=pad,
                                                    output_padding=extra)

    def ours() -> burn.Tensor:
        return burn.conv_transpose3d(bx, bw, stride=stride, padding=pad, output_padding=extra)

    check(ours(), theirs(), f"conv_transpose3d {case}", dtype)
    return {"op": "conv_transpose3d", "case": list(case), "dtype": str(dtype)[6:],
            **compared_times(ours, theirs)}


def pool_row(kind: str, dtype: torch.dtype) -> dict:
    backend = burn.Cuda()
    x = torch.randn(8, 64, 16, 56, 56, device="cuda", dtype=dtype)
    bx = from_torch(x, backend)
    if kind == "max":
        def theirs() -> torch.Tensor:
            return torch.nn.functional.max_pool3d(x, 3, 2, 1)

        def ours() -> burn.Tensor:
            return burn.max_pool3d(bx, 3, 2, 1)
    else:
        def theirs() -> torch.Tensor:
            return torch.nn.functional.avg_pool3d(x, 2)

        def ours() -> burn.Tensor:
            return burn.avg_pool3d(bx, 2)
    check(ours(), theirs(), f"{kind}_pool3d", dtype)
    return {"op": f"{kind}_pool3d", "case": list(x.shape), "dtype": str(dtype)[6:],
            **compared_times(ours, theirs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--cases", help="indices into CASES, comma-separated (default: all)")
    parser.add_argument("--only", choices=["conv", "transposed", "pool"],
                        help="one kind of op (default: all three)")
    args = parser.parse_args()
    cases = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; [burn, torch], "
          f"gpu_ratio: torch's GPU time over burn's (above 1: burn is faster)", flush=True)
    for name in args.dtypes.split(","):
        dtype = getattr(torch, name)
        rows = []
        if args.only in (None, "conv"):
            rows += [partial(conv_row, case, dtype) for case in cases]
        if args.only in (None, "transposed"):
            rows += [partial(transposed_row, case, dtype) for case in TRANSPOSED_CASES]
        if args.only in (None, "pool"):
            rows += [partial(pool_row, kind, dtype) for kind in ("max", "avg")]
        for row in rows:
            print(json.dumps(row()), flush=True)


if __name__ == "__main__":
    main()
