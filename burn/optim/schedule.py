"""Learning-rate schedules: ``schedule(step)`` is the rate of optimizer step ``step`` (0 first).

A schedule is a plain callable of the step number, so it is a value with no state: the
``burn.train.Learner`` passes ``schedule(step)`` to ``Optimizer.step(..., lr=...)``, and a
resumed run gets the same rates from the step it resumes at. Schedules compose: ``Warmup``
wraps any other.

Example:
    >>> cosine = burn.optim.CosineDecay(0.1, total_steps=100, final_lr=0.001)
    >>> [round(cosine(s), 4) for s in (0, 50, 100, 200)]
    [0.1, 0.0505, 0.001, 0.001]
    >>> warm = burn.optim.Warmup(cosine, steps=10)
    >>> [round(warm(s), 4) for s in (0, 4, 9, 10)]  # a ramp, then the cosine
    [0.01, 0.0498, 0.098, 0.0976]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..backend.base import BurnError


class Schedule:
    """Base of the schedules: ``__call__(step) -> lr`` for steps 0, 1, 2, ..."""

    def __call__(self, step: int) -> float:
        if step < 0:
            raise BurnError(f"{type(self).__name__}: step must be >= 0, got {step}")
        return self.rate(step)

    def rate(self, step: int) -> float:
        raise NotImplementedError

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _positive(owner: str, **values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise BurnError(f"{owner}: {name} must be > 0, got {value!r}")


def _rate(owner: str, lr: float) -> float:
    if not (isinstance(lr, (int, float)) and lr >= 0 and math.isfinite(lr)):
        raise BurnError(f"{owner}: the learning rate must be a finite number >= 0, got {lr!r}")
    return float(lr)


class Constant(Schedule):
    """``lr`` at every step.

    Example:
        >>> burn.optim.Constant(0.1)(7)
        0.1
    """

    def __init__(self, lr: float):
        self.lr = _rate("Constant", lr)

    def rate(self, step: int) -> float:
        return self.lr


class StepDecay(Schedule):
    """``lr * gamma ** (step // every)``: the rate multiplied by ``gamma`` every ``every`` steps.

    Example:
        >>> [burn.optim.StepDecay(1.0, every=2, gamma=0.5)(s) for s in range(5)]
        [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, lr: float, every: int, gamma: float = 0.1):
        self.lr = _rate("StepDecay", lr)
        _positive("StepDecay", every=every, gamma=gamma)
        self.every, self.gamma = int(every), float(gamma)

    def rate(self, step: int) -> float:
        return self.lr * self.gamma ** (step // self.every)


class MultiStepDecay(Schedule):
    """``lr`` multiplied by ``gamma`` at each step of ``milestones`` (increasing).

    Example:
        >>> [burn.optim.MultiStepDecay(1.0, [2, 3], gamma=0.5)(s) for s in range(4)]
        [1.0, 1.0, 0.5, 0.25]
    """

    def __init__(self, lr: float, milestones: Sequence[int], gamma: float = 0.1):
        self.lr = _rate("MultiStepDecay", lr)
        _positive("MultiStepDecay", gamma=gamma)
        milestones = [int(m) for m in milestones]
        if any(b <= a for a, b in zip(milestones, milestones[1:])) or any(
                m < 0 for m in milestones):
            raise BurnError(f"MultiStepDecay: milestones must be increasing steps >= 0, "
                            f"got {milestones}")
        self.milestones, self.gamma = milestones, float(gamma)

    def rate(self, step: int) -> float:
        passed = sum(1 for m in self.milestones if step >= m)
        return self.lr * self.gamma ** passed


class ExponentialDecay(Schedule):
    """``lr * gamma ** step``.

    Example:
        >>> burn.optim.ExponentialDecay(1.0, gamma=0.5)(3)
        0.125
    """

    def __init__(self, lr: float, gamma: float):
        self.lr = _rate("ExponentialDecay", lr)
        _positive("ExponentialDecay", gamma=gamma)
        self.gamma = float(gamma)

    def rate(self, step: int) -> float:
        return self.lr * self.gamma ** step


class _Annealing(Schedule):
    """From ``lr`` at step 0 to ``final_lr`` at ``total_steps`` along ``shape(done)`` (done
    running from 0 to 1), then ``final_lr``."""

    def __init__(self, lr: float, total_steps: int, final_lr: float = 0.0):
        owner = type(self).__name__
        self.lr, self.final_lr = _rate(owner, lr), _rate(owner, final_lr)
        _positive(owner, total_steps=total_steps)
        self.total_steps = int(total_steps)

    def rate(self, step: int) -> float:
        done = min(step, self.total_steps) / self.total_steps
        return self.final_lr + (self.lr - self.final_lr) * self.shape(done)

    def shape(self, done: float) -> float:
        raise NotImplementedError


class LinearDecay(_Annealing):
    """From ``lr`` at step 0 to ``final_lr`` at ``total_steps`` in a straight line, then
    ``final_lr``.

    Example:
        >>> [burn.optim.LinearDecay(1.0, total_steps=4)(s) for s in (0, 1, 4, 9)]
        [1.0, 0.75, 0.0, 0.0]
    """

    def shape(self, done: float) -> float:
        return 1.0 - done


class CosineDecay(_Annealing):
    """Half a cosine from ``lr`` at step 0 to ``final_lr`` at ``total_steps``, then
    ``final_lr`` (SGDR's annealing without restarts)."""

    def shape(self, done: float) -> float:
        return 0.5 * (1 + math.cos(math.pi * done))


class Warmup(Schedule):
    """``after(step)`` scaled by a linear ramp over the first ``steps`` steps: the rate at
    step ``s < steps`` is ``after(s) * (s + 1) / steps``, so the first step is not 0 and the
    ramp meets ``after`` at ``steps``. ``after`` may be a number (a constant rate).

    Example:
        >>> [burn.optim.Warmup(1.0, steps=4)(s) for s in range(6)]
        [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    """

    def __init__(self, after: Callable[[int], float] | float, steps: int):
        _positive("Warmup", steps=steps)
        if isinstance(after, (int, float)):
            after = Constant(after)
        if not callable(after):
            raise BurnError(f"Warmup: expected a schedule or a number to warm up to, got "
                            f"{type(after).__name__}")
        self.after, self.steps = after, int(steps)

    def rate(self, step: int) -> float:
        ramp = min(1.0, (step + 1) / self.steps)
        return self.after(step) * ramp


def resolve(schedule: Callable[[int], float] | float | None, default: float
            ) -> Callable[[int], float]:
    """A schedule from what a user passes: a schedule or any callable of the step, a number
    (a constant rate) or None (``default``, the optimizer's own rate)."""
    if schedule is None:
        return Constant(default)
    if isinstance(schedule, (int, float)):
        return Constant(schedule)
    if not callable(schedule):
        raise BurnError(f"expected a learning-rate schedule (a callable of the step, such as "
                        f"burn.optim.CosineDecay(...)) or a number, got "
                        f"{type(schedule).__name__}")
    return schedule
