"""Train a small network with burn's Autodiff backend: a two-layer perceptron learns to tell
two interleaved spirals apart, on any backend.

    python examples/train_mlp.py                  # the default backend (CUDA, WebGPU or CPU)
    python examples/train_mlp.py --backend wgpu   # or cpu, cuda, numpy
    python examples/train_mlp.py --fusion         # elementwise runs fused: Autodiff(Fusion(...))

Every op of the forward pass and of the gradients is a cubepy kernel of the chosen backend:
``burn.nn`` builds the network, ``burn.Autodiff`` records the graph, ``loss.backward()``
returns the gradients and ``burn.optim.SGD`` (with momentum) makes the next model. Exits
non-zero if the network does not learn (training accuracy under 95 %).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import burn


def spirals(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points of each of two interleaved spirals, and their labels (0 or 1)."""
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0.05, 1.0, n)) * 3 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3 * np.pi)
    points = np.concatenate([arm, -arm]) + rng.normal(0, 0.02, (2 * n, 2))
    labels = np.concatenate([np.zeros(n, np.int64), np.ones(n, np.int64)])
    return points.astype(np.float32), labels


def make_model(backend: burn.Autodiff, hidden: int, seed: int = 0) -> burn.nn.Module:
    """Two tanh layers and a linear read-out to the two classes' logits, parameters tracked."""
    generator = burn.Generator(seed)
    model = burn.nn.Sequential(
        burn.nn.Linear(2, hidden, generator=generator), burn.nn.Tanh(),
        burn.nn.Linear(hidden, hidden, generator=generator), burn.nn.Tanh(),
        burn.nn.Linear(hidden, 2, generator=generator))
    return model.to(backend).require_grad()


def train(backend: burn.Backend, steps: int = 300, hidden: int = 32, lr: float = 0.3,
          momentum: float = 0.9, n: int = 100, log_every: int = 0
          ) -> tuple[list[float], float]:
    """Full-batch training on the spirals; returns the loss of every step and the final
    training accuracy."""
    ad = burn.Autodiff(backend)
    points, labels = spirals(n)
    x = burn.from_numpy(points, backend=ad)
    target = burn.from_numpy(labels, backend=ad)
    model = make_model(ad, hidden)
    optimizer = burn.optim.SGD(lr=lr, momentum=momentum)
    losses = []
    for step in range(steps):
        loss = burn.nn.cross_entropy(model(x), target)
        # the step returns the next model (new leaves); nothing is mutated
        model = optimizer.step(model, loss.backward())
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    predicted = model(x).argmax(axis=1).numpy()
    return losses, float(np.mean(predicted == labels))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None, help="cpu, cuda, wgpu or numpy")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--fusion", action="store_true",
                        help="fuse runs of elementwise ops into single kernels")
    args = parser.parse_args()
    backend = burn.backend_for(args.backend) if args.backend else burn.default_backend()
    if args.fusion:
        backend = burn.Fusion(backend)
    print(f"training on {backend!r}")
    start = time.perf_counter()
    losses, accuracy = train(backend, steps=args.steps, log_every=50)
    print(f"{args.steps} steps in {time.perf_counter() - start:.1f} s; loss {losses[0]:.3f} -> "
          f"{losses[-1]:.3f}; training accuracy {accuracy:.1%}")
    return 0 if accuracy >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
