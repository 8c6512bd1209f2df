"""Pooling layers: ``MaxPool1d``/``2d``/``3d``, ``AvgPool1d``/``2d``/``3d`` and
``AdaptiveAvgPool1d``/``2d``/``3d``.

Example:
    >>> burn.nn.MaxPool2d(2)(burn.ones((1, 3, 8, 8))).shape
    (1, 3, 4, 4)
"""

from __future__ import annotations

from typing import Any

from ..tensor import linalg, volume
from ..tensor.tensor import Tensor
from .module import Module


class MaxPool2d(Module):
    """The maximum of each window (``stride`` defaults to the window; ``ceil_mode`` adds last
    partial windows, as torch's).

    Example:
        >>> burn.nn.MaxPool2d(2, ceil_mode=True)(burn.ones((1, 3, 7, 7))).shape
        (1, 3, 4, 4)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, ceil_mode: bool = False):
        self.kernel_size, self.stride = kernel_size, stride
        self.padding, self.dilation, self.ceil_mode = padding, dilation, ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return linalg.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                                 self.ceil_mode)


class MaxPool1d(MaxPool2d):
    """``MaxPool2d`` over (N, C, L).

    Example:
        >>> burn.nn.MaxPool1d(3, stride=2)(burn.ones((2, 4, 9))).shape
        (2, 4, 4)
    """

    def forward(self, x: Tensor) -> Tensor:
        return linalg.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                                 self.ceil_mode)


class AvgPool2d(Module):
    """The mean of each window (``stride`` defaults to the window), as torch's: padding
    counted unless ``count_include_pad=False``, ``ceil_mode``'s last partial windows,
    ``divisor_override``.

    Example:
        >>> burn.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)(
        ...     burn.ones((1, 1, 5, 5))).tolist()[0][0][0]
        [1.0, 1.0, 1.0]
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return linalg.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                 self.count_include_pad, self.divisor_override)


class AvgPool1d(Module):
    """``AvgPool2d`` over (N, C, L) (torch's has no ``divisor_override``).

    Example:
        >>> burn.nn.AvgPool1d(2)(burn.tensor([[[1.0, 3.0, 2.0, 6.0]]])).tolist()
        [[[2.0, 4.0]]]
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        return linalg.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                 self.count_include_pad)


class MaxPool3d(MaxPool2d):
    """``MaxPool2d`` over (N, C, D, H, W) (``burn.max_pool3d``).

    Example:
        >>> burn.nn.MaxPool3d(2)(burn.ones((1, 2, 4, 6, 6))).shape
        (1, 2, 2, 3, 3)
    """

    def forward(self, x: Tensor) -> Tensor:
        return volume.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                                 self.ceil_mode)


class AvgPool3d(AvgPool2d):
    """``AvgPool2d`` over (N, C, D, H, W) (``burn.avg_pool3d``).

    Example:
        >>> burn.nn.AvgPool3d(2, stride=1)(burn.ones((1, 2, 3, 3, 3))).shape
        (1, 2, 2, 2, 2)
    """

    def forward(self, x: Tensor) -> Tensor:
        return volume.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                 self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool2d(Module):
    """Means over windows that tile the image into ``output_size``."""

    def __init__(self, output_size: Any):
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return linalg.adaptive_avg_pool2d(x, self.output_size)


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """Means over windows that tile the length into ``output_size`` (``burn.adaptive_avg_pool1d``).

    Example:
        >>> burn.nn.AdaptiveAvgPool1d(1)(burn.ones((2, 3, 9))).shape
        (2, 3, 1)
    """

    def forward(self, x: Tensor) -> Tensor:
        return linalg.adaptive_avg_pool1d(x, self.output_size)


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    """Means over windows that tile the volume into ``output_size``
    (``burn.adaptive_avg_pool3d``).

    Example:
        >>> burn.nn.AdaptiveAvgPool3d(1)(burn.ones((2, 3, 4, 5, 5))).shape
        (2, 3, 1, 1, 1)
    """

    def forward(self, x: Tensor) -> Tensor:
        return volume.adaptive_avg_pool3d(x, self.output_size)
