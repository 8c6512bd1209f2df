"""Pooling layers: ``MaxPool2d``, ``AvgPool2d`` and ``AdaptiveAvgPool2d``.

Example:
    >>> burn.nn.MaxPool2d(2)(burn.ones((1, 3, 8, 8))).shape
    (1, 3, 4, 4)
"""

from __future__ import annotations

from typing import Any

from ..tensor import linalg
from ..tensor.tensor import Tensor
from .module import Module


class MaxPool2d(Module):
    """The maximum of each window (``stride`` defaults to the window)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1):
        self.kernel_size, self.stride = kernel_size, stride
        self.padding, self.dilation = padding, dilation

    def forward(self, x: Tensor) -> Tensor:
        return linalg.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation)


class AvgPool2d(Module):
    """The mean of each window, padding counted (``stride`` defaults to the window)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor) -> Tensor:
        return linalg.avg_pool2d(x, self.kernel_size, self.stride, self.padding)


class AdaptiveAvgPool2d(Module):
    """Means over windows that tile the image into ``output_size``."""

    def __init__(self, output_size: Any):
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return linalg.adaptive_avg_pool2d(x, self.output_size)
