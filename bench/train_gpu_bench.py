"""Whole training epochs with ``burn.train.Learner`` and ``burn.data.DataLoader`` against a
hand-written burn loop and a hand-written torch loop: what the framework's loop costs.

The task: 65,536 points of three spiral arms (``examples/train_classifier.py``), an MLP
2 -> H -> H -> 3 with GELU, cross-entropy, AdamW, shuffled batches of 512 (128 steps per
epoch), float32. Every variant starts from the same weights and reads the epoch's loss and
accuracy once at its end (the torch loop and the hand-written burn loop accumulate them on the
device, as the Learner's metrics do).

- ``burn loop``: batches cut from a permuted NumPy array and uploaded with ``from_numpy``;
  forward, ``backward()``, ``AdamW.step``; ``burn loop+fusion`` on ``Fusion(backend)``.
- ``Learner``: ``DataLoader(shuffle=True, prefetch=2)`` + ``Learner`` with ``Accuracy``,
  a warm-up + cosine schedule and no dashboard; ``Learner+fusion`` on ``Fusion(backend)``.
- ``torch loop``: the same in torch (``nn.Sequential``, ``torch.optim.AdamW``), batches
  uploaded with ``torch.from_numpy(...).cuda()``.
- ``loader only``: one epoch of the DataLoader's batches on the device, nothing else.

Seconds per epoch: the median of three epochs after one warm-up epoch (wall clock, the device
drained at each end). Backends: cuda, and wgpu when present (``CUBEPY_WGPU_ADAPTER``).

    source .whl/gpu-env.sh && python3 bench/train_gpu_bench.py [--hidden 256 512]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import train_classifier  # noqa: E402

import burn  # noqa: E402
from burn import data, nn, optim, train  # noqa: E402

BATCH, POINTS, LR = 512, 65536, 2e-3


def epochs_seconds(run_epoch: Callable[[int], None], turns: int = 3) -> float:
    """Median wall-clock seconds of one epoch, after a warm-up epoch (compilation)."""
    run_epoch(0)
    times = []
    for epoch in range(1, turns + 1):
        start = time.perf_counter()
        run_epoch(epoch)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def dataset() -> data.ArrayDataset:
    return train_classifier.spiral_arms(POINTS // 3 + 1)


def burn_loop(backend: burn.Backend, hidden: int) -> Callable[[int], None]:
    ad = burn.Autodiff(backend)
    x, y = dataset().arrays
    state = {"model": train_classifier.make_model(hidden).to(ad).require_grad()}
    opt = optim.AdamW(lr=LR)

    def run_epoch(epoch: int) -> None:
        order = np.random.default_rng((1, epoch)).permutation(len(x))
        total = correct = None
        for start in range(0, len(x), BATCH):
            rows = order[start:start + BATCH]
            xb = burn.from_numpy(x[rows], backend=ad)
            yb = burn.from_numpy(y[rows], backend=ad)
            out = state["model"](xb)
            loss = nn.cross_entropy(out, yb)
            state["model"] = opt.step(state["model"], loss.backward())
            hits = (out.detach().argmax(axis=-1) == yb).sum().to(burn.float32)
            batch_loss = loss.detach() * float(len(rows))
            total = batch_loss if total is None else total + batch_loss
            correct = hits if correct is None else correct + hits
        total.item(), correct.item()

    return run_epoch


def learner_epochs(backend: burn.Backend, hidden: int) -> Callable[[int], None]:
    loader = data.DataLoader(dataset(), BATCH, shuffle=True, seed=1, backend=backend)
    schedule = optim.Warmup(optim.CosineDecay(LR, total_steps=8 * len(loader)), steps=50)
    learner = train.Learner(train_classifier.make_model(hidden).to(backend),
                            optim.AdamW(lr=LR), nn.cross_entropy, schedule=schedule,
                            metrics=[train.Accuracy()], dashboard=False)

    def run_epoch(epoch: int) -> None:
        learner.fit(loader, epochs=epoch + 1)  # one more epoch; metrics read at its end

    return run_epoch


def loader_only(backend: burn.Backend) -> Callable[[int], None]:
    loader = data.DataLoader(dataset(), BATCH, shuffle=True, seed=1, backend=backend)

    def run_epoch(epoch: int) -> None:
        loader.set_epoch(epoch)
        batches = [x for x, _ in loader]  # all uploaded; the last one read back
        batches[-1].numpy()

    return run_epoch


def torch_loop(hidden: int) -> Callable[[int], None]:
    import torch

    x, y = dataset().arrays
    weights = train_classifier.make_model(hidden).state_dict()
    model = torch.nn.Sequential(
        torch.nn.Linear(2, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, hidden),
        torch.nn.GELU(), torch.nn.Linear(hidden, 3)).cuda()
    model.load_state_dict({k.replace("layers.", ""): torch.from_numpy(v)
                           for k, v in weights.items()})
    opt = torch.optim.AdamW(model.parameters(), lr=LR)

    def run_epoch(epoch: int) -> None:
        order = np.random.default_rng((1, epoch)).permutation(len(x))
        total = torch.zeros((), device="cuda")
        correct = torch.zeros((), device="cuda")
        for start in range(0, len(x), BATCH):
            rows = order[start:start + BATCH]
            xb = torch.from_numpy(x[rows]).cuda()
            yb = torch.from_numpy(y[rows]).cuda()
            out = model(xb)
            loss = torch.nn.functional.cross_entropy(out, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach() * len(rows)
            correct += (out.detach().argmax(-1) == yb).sum()
        total.item(), correct.item()

    return run_epoch


def report(backend_name: str, hidden: int, times: dict[str, float]) -> None:
    steps = -(-POINTS // BATCH)
    base = times["burn loop"]
    for label, seconds in times.items():
        line = (f"{backend_name:5s} H={hidden:<4d} {label:16s} {seconds * 1e3:8.1f} ms/epoch "
                f"{seconds / steps * 1e3:6.2f} ms/step  {POINTS / seconds:10,.0f} items/s  "
                f"burn loop / this {base / seconds:5.2f}x")
        if "torch loop" in times:
            line += f"  torch / this {times['torch loop'] / seconds:5.2f}x"
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--backends", nargs="+", default=["cuda", "wgpu"])
    args = parser.parse_args()
    for name in args.backends:
        try:
            backend = burn.backend_for(name)
        except burn.BurnError as error:
            print(f"{name}: not present ({error})")
            continue
        print(f"{name}: {backend!r}", flush=True)
        for hidden in args.hidden:
            times = {"burn loop": epochs_seconds(burn_loop(backend, hidden)),
                     "burn loop+fusion": epochs_seconds(burn_loop(burn.Fusion(backend),
                                                                  hidden)),
                     "Learner": epochs_seconds(learner_epochs(backend, hidden)),
                     "Learner+fusion": epochs_seconds(learner_epochs(burn.Fusion(backend),
                                                                     hidden)),
                     "loader only": epochs_seconds(loader_only(backend))}
            if name == "cuda":
                times["torch loop"] = epochs_seconds(torch_loop(hidden))
            report(name, hidden, times)


if __name__ == "__main__":
    main()
