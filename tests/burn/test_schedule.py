"""burn.optim's learning-rate schedules against their closed forms, their errors, and the
optimizers' state saved and restored (a resumed optimizer steps as the uninterrupted one)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import burn
from burn import nn, optim

STEPS = [0, 1, 2, 5, 9, 10, 11, 50, 99, 100, 101, 500]

CASES = {
    "constant": (optim.Constant(0.3), lambda s: 0.3),
    "step": (optim.StepDecay(0.2, every=10, gamma=0.5), lambda s: 0.2 * 0.5 ** (s // 10)),
    "multistep": (optim.MultiStepDecay(1.0, [10, 50, 100], gamma=0.1),
                  lambda s: 0.1 ** sum(s >= m for m in (10, 50, 100))),
    "exponential": (optim.ExponentialDecay(0.5, gamma=0.99), lambda s: 0.5 * 0.99 ** s),
    "linear": (optim.LinearDecay(1.0, total_steps=100, final_lr=0.1),
               lambda s: 1.0 - 0.9 * min(s, 100) / 100),
    "cosine": (optim.CosineDecay(0.1, total_steps=100, final_lr=0.01),
               lambda s: 0.01 + 0.045 * (1 + math.cos(math.pi * min(s, 100) / 100))),
    "warmup-constant": (optim.Warmup(0.4, steps=10), lambda s: 0.4 * min(1.0, (s + 1) / 10)),
    "warmup-cosine": (optim.Warmup(optim.CosineDecay(1.0, total_steps=100), steps=10),
                      lambda s: min(1.0, (s + 1) / 10) * 0.5
                      * (1 + math.cos(math.pi * min(s, 100) / 100))),
}


@pytest.mark.parametrize("name", CASES)
def test_schedule_follows_its_formula(name):
    schedule, formula = CASES[name]
    got = [schedule(s) for s in STEPS]
    np.testing.assert_allclose(got, [formula(s) for s in STEPS], rtol=1e-12, atol=1e-15)


def test_a_schedule_is_a_value():
    cosine = optim.CosineDecay(0.1, total_steps=10)
    first = [cosine(s) for s in range(12)]
    assert [cosine(s) for s in range(12)] == first  # no state: asking again changes nothing
    assert "CosineDecay(lr=0.1" in repr(cosine)


@pytest.mark.parametrize("make, message", [
    (lambda: optim.Constant(-1.0), r"Constant: the learning rate must be a finite number >= 0"),
    (lambda: optim.Constant(float("nan")), r"finite number >= 0, got nan"),
    (lambda: optim.StepDecay(0.1, every=0), r"StepDecay: every must be > 0, got 0"),
    (lambda: optim.ExponentialDecay(0.1, gamma=0), r"gamma must be > 0"),
    (lambda: optim.MultiStepDecay(0.1, [5, 5]), r"milestones must be increasing steps >= 0"),
    (lambda: optim.CosineDecay(0.1, total_steps=0), r"total_steps must be > 0"),
    (lambda: optim.LinearDecay(0.1, 10, final_lr=-1), r"LinearDecay: the learning rate must"),
    (lambda: optim.Warmup("fast", steps=3), r"Warmup: expected a schedule or a number"),
    (lambda: optim.Warmup(0.1, steps=0), r"Warmup: steps must be > 0"),
    (lambda: optim.Constant(0.1)(-1), r"Constant: step must be >= 0, got -1"),
])
def test_schedule_errors(make, message):
    with pytest.raises(burn.BurnError, match=message):
        make()


def test_learner_refuses_what_is_no_schedule():
    with pytest.raises(burn.BurnError, match=r"expected a learning-rate schedule .* got str"):
        burn.train.Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss, schedule="cosine")


class Quadratic(nn.Module):
    def __init__(self, backend):
        self.w = burn.tensor([[1.0, -2.0], [0.5, 3.0]], backend=backend)
        self.b = burn.tensor([0.25, -0.5], backend=backend)

    def forward(self):
        return ((self.w * self.w).sum() + (self.b * self.w).sum() + self.b.sum()).reshape(())


@pytest.mark.parametrize("make, buffers", [
    (lambda: optim.SGD(lr=0.1, momentum=0.9), {"momentum"}),
    (lambda: optim.AdamW(lr=0.05), {"step", "exp_avg", "exp_avg_sq"})], ids=["sgd", "adamw"])
def test_optimizer_state_round_trip(backend, make, buffers):
    ad = burn.Autodiff(backend)
    model, opt = Quadratic(ad).require_grad(), make()
    for _ in range(3):
        model = opt.step(model, model().backward())
    saved = opt.state_dict()
    assert set(saved) == {f"{name}/{buffer}" for name in ("w", "b") for buffer in buffers}
    assert all(saved[f"{name}/step"] == 3 for name in ("w", "b") if "step" in buffers)
    continued = model
    for _ in range(2):
        continued = opt.step(continued, continued().backward())

    restored_opt = make()
    restored_opt.load_state_dict(saved, model)
    assert set(restored_opt.state_dict()) == set(saved)
    resumed = model
    for _ in range(2):
        resumed = restored_opt.step(resumed, resumed().backward())
    for name, value in continued.state_dict().items():
        np.testing.assert_array_equal(resumed.state_dict()[name], value, err_msg=name)


def test_optimizer_state_of_an_unknown_parameter():
    opt = optim.Adam()
    with pytest.raises(burn.BurnError, match=r"Adam.load_state_dict: 'gone/exp_avg' belongs to "
                                             r"no parameter of the module \(it has \['b', 'w'\]"):
        opt.load_state_dict({"gone/exp_avg": np.zeros(2, np.float32)}, Quadratic("cpu"))
