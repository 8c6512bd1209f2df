"""A small convolutional network's training step in burn, eager and as a
``burn.train.CapturedStep`` (one CUDA graph), against torch's eager step, on the H200.

The network: conv 3x3 (3 -> C) -> ReLU -> conv 3x3 stride 2 (C -> 2C) -> ReLU -> conv 3x3
stride 2 (2C -> 4C) -> ReLU -> adaptive average pool to 1x1 -> flatten -> linear to 10
classes (``--batch-norm``: a ``BatchNorm2d`` after each convolution, in training mode);
``cross_entropy`` on integer labels, ``AdamW``. The same weights start both
libraries, which then take the same steps on one batch: the losses of the first three steps
and of the last (after every timed step, so the captured replays too) are printed side by
side. Times are medians of synchronized steps (wall clock, host included) after the warm-up
(burn's first steps compile and tune).

    source .whl/gpu-env.sh && python3 bench/cnn_captured_gpu_bench.py [--cases "N,C,H;..."]
        [--dtype bfloat16|float32] [--batch-norm]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import from_torch  # noqa: E402
from transformer_gpu_bench import step_seconds  # noqa: E402

import burn  # noqa: E402

CASES = [(64, 32, 32), (32, 64, 64), (128, 16, 32)]  # (batch, channels, image side)


def _layers(nn: Any, c: int, batch_norm: bool, **dtype: Any) -> list[Any]:
    """The network's layers from ``nn`` (torch.nn or burn.nn)."""
    layers = []
    for index, (cin, cout) in enumerate(((3, c), (c, 2 * c), (2 * c, 4 * c))):
        layers.append(nn.Conv2d(cin, cout, 3, stride=1 if index == 0 else 2, padding=1,
                                **dtype))
        if batch_norm:
            layers.append(nn.BatchNorm2d(cout, **dtype))
        layers.append(nn.ReLU())
    return layers + [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * c, 10, **dtype)]


def torch_model(c: int, dtype: torch.dtype, batch_norm: bool) -> torch.nn.Module:
    return torch.nn.Sequential(*_layers(torch.nn, c, batch_norm)).cuda().to(dtype)


def burn_model(c: int, dtype: Any, batch_norm: bool, weights: list[np.ndarray]
               ) -> burn.nn.Module:
    model = burn.nn.Sequential(*_layers(burn.nn, c, batch_norm, dtype=dtype))
    names = [name for name, _ in model.named_parameters()]  # buffers too, in torch's order
    return model.load_state_dict(dict(zip(names, weights)))


def steps(n: int, c: int, side: int, dtype: str, captured: bool, batch_norm: bool = False
          ) -> tuple[Callable[[], None], Callable[[], None], list[float], list[float]]:
    """(burn's step, torch's step, their first losses) for one case."""
    torch_dtype = getattr(torch, dtype)
    theirs = torch_model(c, torch_dtype, batch_norm)
    weights = [v.detach().cpu().float().numpy() if v.is_floating_point()
               else v.detach().cpu().numpy() for v in theirs.state_dict().values()]
    x = torch.randn(n, 3, side, side, device="cuda").to(torch_dtype)
    labels = torch.randint(0, 10, (n,), device="cuda")
    their_opt = torch.optim.AdamW(theirs.parameters(), lr=1e-3)
    their_losses: list[float] = []

    def torch_step() -> None:
        loss = torch.nn.functional.cross_entropy(theirs(x).float(), labels)
        loss.backward()
        their_opt.step()
        their_opt.zero_grad(set_to_none=True)
        their_losses.append(loss)

    ad = burn.Autodiff(burn.Cuda())
    state = {"model": burn_model(c, getattr(burn, dtype), batch_norm,
                                 weights).to(ad).require_grad()}
    optimizer = burn.optim.AdamW(lr=1e-3)
    xb = from_torch(x, ad)
    # labels from NumPy: their bounds are known at upload, so no read-back checks them
    yb = burn.from_numpy(labels.cpu().numpy(), backend=ad)
    our_losses: list[float] = []

    def train(model: burn.nn.Module, x: burn.Tensor, y: burn.Tensor):
        loss = burn.nn.cross_entropy(model(x).to(burn.float32), y)
        return optimizer.step(model, loss.backward()), loss

    run = burn.train.CapturedStep(train, optimizer) if captured else train

    def burn_step() -> None:
        state["model"], loss = run(state["model"], xb, yb)
        our_losses.append(loss)

    return burn_step, torch_step, our_losses, their_losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help='"N,C,H;..." (default: the list here)')
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    parser.add_argument("--batch-norm", action="store_true",
                        help="a BatchNorm2d after each convolution")
    args = parser.parse_args()
    cases = [tuple(map(int, c.split(","))) for c in args.cases.split(";")] if args.cases \
        else CASES
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.dtype}"
          f"{', batch norm' if args.batch_norm else ''}; ratio: "
          f"torch's step time over burn's (above 1: burn is faster)")
    for n, c, side in cases:
        row: dict[str, object] = {"case": f"N={n} C={c} H=W={side}"}
        for captured in (False, True):
            ours, theirs, our_losses, their_losses = steps(n, c, side, args.dtype, captured,
                                                           args.batch_norm)
            for _ in range(3):  # the same first steps: losses compared
                ours()
                theirs()
            mine, torch_time = step_seconds(ours), step_seconds(theirs)
            losses = [[round(float(v.numpy()), 4) for v in our_losses[:3] + our_losses[-1:]],
                      [round(float(v.detach()), 4) for v in their_losses[:3] + their_losses[-1:]]]
            key = "captured" if captured else "eager"
            row[key] = {"step_ms": (round(mine * 1e3, 3), round(torch_time * 1e3, 3)),
                        "ratio": round(torch_time / mine, 3),
                        "losses_first3_last": losses}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
