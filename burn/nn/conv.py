"""``Conv1d``, ``Conv2d``, ``Conv3d`` and the transposes ``ConvTranspose1d``/``2d``/``3d``:
torch's layouts and initialization.

Example:
    >>> conv = burn.nn.Conv2d(3, 8, 3, stride=2, padding=1)
    >>> y = conv(burn.ones((2, 3, 16, 16)))
    >>> y.shape
    (2, 8, 8, 8)
    >>> up = burn.nn.ConvTranspose2d(8, 3, 3, stride=2, padding=1, output_padding=1)
    >>> up(y).shape
    (2, 3, 16, 16)
"""

from __future__ import annotations

import math
from typing import Any

from ..backend.base import Backend, BurnError
from ..tensor import conv_transpose, index, linalg, volume
from ..tensor.tensor import Tensor
from .init import fan_in_uniform
from .module import Module


def _pair(value: Any, spatial: int) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (int(value),) * spatial


def _parameters(layer: Module, in_channels: int, out_channels: int, groups: int,
                shape: tuple[int, ...], bias: bool, dtype: Any, backend: Backend | str | None,
                generator: Any) -> tuple[Tensor, Tensor | None]:
    """A convolution layer's weight of ``shape`` and bias, torch's initialization: uniform in
    +-1/sqrt(fan-in), the fan-in taken (as torch does) from the weight's second axis and the
    kernel, which for a transposed convolution is its output channels per group."""
    if in_channels % groups or out_channels % groups:
        raise BurnError(f"{type(layer).__name__}: {in_channels} input and {out_channels} "
                        f"output channels must both divide into {groups} groups")
    fan_in = math.prod(shape[1:])
    weight = fan_in_uniform(shape, fan_in, dtype, backend, generator)
    return weight, (fan_in_uniform((out_channels,), fan_in, dtype, backend, generator)
                    if bias else None)


# torch's padding_mode names -> burn.pad's modes (zeros is the convolution's own padding)
PADDING_MODES = {"zeros": None, "reflect": "reflect", "replicate": "replicate",
                 "circular": "circular"}


class _Conv(Module):
    """A convolution; ``padding_mode`` other than ``"zeros"`` pads the input by
    ``burn.pad`` in that mode first (torch's ``padding_mode``). Each subclass names its
    ``spatial`` rank and its ``convolution`` function."""

    spatial = 2
    convolution = staticmethod(linalg.conv2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 dtype: Any = None, backend: Backend | str | None = None,
                 generator: Any = None, padding_mode: str = "zeros"):
        if padding_mode not in PADDING_MODES:
            raise BurnError(f"{type(self).__name__}: padding_mode must be one of "
                            f"{', '.join(PADDING_MODES)}, got {padding_mode!r}")
        kernel = _pair(kernel_size, self.spatial)
        self.weight, self.bias = _parameters(
            self, in_channels, out_channels, groups, (out_channels, in_channels // groups,
                                                      *kernel), bias, dtype, backend, generator)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.padding_mode = padding_mode

    def forward(self, x: Tensor) -> Tensor:
        x, padding = self._padded(x)
        return self.convolution(x, self.weight, self.bias, self.stride, padding, self.dilation,
                                self.groups)

    def _padded(self, x: Tensor) -> tuple[Tensor, Any]:
        """The input and the padding left for the convolution itself."""
        mode = PADDING_MODES[self.padding_mode]
        if mode is None:
            return x, self.padding
        pads = []  # burn.pad lists (before, after) from the last axis backwards
        for amount in reversed(_pair(self.padding, self.spatial)):
            pads += [amount, amount]
        return index.pad(x, pads, mode=mode), 0


class Conv1d(_Conv):
    """1-D convolution of (N, C, L) inputs."""

    spatial = 1
    convolution = staticmethod(linalg.conv1d)


class Conv2d(_Conv):
    """2-D convolution of (N, C, H, W) inputs."""


class Conv3d(_Conv):
    """3-D convolution of (N, C, D, H, W) inputs (``burn.conv3d``).

    Example:
        >>> burn.nn.Conv3d(2, 4, 3, padding=1)(burn.ones((1, 2, 4, 5, 5))).shape
        (1, 4, 4, 5, 5)
    """

    spatial = 3
    convolution = staticmethod(volume.conv3d)


class _ConvTranspose(Module):
    """A transposed convolution: ``spatial`` and ``convolution`` as ``_Conv``'s."""

    spatial = 2
    convolution = staticmethod(conv_transpose.conv_transpose2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, dtype: Any = None, backend: Backend | str | None = None,
                 generator: Any = None):
        kernel = _pair(kernel_size, self.spatial)
        self.weight, self.bias = _parameters(
            self, in_channels, out_channels, groups, (in_channels, out_channels // groups,
                                                      *kernel), bias, dtype, backend, generator)
        self.stride, self.padding, self.output_padding = stride, padding, output_padding
        self.groups, self.dilation = groups, dilation

    def forward(self, x: Tensor) -> Tensor:
        return self.convolution(x, self.weight, self.bias, self.stride, self.padding,
                                self.output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution of (N, C, L) inputs (``burn.conv_transpose1d``)."""

    spatial = 1
    convolution = staticmethod(conv_transpose.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution of (N, C, H, W) inputs (``burn.conv_transpose2d``): the
    upsampling layer of decoders and U-Nets."""


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution of (N, C, D, H, W) inputs (``burn.conv_transpose3d``).

    Example:
        >>> burn.nn.ConvTranspose3d(4, 2, 2, stride=2)(burn.ones((1, 4, 2, 3, 3))).shape
        (1, 2, 4, 6, 6)
    """

    spatial = 3
    convolution = staticmethod(volume.conv_transpose3d)
