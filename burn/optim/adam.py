"""``Adam`` and ``AdamW`` (decoupled weight decay), as torch's.

Example:
    >>> opt = burn.optim.AdamW(lr=1e-3, weight_decay=0.01)
"""

from __future__ import annotations

from kernels.layout import register
from kernels.optim import adam_numbers

from ..backend.base import BurnError
from ..tensor.tensor import Tensor
from .optimizer import Optimizer


class Adam(Optimizer):
    """``p -= lr * m_hat / (sqrt(v_hat) + eps)`` with the moments ``m``, ``v`` of the gradient
    (``betas``) corrected for their zero start; ``weight_decay`` adds ``weight_decay * p`` to
    the gradient (L2, as torch's Adam)."""

    decoupled = False

    def __init__(self, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(lr)
        if not all(0.0 <= b < 1.0 for b in betas):
            raise BurnError(f"{type(self).__name__}: betas must be in [0, 1), got {betas}")
        self.betas, self.eps, self.weight_decay = betas, eps, weight_decay

    def update(self, name: str, param: Tensor, grad: Tensor, lr: float) -> Tensor:
        t = self.count(name)
        state = self.state[name]
        backend = param.backend
        numbers = self.numbers(backend, register(param.dtype), lr, t) \
            if self.capturable else None
        new, state["exp_avg"], state["exp_avg_sq"] = backend.adam_step(
            param.prim, grad.prim, state.get("exp_avg"), state.get("exp_avg_sq"), lr,
            self.betas, self.eps, self.weight_decay, t, self.decoupled, numbers,
            self.capturable)
        return Tensor(new, backend)

    def step_numbers(self, lr: float, step: int) -> list[float]:
        return adam_numbers(lr, self.betas, self.weight_decay, step)


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the step
    (default ``weight_decay`` 0.01, as torch's)."""

    decoupled = True

    def __init__(self, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01):
        super().__init__(lr, betas, eps, weight_decay)
