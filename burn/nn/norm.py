"""``LayerNorm`` and ``RMSNorm`` over the last axes, with learned scales (and shifts).

Example:
    >>> norm = burn.nn.LayerNorm(4)
    >>> norm(burn.arange(8.0).reshape(2, 4)).mean(axis=1).abs().max().item() < 1e-6
    True
"""

from __future__ import annotations

from typing import Any

from ..backend.base import Backend
from ..tensor import creation, reduce
from ..tensor.tensor import Tensor
from .module import Module


def _shape(normalized_shape: Any) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(n) for n in normalized_shape)


class LayerNorm(Module):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axes."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, dtype: Any = None, backend: Backend | str | None = None):
        self.shape, self.eps = _shape(normalized_shape), eps
        affine = elementwise_affine
        self.weight = creation.ones(self.shape, dtype=dtype, backend=backend) if affine else None
        self.bias = creation.zeros(self.shape, dtype=dtype,
                                   backend=backend) if affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        return reduce.layer_norm(x, self.shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last axes (``eps`` by default the
    machine epsilon of the input's dtype, as torch's)."""

    def __init__(self, normalized_shape: Any, eps: float | None = None,
                 elementwise_affine: bool = True,
                 dtype: Any = None, backend: Backend | str | None = None):
        self.shape, self.eps = _shape(normalized_shape), eps
        self.weight = creation.ones(self.shape, dtype=dtype,
                                    backend=backend) if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        return reduce.rms_norm(x, self.shape, self.weight, self.eps)
