"""``Linear``: ``y = x @ weight.T + bias``, torch's layout and initialization.

Example:
    >>> layer = burn.nn.Linear(3, 2)
    >>> layer.weight.shape, layer(burn.ones((5, 3))).shape
    ((2, 3), (5, 2))
"""

from __future__ import annotations

from typing import Any

from ..backend.base import Backend, BurnError
from ..tensor.tensor import Tensor
from .init import fan_in_uniform
from .module import Module


class Linear(Module):
    """An affine map of the last axis: ``in_features`` to ``out_features``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: Any = None, backend: Backend | str | None = None,
                 generator: Any = None):
        self.weight = fan_in_uniform((out_features, in_features), in_features, dtype, backend,
                                     generator)
        self.bias = fan_in_uniform((out_features,), in_features, dtype, backend,
                                   generator) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim == 0 or x.shape[-1] != self.weight.shape[1]:
            raise BurnError(f"Linear: expects inputs whose last axis has {self.weight.shape[1]} "
                            f"features, got shape {x.shape}")
        y = x @ self.weight.T
        return y if self.bias is None else y + self.bias
