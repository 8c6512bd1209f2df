"""Activation and shape layers without parameters: ``ReLU``, ``GELU``, ``SiLU``, ``Tanh``,
``Sigmoid``, ``Softmax``, ``Flatten`` and ``Dropout`` (active only in training mode).

Example:
    >>> burn.nn.ReLU()(burn.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from ..backend.base import BurnError
from ..tensor import elementwise, random, reduce, views
from ..tensor.tensor import Tensor
from .module import Module


def _elementwise_layer(name: str, fn: Any) -> type[Module]:
    def forward(self: Module, x: Tensor) -> Tensor:
        return fn(x)

    return type(name, (Module,), {"forward": forward, "__doc__": f"``{fn.__name__}(x)``."})


ReLU = _elementwise_layer("ReLU", elementwise.relu)
GELU = _elementwise_layer("GELU", elementwise.gelu)
SiLU = _elementwise_layer("SiLU", elementwise.silu)
Tanh = _elementwise_layer("Tanh", elementwise.tanh)
Sigmoid = _elementwise_layer("Sigmoid", elementwise.sigmoid)


class Softmax(Module):
    """``softmax(x, axis)``."""

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x: Tensor) -> Tensor:
        return reduce.softmax(x, self.axis)


class Flatten(Module):
    """Axes ``start_dim`` to ``end_dim`` merged into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return views.flatten(x, self.start_dim, self.end_dim)


class Dropout(Module):
    """Each element zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)`` in
    training mode; the identity after ``eval()``."""

    def __init__(self, p: float = 0.5, generator: Any = None):
        if not 0.0 <= p < 1.0:
            raise BurnError(f"Dropout: p must be in [0, 1), got {p}")
        self.p, self.generator = p, generator

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        return random.dropout(x, self.p, generator=self.generator)
