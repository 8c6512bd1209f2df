"""``burn.conv_transpose2d`` on the H200 against torch's (cuDNN); and, as the peer that says
how much is the convolution kernel itself, ``burn.conv2d`` against torch's on the convolution
the transposed one runs: the input spread to (N, C, 2H, 2W), the same kernel, stride 1.

Decoder shapes (upsampling by 2, float32 and bfloat16): x (N, C, H, W), weight (C, O, 4, 4),
stride 2, padding 1 (output 2H x 2W), and a 3x3 kernel with output_padding 1. Each result is
checked against torch's first. CUDA events around batches of calls, medians
(``burn_gpu_bench.gpu_seconds``).

    source .whl/gpu-env.sh && python3 bench/conv_transpose_gpu_bench.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import from_torch, gpu_seconds  # noqa: E402

import burn  # noqa: E402

CASES = [  # (N, C, H, W, O, kernel, output_padding)
    (32, 256, 32, 32, 128, 4, 0),
    (16, 128, 64, 64, 64, 4, 0),
    (32, 256, 32, 32, 128, 3, 1),
]


def measure(dtype: torch.dtype, case: tuple[int, ...]) -> None:
    """One line: burn's and torch's time for ``case``, after checking burn's result."""
    n, c, h, w, o, k, extra = case
    f = torch.nn.functional
    backend = burn.Cuda()
    x = torch.randn(n, c, h, w, device="cuda", dtype=dtype)
    weight = torch.randn(c, o, k, k, device="cuda", dtype=dtype) / (c * k) ** 0.5
    bx, bw = from_torch(x, backend), from_torch(weight, backend)
    options = {"stride": 2, "padding": 1, "output_padding": extra}
    want = f.conv_transpose2d(x, weight, **options).float()
    got = burn.conv_transpose2d(bx, bw, **options)
    got = got.contiguous()  # the phases are woven and cropped: a view
    got = torch.as_tensor(got.prim.storage)[:got.numel()].reshape(want.shape).float()
    error = float((got - want).abs().max() / want.abs().max())
    assert error < (2e-2 if dtype == torch.bfloat16 else 1e-3), error
    burn_s = gpu_seconds(lambda: burn.conv_transpose2d(bx, bw, **options))
    torch_s = gpu_seconds(lambda: f.conv_transpose2d(x, weight, **options))
    flop = 2 * n * c * h * w * o * k * k  # the useful multiply-adds
    spread = torch.randn(n, c, 2 * h, 2 * w, device="cuda", dtype=dtype)
    kernel = weight.transpose(0, 1).contiguous()
    bs, bk = from_torch(spread, backend), from_torch(kernel, backend)
    conv_burn_s = gpu_seconds(lambda: burn.conv2d(bs, bk, padding=k // 2))
    conv_torch_s = gpu_seconds(lambda: f.conv2d(spread, kernel, padding=k // 2))
    name = str(dtype).removeprefix("torch.")
    print(f"{name:8s} x ({n}, {c}, {h}, {w}) w ({c}, {o}, {k}, {k}) op={extra}: "
          f"burn {burn_s * 1e6:8.1f} us {flop / burn_s / 1e12:6.1f} TFLOP/s  "
          f"torch {torch_s * 1e6:8.1f} us {flop / torch_s / 1e12:6.1f} TFLOP/s  "
          f"torch/burn {torch_s / burn_s:5.2f}x  max rel error {error:.1e}; the spread conv2d: "
          f"burn {conv_burn_s * 1e6:8.1f} us, torch {conv_torch_s * 1e6:8.1f} us, torch/burn "
          f"{conv_torch_s / conv_burn_s:5.2f}x", flush=True)


def main() -> None:
    for dtype in (torch.float32, torch.bfloat16):
        for case in CASES:
            measure(dtype, case)


if __name__ == "__main__":
    main()
