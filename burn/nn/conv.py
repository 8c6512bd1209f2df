"""``Conv1d`` and ``Conv2d``: cross-correlation layers, torch's layout and initialization.

Example:
    >>> conv = burn.nn.Conv2d(3, 8, 3, padding=1)
    >>> conv(burn.ones((2, 3, 16, 16))).shape
    (2, 8, 16, 16)
"""

from __future__ import annotations

import math
from typing import Any

from ..backend.base import Backend, BurnError
from ..tensor import linalg
from ..tensor.tensor import Tensor
from .init import fan_in_uniform
from .module import Module


def _pair(value: Any, spatial: int) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (int(value),) * spatial


class _Conv(Module):
    spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 dtype: Any = None, backend: Backend | str | None = None,
                 generator: Any = None):
        if in_channels % groups or out_channels % groups:
            raise BurnError(f"{type(self).__name__}: {in_channels} input and {out_channels} "
                            f"output channels must both divide into {groups} groups")
        kernel = _pair(kernel_size, self.spatial)
        fan_in = in_channels // groups * math.prod(kernel)
        self.weight = fan_in_uniform((out_channels, in_channels // groups, *kernel), fan_in,
                                     dtype, backend, generator)
        self.bias = fan_in_uniform((out_channels,), fan_in, dtype, backend,
                                   generator) if bias else None
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups


class Conv1d(_Conv):
    """1-D convolution of (N, C, L) inputs."""

    spatial = 1

    def forward(self, x: Tensor) -> Tensor:
        return linalg.conv1d(x, self.weight, self.bias, self.stride, self.padding,
                             self.dilation, self.groups)


class Conv2d(_Conv):
    """2-D convolution of (N, C, H, W) inputs."""

    def forward(self, x: Tensor) -> Tensor:
        return linalg.conv2d(x, self.weight, self.bias, self.stride, self.padding,
                             self.dilation, self.groups)
