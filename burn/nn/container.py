"""``Sequential``: layers applied one after another.

Example:
    >>> mlp = burn.nn.Sequential(burn.nn.Linear(2, 8), burn.nn.ReLU(), burn.nn.Linear(8, 1))
    >>> mlp(burn.ones((4, 2))).shape, len(mlp.parameters())
    ((4, 1), 4)
"""

from __future__ import annotations

from typing import Any

from ..backend.base import BurnError
from .module import Module


class Sequential(Module):
    """``layers[-1](...layers[1](layers[0](x)))``; parameters are named ``layers.<i>.*``."""

    def __init__(self, *layers: Module):
        if not layers or not all(isinstance(layer, Module) for layer in layers):
            raise BurnError("Sequential: give one or more modules, e.g. "
                            "Sequential(Linear(2, 8), ReLU(), Linear(8, 1))")
        self.layers = list(layers)

    def forward(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, index: int) -> Module:
        return self.layers[index]

    def __len__(self) -> int:
        return len(self.layers)
