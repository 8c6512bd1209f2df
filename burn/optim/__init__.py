"""Optimizers: ``SGD``, ``Adam``, ``AdamW``; ``step(module, grads)`` returns the next module.
Learning-rate schedules (``CosineDecay``, ``Warmup``, ...) give the rate of each step.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> model = burn.nn.Linear(3, 1).to(ad).require_grad()
    >>> opt = burn.optim.Adam(lr=1e-2)
    >>> x, y = burn.ones((4, 3), backend=ad), burn.zeros((4, 1), backend=ad)
    >>> loss = burn.nn.mse_loss(model(x), y)
    >>> model = opt.step(model, loss.backward())
"""

from .adam import Adam, AdamW
from .optimizer import Optimizer, clip_grad_norm
from .schedule import (
    Constant,
    CosineDecay,
    ExponentialDecay,
    LinearDecay,
    MultiStepDecay,
    Schedule,
    StepDecay,
    Warmup,
)
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Constant", "CosineDecay", "ExponentialDecay", "LinearDecay",
           "MultiStepDecay", "Optimizer", "Schedule", "StepDecay", "Warmup", "clip_grad_norm"]
