"""Train a small transformer with burn: a causal language model learns to reverse sequences.

    python examples/train_transformer.py                  # the default backend
    python examples/train_transformer.py --backend cpu    # or cuda, wgpu, numpy
    python examples/train_transformer.py --steps 600 --layers 2 --d-model 64
    python examples/train_transformer.py --backend cuda --captured   # steps as CUDA graphs

Each example is ``x_1 ... x_n | x_n ... x_1`` over ten digits: after the separator the model
must emit the first half backwards, which it can only do by attending ``n`` tokens back, to a
position that moves with every step. The model: token and position embeddings, pre-norm
``burn.nn.TransformerEncoderLayer`` blocks with causal self-attention (burn's fused flash
attention kernels, forward and backward), a final ``LayerNorm`` and a linear read-out;
``AdamW``, cross entropy on the reversed half. Exits non-zero if fewer than 90 % of the
reversed digits are right at the end (greedy, one token at a time from the separator on).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np

import burn
from burn import nn

DIGITS = 10
SEPARATOR = DIGITS  # the token between the two halves


def reversal_batch(rng: np.random.Generator, batch: int, length: int) -> np.ndarray:
    """``batch`` sequences ``x | reversed(x)`` of ``2 * length + 1`` tokens."""
    digits = rng.integers(0, DIGITS, (batch, length))
    separator = np.full((batch, 1), SEPARATOR)
    return np.concatenate([digits, separator, digits[:, ::-1]], axis=1).astype(np.int64)


class ReversingTransformer(nn.Module):
    """Embeddings, ``layers`` causal encoder blocks, a norm and the logits of the next token.

    Example:
        >>> model = ReversingTransformer(length=4, d_model=16, heads=2, layers=1)
        >>> model(burn.zeros((3, 9), dtype=burn.int64)).shape
        (3, 9, 11)
    """

    def __init__(self, length: int, d_model: int = 64, heads: int = 4, layers: int = 2,
                 generator: burn.Generator | None = None):
        generator = generator or burn.Generator(0)
        self.tokens = nn.Embedding(DIGITS + 1, d_model, generator=generator)
        self.positions = nn.Embedding(2 * length + 1, d_model, generator=generator)
        self.blocks = [nn.TransformerEncoderLayer(d_model, heads, 4 * d_model,
                                                  generator=generator) for _ in range(layers)]
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, DIGITS + 1, generator=generator)

    def forward(self, tokens: burn.Tensor) -> burn.Tensor:
        positions = burn.arange(tokens.shape[1], dtype=burn.int64, backend=tokens.backend)
        # embeddings are N(0, 1): scaled down so the residual stream starts near unit size
        x = (self.tokens(tokens) + self.positions(positions)) * 0.5
        for block in self.blocks:
            x = block(x, causal=True)
        return self.readout(self.norm(x))


def reversal_loss(model: Callable[[burn.Tensor], burn.Tensor], tokens: burn.Tensor,
                  length: int) -> burn.Tensor:
    """Cross entropy of the predictions of the reversed half (each from the token before)."""
    logits = model(tokens[:, :-1])
    predicted = logits[:, length:]                     # after the separator's position
    batch = tokens.shape[0]
    return nn.cross_entropy(predicted.reshape(batch * length, DIGITS + 1),
                            tokens[:, length + 1:].reshape(batch * length))


def reversed_accuracy(model: nn.Module, tokens: np.ndarray, length: int,
                      backend: burn.Backend) -> float:
    """The share of digits right when the model writes the reversed half itself, greedily."""
    written = tokens[:, :length + 1]
    for _ in range(length):
        logits = model(burn.from_numpy(written, backend=backend))
        choice = logits[:, -1].argmax(axis=-1).numpy().astype(np.int64)
        written = np.concatenate([written, choice[:, None]], axis=1)
    return float(np.mean(written[:, length + 1:] == tokens[:, length + 1:]))


def train(backend: burn.Backend, steps: int = 400, length: int = 8, batch: int = 64,
          d_model: int = 64, heads: int = 4, layers: int = 2, lr: float = 3e-3,
          log_every: int = 0, seed: int = 0, evaluate: int = 256, captured: bool = False,
          precision: str | None = None) -> tuple[list[float], float]:
    """Train on fresh batches; returns every step's loss and the final reversal accuracy on
    ``evaluate`` new sequences (NaN for none). ``captured``: the step runs as a
    ``burn.train.CapturedStep`` (one CUDA graph; the Cuda backend on a GPU). ``precision``:
    ``"bfloat16"`` runs the model in bfloat16 with float32 parameters
    (``burn.train.MixedPrecision``)."""
    ad = burn.Autodiff(backend)
    amp = None if precision is None else burn.train.MixedPrecision(precision)
    if amp is not None:
        amp.check_backend(backend)
    rng = np.random.default_rng(seed)
    model = ReversingTransformer(length, d_model, heads, layers).to(ad).require_grad()
    schedule = burn.optim.Warmup(burn.optim.CosineDecay(lr, total_steps=steps,
                                                        final_lr=lr / 20),
                                 steps=max(1, steps // 10))
    optimizer = burn.optim.AdamW(lr=lr, weight_decay=0.0)

    def train_step(model: nn.Module, tokens: burn.Tensor) -> tuple[nn.Module, burn.Tensor]:
        if amp is None:
            loss = reversal_loss(model, tokens, length)
            return optimizer.step(model, loss.backward()), loss
        compute = amp.compute_model(model)  # bfloat16 copies, recorded: gradients in float32
        loss = reversal_loss(lambda t: amp.output(compute(t)), tokens, length)
        grads = amp.unscale(amp.scale(loss).backward())
        if grads is None:  # float16's gradients overflowed: skip the step (scale halved)
            return model, loss
        return optimizer.step(model, grads), loss

    run = burn.train.CapturedStep(train_step, optimizer) if captured else train_step
    losses = []
    for step in range(steps):
        optimizer.lr = schedule(step)  # between steps, as a captured step reads it
        tokens = burn.from_numpy(reversal_batch(rng, batch, length), backend=ad)
        model, loss = run(model, tokens)
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    if not evaluate:
        return losses, float("nan")
    accuracy = reversed_accuracy(model.eval(), reversal_batch(rng, evaluate, length), length, ad)
    return losses, accuracy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None, help="cpu, cuda, wgpu or numpy")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--length", type=int, default=8, help="digits to reverse")
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--captured", action="store_true",
                        help="run each step as one CUDA graph (the cuda backend on a GPU)")
    parser.add_argument("--precision", choices=["bfloat16", "float16"],
                        help="compute in this dtype, parameters in float32 (float16 with a "
                             "dynamic loss scale, which --captured cannot replay)")
    args = parser.parse_args()
    if args.captured and args.precision == "float16":  # refused here, not after compiling
        parser.error("--captured replays one graph; float16's dynamic loss scale skips steps "
                     "on the host: use --precision bfloat16 with --captured")
    backend = burn.backend_for(args.backend) if args.backend else burn.default_backend()
    print(f"training on {backend!r}", flush=True)
    start = time.perf_counter()
    losses, accuracy = train(backend, args.steps, args.length, d_model=args.d_model,
                             layers=args.layers, log_every=50, captured=args.captured,
                             precision=args.precision)
    print(f"{args.steps} steps in {time.perf_counter() - start:.1f} s; loss {losses[0]:.3f} -> "
          f"{losses[-1]:.3f}; reversed digits right: {accuracy:.1%}")
    return 0 if accuracy >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
