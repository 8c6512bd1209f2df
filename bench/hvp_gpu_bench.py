"""Gradients of gradients on the H200: a Hessian-vector product of an MLP's loss, burn
against torch.

The network: ``x @ W1 + b1 -> layer_norm -> gelu -> @ W2 + b2 -> gelu -> @ W3``, then a
cross entropy over the classes (log-softmax, the target's entry, the mean), float32. Rows:

- ``grad``: one backward pass for the weights' gradients (burn ``loss.backward()``, torch
  ``torch.autograd.grad``);
- ``hvp``: the forward pass, a backward that builds a graph (``create_graph=True``), the dot
  product of the gradients with fixed directions and its backward: the Hessian of the loss
  in the weights times the directions.

burn runs on ``burn.Autodiff(burn.Cuda())``; its HVP is checked against torch's first. Times
are ``burn_gpu_bench.compared_times``: "wall", CUDA events around batches of calls
(medians), and "GPU", the same calls queued behind a GPU sleep (two HVPs at a time, twenty
gradient passes: more launches than CUDA's queue holds would make the host wait).

    source .whl/gpu-env.sh && python3 bench/hvp_gpu_bench.py [--sizes 256x256,4096x4096]

``--sizes`` lists batch x width; small sizes measure the host's cost per op (burn runs 44
ops for the gradients with the forward pass, 217 for the HVP, counted on the NumPy backend),
large ones the kernels.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burn_gpu_bench import (  # noqa: E402
    compared_times,
    from_torch,
    largest_relative_difference,
)

import burn  # noqa: E402

CLASSES = 16


def torch_loss(x: torch.Tensor, labels: torch.Tensor, weights: list[torch.Tensor]
               ) -> torch.Tensor:
    w1, b1, w2, b2, w3 = weights
    f = torch.nn.functional
    h = f.gelu(f.layer_norm(x @ w1 + b1, (w1.shape[1],)))
    h = f.gelu(h @ w2 + b2)
    return f.cross_entropy(h @ w3, labels)


def burn_loss(x: burn.Tensor, labels: burn.Tensor, weights: list[burn.Tensor]) -> burn.Tensor:
    w1, b1, w2, b2, w3 = weights
    h = burn.gelu(burn.layer_norm(x @ w1 + b1, w1.shape[1]))
    h = burn.gelu(h @ w2 + b2)
    return -(h @ w3).log_softmax(axis=-1).gather(1, labels).mean()


def operands(batch: int, width: int) -> tuple:
    """The input, labels, weights and directions as torch tensors (seeded)."""
    torch.manual_seed(0)
    x = torch.randn(batch, width, device="cuda")
    labels = torch.randint(0, CLASSES, (batch,), device="cuda")
    shapes = [(width, width), (width,), (width, width), (width,), (width, CLASSES)]
    weights = [torch.randn(*s, device="cuda") / (s[0] ** 0.5 if len(s) == 2 else 10.0)
               for s in shapes]
    directions = [torch.randn_like(w) for w in weights]
    return x, labels, weights, directions


def torch_steps(x, labels, weights, directions):  # noqa: ANN001, ANN201
    params = [w.clone().requires_grad_() for w in weights]

    def grad() -> list[torch.Tensor]:
        return torch.autograd.grad(torch_loss(x, labels, params), params)

    def hvp() -> list[torch.Tensor]:
        grads = torch.autograd.grad(torch_loss(x, labels, params), params, create_graph=True)
        dot = sum((g * d).sum() for g, d in zip(grads, directions))
        return torch.autograd.grad(dot, params)

    return grad, hvp


def burn_steps(x, labels, weights, directions):  # noqa: ANN001, ANN201
    cuda = burn.Cuda()
    ad = burn.Autodiff(cuda)
    bx = from_torch(x, cuda).to(ad)
    # uploaded from the host, as a DataLoader's labels: their bounds are known, so the
    # gather's index check reads nothing back (README, "Index checks")
    blabels = burn.from_numpy(labels.to(torch.int32).reshape(-1, 1).cpu().numpy(),
                              backend=ad)
    params = [from_torch(w, cuda).to(ad).require_grad() for w in weights]
    bdirections = [from_torch(d, cuda).to(ad) for d in directions]

    def grad() -> list[burn.Tensor]:
        grads = burn_loss(bx, blabels, params).backward()
        return [grads[p] for p in params]

    def hvp() -> list[burn.Tensor]:
        grads = burn_loss(bx, blabels, params).backward(create_graph=True)
        dot = None
        for p, d in zip(params, bdirections):
            term = (grads[p] * d).sum()
            dot = term if dot is None else dot + term
        second = dot.backward()
        return [second[p] for p in params]

    return grad, hvp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="256x256,256x1024,4096x4096",
                        help="batch x width pairs, comma-separated")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for size in args.sizes.split(","):
        batch, width = (int(n) for n in size.split("x"))
        data = operands(batch, width)
        theirs, ours = torch_steps(*data), burn_steps(*data)
        for name, ours_fn, theirs_fn in (("grad", ours[0], theirs[0]),
                                         ("hvp", ours[1], theirs[1])):
            # float32 with products in another order: within 1e-3 of the largest entry
            error = largest_relative_difference(ours_fn(), theirs_fn(), 1e-3, name)
            # two HVPs (434 of burn's launches) fit CUDA's queue behind the sleep
            row = {"case": name, "batch": batch, "width": width, "relative_error": error,
                   **compared_times(ours_fn, theirs_fn, queued_calls=2 if name == "hvp" else 20)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
