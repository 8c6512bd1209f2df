"""burn.optim: each optimizer's steps against torch's update rules written in NumPy, on every
backend present; parameters without gradients; 16-bit parameters; clipping; training."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

import burn
from burn import nn, optim

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import train_mlp  # noqa: E402 - the example is the code under test

C = np.array([0.5, -1.0, 2.0, 0.25])
START = np.array([1.0, -2.0, 0.5, 3.0])


class Vector(nn.Module):
    """One parameter vector: the loss ``sum(c * p + p ** 2 / 2)`` has gradient ``c + p``."""

    def __init__(self, values, backend, dtype="float32"):
        self.p = burn.tensor(values, dtype=dtype, backend=backend)

    def forward(self):
        return (self.p * burn.from_numpy(C, backend=self.p.backend).to(self.p.dtype)
                + self.p * self.p * 0.5).sum()


def run(optimizer, backend, steps=4, dtype="float32"):
    model = Vector(START, burn.Autodiff(backend), dtype).require_grad()
    for _ in range(steps):
        model = optimizer.step(model, model().backward())
    return model.p.numpy().astype(np.float64)


def reference_sgd(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, steps=4):
    p, buf = START.copy(), None
    for _ in range(steps):
        g = C + p + weight_decay * p
        if momentum:
            buf = g if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def reference_adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False,
                   steps=4):
    p, m, v = START.copy(), np.zeros(4), np.zeros(4)
    for t in range(1, steps + 1):
        g = C + p
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        m_hat, v_hat = m / (1 - betas[0] ** t), v / (1 - betas[1] ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


SGD_CASES = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.1, momentum=0.9),
    "dampened_decayed": dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1),
    "nesterov": dict(lr=0.1, momentum=0.9, nesterov=True),
}


@pytest.mark.parametrize("name", sorted(SGD_CASES))
def test_sgd(name, backend):
    options = SGD_CASES[name]
    np.testing.assert_allclose(run(optim.SGD(**options), backend), reference_sgd(**options),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["adam", "adam_l2", "adamw"])
def test_adam(kind, backend):
    if kind == "adamw":
        opt, expected = optim.AdamW(lr=0.1), reference_adam(0.1, weight_decay=0.01,
                                                             decoupled=True)
    else:
        decay = 0.1 if kind == "adam_l2" else 0.0
        opt = optim.Adam(lr=0.1, betas=(0.8, 0.99), weight_decay=decay)
        expected = reference_adam(0.1, (0.8, 0.99), weight_decay=decay)
    np.testing.assert_allclose(run(opt, backend), expected, rtol=1e-5, atol=1e-6)


def test_half_parameters_update_in_float32(backend):
    dtype = "float16" if "float16" in backend.dtypes else "float32"
    got = run(optim.Adam(lr=0.1), backend, dtype=dtype)
    expected = reference_adam(0.1)
    np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-3)  # float16's rounding


def test_parameters_without_gradients_stay(backend):
    ad = burn.Autodiff(backend)
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)).to(ad).require_grad()
    frozen = model.map_parameters(
        lambda name, p: p.detach() if name.startswith("layers.0") else p)
    x = burn.ones((3, 2), backend=ad)
    stepped = optim.SGD(lr=1.0).step(frozen, frozen(x).sum().backward())
    before, after = frozen.parameters(), stepped.parameters()
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(before[:2], after[:2]))
    assert not np.array_equal(before[2].numpy(), after[2].numpy())
    assert all(p.requires_grad for p in after[2:]) and not after[0].requires_grad
    # a parameter the loss does not reach
    unused = optim.SGD(lr=1.0).step(model, model.layers[0](x).sum().backward())
    assert np.array_equal(unused.layers[1].weight.numpy(), model.layers[1].weight.numpy())


def test_learning_rate_override_and_errors(backend):
    ad = burn.Autodiff(backend)
    model = Vector(START, ad).require_grad()
    stepped = optim.SGD(lr=100.0).step(model, model().backward(), lr=0.1)
    np.testing.assert_allclose(stepped.p.numpy(), START - 0.1 * (C + START), rtol=1e-6)
    with pytest.raises(burn.BurnError, match="the learning rate must be >= 0, got -1"):
        optim.SGD(lr=-1)
    with pytest.raises(burn.BurnError, match="nesterov needs a momentum > 0 and no dampening"):
        optim.SGD(lr=0.1, nesterov=True)
    with pytest.raises(burn.BurnError, match=r"betas must be in \[0, 1\)"):
        optim.Adam(betas=(0.9, 1.0))
    with pytest.raises(burn.BurnError, match="expected the Gradients that backward"):
        optim.Adam().step(model, {})


def test_clip_grad_norm(backend):
    ad = burn.Autodiff(backend)
    model = Vector(START, ad).require_grad()
    grads = model().backward()
    clipped, norm = optim.clip_grad_norm(grads, 1.0)
    full = np.linalg.norm(C + START)
    np.testing.assert_allclose(norm.item(), full, rtol=1e-6)
    np.testing.assert_allclose(clipped[model.p].numpy(), (C + START) / (full + 1e-6), rtol=1e-5)
    same, _ = optim.clip_grad_norm(grads, 100.0)
    np.testing.assert_allclose(same[model.p].numpy(), C + START, rtol=1e-6)


# The NumPy references of the training checks are computed once, not once per backend param;
# tuples of floats, so no test can change what the next one compares against.
@functools.cache
def _numpy_mlp_losses() -> tuple[float, ...]:
    return tuple(train_mlp.train(burn.NumPy(), steps=15, n=20)[0])


def test_training_follows_the_reference(backend):
    """15 steps of the example (nn layers, SGD with momentum) on ``backend`` and on NumPy:
    the same losses."""
    losses, _ = train_mlp.train(backend, steps=15, n=20)
    np.testing.assert_allclose(losses, _numpy_mlp_losses(), rtol=2e-3)
    assert losses[-1] < 0.8 * losses[0]


def test_training_learns_the_spirals():
    losses, accuracy = train_mlp.train(burn.NumPy(), steps=300)
    assert losses[-1] < 0.05 * losses[0] and accuracy >= 0.95


def _cnn_losses(backend, steps=4):
    """A small convolutional classifier trained by Adam: conv, pooling, norm, dropout off."""
    ad = burn.Autodiff(backend)
    generator = burn.Generator(5)
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1, generator=generator, backend=backend), nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, stride=2, generator=generator, backend=backend),
        nn.SiLU(), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.LayerNorm(4, backend=backend),
        nn.Dropout(0.5), nn.Linear(4, 3, generator=generator, backend=backend),
    ).eval().to(ad).require_grad()
    rng = np.random.default_rng(0)
    x = burn.from_numpy(rng.normal(size=(6, 2, 8, 8)).astype(np.float32), backend=ad)
    y = burn.from_numpy(np.array([0, 1, 2, 0, 1, 2]), backend=ad)
    opt = optim.Adam(lr=0.05)
    losses = []
    for _ in range(steps):
        loss = nn.cross_entropy(model(x), y)
        model = opt.step(model, loss.backward())
        losses.append(loss.item())
    return losses


@functools.cache
def _numpy_cnn_losses() -> tuple[float, ...]:
    return tuple(_cnn_losses(burn.NumPy()))


def test_training_a_convolutional_network(backend):
    losses = _cnn_losses(backend)
    np.testing.assert_allclose(losses, _numpy_cnn_losses(), rtol=2e-3)
    assert losses[-1] < losses[0]
