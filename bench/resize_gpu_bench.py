"""burn's ONNX ``Resize`` on the H200 against torch's ``interpolate``: bilinear and bicubic
upsampling, and antialiased shrinking.

Each case is the ONNX node torch's exporter writes for the same call, run through
``burn.onnx.OPERATORS["Resize"]`` on the ``Cuda`` backend, checked against torch first:
- ``bilinear``/``bicubic``: ``mode`` linear/cubic, ``pytorch_half_pixel`` coordinates,
  ``cubic_coeff_a`` -0.75;
- antialiased: ``antialias=1`` and ``exclude_outside=1`` (torch drops the taps past an edge
  and weighs the rest back to 1), ``cubic_coeff_a`` -0.5 for bicubic (torch's, after PIL's).

burn runs each resized axis as one gather of every tap, a product with the weights and a sum
over the taps (``burn/onnx/resize.py``); torch has one kernel per call. Clocks as
``conv_gpu_bench.py``: "wall", CUDA events around batches of calls (medians), and "GPU", the
same calls queued behind a GPU sleep.

    source .whl/gpu-env.sh && python3 bench/resize_gpu_bench.py [--dtypes float32,bfloat16]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import compared_times, from_torch  # noqa: E402

import burn  # noqa: E402
from burn.onnx.registry import Attributes  # noqa: E402

CASES = [  # (name, input shape N C H W, output H W, torch mode, antialias)
    ("bilinear x2", (8, 64, 128, 128), (256, 256), "bilinear", False),
    ("bicubic x2", (8, 64, 128, 128), (256, 256), "bicubic", False),
    ("bilinear /4 antialiased", (8, 3, 1024, 1024), (256, 256), "bilinear", True),
    ("bicubic /4 antialiased", (8, 3, 1024, 1024), (256, 256), "bicubic", True),
]


def onnx_attributes(mode: str, antialias: bool) -> Attributes:
    """The Resize node torch exports for ``interpolate(mode=..., antialias=...)``."""
    values = {"mode": "linear" if mode == "bilinear" else "cubic",
              "coordinate_transformation_mode": "pytorch_half_pixel",
              "cubic_coeff_a": -0.5 if antialias else -0.75}
    if antialias:
        values.update(antialias=1, exclude_outside=1)
    return Attributes(values, "Resize", version=18)


def row(case: tuple, dtype: torch.dtype) -> dict:
    name, shape, out, mode, antialias = case
    backend = burn.Cuda()
    x = torch.randn(*shape, device="cuda", dtype=dtype)
    bx = from_torch(x, backend)
    attrs = onnx_attributes(mode, antialias)
    sizes = np.array([*shape[:2], *out], np.int64)
    resize = burn.onnx.OPERATORS["Resize"].run

    def theirs() -> torch.Tensor:
        return torch.nn.functional.interpolate(x, size=out, mode=mode, align_corners=False,
                                               antialias=antialias)

    def ours() -> burn.Tensor:
        return resize(attrs, bx, None, None, sizes)

    got = torch.from_numpy(ours().to(burn.float32).numpy()).cuda()
    want = theirs().float()
    error = (got - want).abs().max().item()
    limit = (3e-2 if dtype == torch.bfloat16 else 1e-4) * max(want.abs().max().item(), 1.0)
    if error > limit:
        raise SystemExit(f"{name} {dtype}: burn differs from torch by {error}")
    return {"case": name, "shape": list(shape), "out": list(out),
            "dtype": str(dtype).removeprefix("torch."), "max_error": error,
            **compared_times(ours, theirs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="float32,bfloat16")
    args = parser.parse_args()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for dtype in args.dtypes.split(","):
        for case in CASES:
            print(json.dumps(row(case, getattr(torch, dtype))), flush=True)


if __name__ == "__main__":
    main()
