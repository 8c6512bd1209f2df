"""``SGD`` with momentum, dampening, Nesterov momentum and weight decay, as torch's.

Example:
    >>> opt = burn.optim.SGD(lr=0.01, momentum=0.9, nesterov=True)
"""

from __future__ import annotations

from kernels.layout import register

from ..backend.base import BurnError
from ..tensor.tensor import Tensor
from .optimizer import Optimizer


class SGD(Optimizer):
    """``p -= lr * g`` with ``g = grad + weight_decay * p`` and, with ``momentum``, the
    buffer ``b = momentum * b + (1 - dampening) * g`` (``b = g`` at the first step) used as
    ``g`` (or ``g + momentum * b`` with ``nesterov``)."""

    def __init__(self, lr: float, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(lr)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise BurnError("SGD: nesterov needs a momentum > 0 and no dampening")
        self.momentum, self.dampening = momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov

    def update(self, name: str, param: Tensor, grad: Tensor, lr: float) -> Tensor:
        state = self.state.setdefault(name, {})
        backend = param.backend
        numbers = self.numbers(backend, register(param.dtype), lr, self.count(name)) \
            if self.capturable else None
        new, buffer = backend.sgd_step(param.prim, grad.prim, state.get("momentum"), lr,
                                       self.momentum, self.dampening, self.weight_decay,
                                       self.nesterov, numbers, self.capturable)
        if buffer is not None:
            state["momentum"] = buffer
        return Tensor(new, backend)

    def step_numbers(self, lr: float, step: int) -> list[float]:
        return [lr]
