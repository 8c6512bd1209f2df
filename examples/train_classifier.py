"""Train a classifier the way a real project does: a dataset split into training and validation
sets, shuffled minibatches, a warm-up then cosine learning rate, accuracy measured on both sets,
a checkpoint after every epoch and a run that resumes where it stopped.

    python examples/train_classifier.py                        # the default backend
    python examples/train_classifier.py --backend wgpu --fusion
    python examples/train_classifier.py --checkpoints runs/spirals            # stopped midway
    python examples/train_classifier.py --checkpoints runs/spirals --resume   # goes on

(Resume with the ``--epochs`` of the stopped run: the learning-rate schedule spans them.)

The data: three interleaved spiral arms in the plane, one class each. ``burn.data`` splits and
batches them, ``burn.train.Learner`` runs the loop and prints its dashboard. Exits non-zero if
the validation accuracy ends under 90 %.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import burn
from burn import data, nn, optim, train


def spiral_arms(per_class: int, classes: int = 3, seed: int = 0) -> data.ArrayDataset:
    """``per_class`` noisy points on each of ``classes`` spiral arms, labelled by arm."""
    rng = np.random.default_rng(seed)
    radius = np.sqrt(rng.uniform(0.02, 1.0, (classes, per_class)))
    angle = radius * 3.5 + np.arange(classes)[:, None] * (2 * np.pi / classes)
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=-1)
    points += rng.normal(0, 0.03, points.shape)
    labels = np.repeat(np.arange(classes), per_class)
    return data.ArrayDataset(points.reshape(-1, 2).astype(np.float32), labels.astype(np.int64))


def make_model(hidden: int, classes: int = 3, seed: int = 0) -> nn.Module:
    generator = burn.Generator(seed)
    return nn.Sequential(
        nn.Linear(2, hidden, generator=generator), nn.GELU(),
        nn.Linear(hidden, hidden, generator=generator), nn.GELU(),
        nn.Linear(hidden, classes, generator=generator))


def run(backend: burn.Backend | str, epochs: int = 20, per_class: int = 400, hidden: int = 64,
        batch_size: int = 64, lr: float = 0.01, checkpoints: str | None = None,
        resume: bool = False, dashboard: bool | train.Dashboard = True
        ) -> train.Learner:
    """Train for ``epochs`` epochs and return the learner (its ``history`` holds the
    metrics of every epoch)."""
    training, validation = data.random_split(spiral_arms(per_class), [0.8, 0.2], seed=0)
    loader = data.DataLoader(training, batch_size, shuffle=True, seed=1, backend=backend)
    valid = data.DataLoader(validation, 256, backend=backend)
    steps = epochs * len(loader)
    schedule = optim.Warmup(optim.CosineDecay(lr, total_steps=steps, final_lr=lr / 20),
                            steps=max(1, steps // 20))
    learner = train.Learner(make_model(hidden).to(backend), optim.AdamW(lr=lr),
                            nn.cross_entropy, schedule=schedule, metrics=[train.Accuracy()],
                            clip_grad_norm=1.0, checkpoints=checkpoints, dashboard=dashboard)
    learner.fit(loader, epochs, valid=valid, resume=resume)
    return learner


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None, help="cpu, cuda, wgpu or numpy")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--fusion", action="store_true",
                        help="fuse runs of elementwise ops into single kernels")
    parser.add_argument("--checkpoints", default=None,
                        help="a folder to save a checkpoint to after each epoch")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest checkpoint in --checkpoints")
    args = parser.parse_args()
    backend = burn.backend_for(args.backend) if args.backend else burn.default_backend()
    if args.fusion:
        backend = burn.Fusion(backend)
    print(f"training on {backend!r}", flush=True)
    start = time.perf_counter()
    try:
        learner = run(backend, args.epochs, checkpoints=args.checkpoints, resume=args.resume)
    except KeyboardInterrupt:  # the learner has said where to resume from
        return 130
    if not learner.history:
        print("nothing to do: the checkpoint has all the epochs asked for")
        return 0
    accuracy = learner.history[-1]["valid"]["accuracy"]
    print(f"{learner.epochs_done} epochs ({learner.step} steps) in "
          f"{time.perf_counter() - start:.1f} s; validation accuracy {accuracy:.1%}")
    return 0 if accuracy >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
