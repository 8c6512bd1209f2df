"""burn's ``Tensor.sort`` on the ``cuda`` backend (values and int64 indices, stable) against
torch.sort(stable=True) on the same data, rows of 128 and 1024 float32: rows of up to 1024
elements now sort in one tile (``kernels.sort.tile_sort_kernel``), one cube per row. CUDA
events around batches (``burn_gpu_bench.gpu_seconds``), five turns, medians.

    source .whl/gpu-env.sh && python3 bench/burn_sort_gpu_bench.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import from_torch, gpu_seconds  # noqa: E402

import burn  # noqa: E402


def main() -> None:
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for cols in (128, 1024):
        x = torch.randn(16384, cols, device="cuda")
        view = from_torch(x, burn.Cuda())
        values, indices = view.sort(1)
        want = torch.sort(x, dim=1, stable=True)
        assert torch.equal(torch.as_tensor(values.numpy()).cuda(), want.values), "values"
        assert torch.equal(torch.as_tensor(indices.numpy()).cuda(), want.indices), "indices"
        times: dict[str, list[float]] = {"burn sort": [], "torch.sort": []}
        for _ in range(5):
            times["burn sort"].append(gpu_seconds(lambda v=view: v.sort(1)))
            times["torch.sort"].append(gpu_seconds(lambda t=x: torch.sort(t, dim=1, stable=True)))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"16384 rows of {cols} float32: burn {med['burn sort'] * 1e6:.1f} us, "
              f"torch {med['torch.sort'] * 1e6:.1f} us, torch/burn "
              f"{med['torch.sort'] / med['burn sort']:.3f}x")


if __name__ == "__main__":
    main()
