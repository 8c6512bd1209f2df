"""``LayerNorm`` and ``RMSNorm`` over the last axes, ``GroupNorm`` and ``InstanceNorm`` over
groups of channels, ``BatchNorm`` over the batch, with learned scales (and shifts).

Example:
    >>> norm = burn.nn.LayerNorm(4)
    >>> norm(burn.arange(8.0).reshape(2, 4)).mean(axis=1).abs().max().item() < 1e-6
    True
"""

from __future__ import annotations

from typing import Any

from cubepy.ir import dtypes as dt

from ..backend.base import Backend, BurnError
from ..tensor import batch_norm as tensor_batch_norm
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


class GroupNorm(Module):
    """``burn.group_norm``: (N, C, ...) normalized over each of ``num_groups`` groups of
    channels, then a learned scale and shift per channel (``affine``).

    Example:
        >>> norm = burn.nn.GroupNorm(2, 4)
        >>> norm(burn.ones((3, 4, 5, 5))).shape
        (3, 4, 5, 5)
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, dtype: Any = None, backend: Backend | str | None = None):
        if num_channels % num_groups:
            raise BurnError(f"GroupNorm: num_groups {num_groups} must divide num_channels "
                            f"{num_channels}")
        self.num_groups, self.eps = num_groups, eps
        self.weight = creation.ones(num_channels, dtype=dtype, backend=backend) if affine \
            else None
        self.bias = creation.zeros(num_channels, dtype=dtype, backend=backend) if affine \
            else None

    def forward(self, x: Tensor) -> Tensor:
        return reduce.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class InstanceNorm(GroupNorm):
    """Each channel of each item of (N, C, ...) normalized over its positions (a group per
    channel), with a learned scale and shift per channel if ``affine``; no running
    statistics (torch's ``InstanceNorm2d`` default).

    Example:
        >>> burn.nn.InstanceNorm(3)(burn.rand(2, 3, 4, 4)).shape
        (2, 3, 4, 4)
    """

    def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = False,
                 dtype: Any = None, backend: Backend | str | None = None):
        super().__init__(num_features, num_features, eps, affine, dtype, backend)


class BatchNorm(Module):
    """(N, C, ...) normalized per channel over the batch and the positions, then a learned
    scale and shift per channel (``affine``): torch's ``BatchNorm1d``/``2d``/``3d``.

    In training mode it normalizes by the batch's mean and biased variance and, with
    ``track_running_stats``, moves ``running_mean`` and ``running_var`` (the unbiased
    variance) toward them by ``momentum`` (``momentum=None``: their cumulative average over
    every batch so far) and counts the batch in ``num_batches_tracked``; in inference mode
    (``eval()``) it normalizes by those running statistics. They are buffers
    (``buffer_names``, named as torch names them, so torch's state dict loads): saved with
    the parameters, never trained, and updated in place on the device, so every copy of the
    module (the optimizer's next model, a mixed-precision compute copy, a captured step's
    graph) sees the same statistics. The count is int32 on every device (WGSL has no
    64-bit integers; torch's int64 count loads into it). 16-bit inputs are normalized in
    float32.

    Example:
        >>> norm = burn.nn.BatchNorm(2)
        >>> x = burn.tensor([[0.0, 10.0], [2.0, 30.0]])
        >>> norm(x).tolist()  # doctest: +ELLIPSIS
        [[-0.99..., -0.99...], [0.99..., 0.99...]]
        >>> [[round(v, 4) for v in t.tolist()] for t in (norm.running_mean, norm.running_var)]
        [[0.1, 2.0], [1.1, 20.9]]
        >>> norm.num_batches_tracked.item()
        1
    """

    buffer_names = ("running_mean", "running_var", "num_batches_tracked")

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, dtype: Any = None,
                 backend: Backend | str | None = None):
        if momentum is not None and not 0.0 <= momentum <= 1.0:
            raise BurnError(f"BatchNorm: momentum must be in [0, 1] or None (a cumulative "
                            f"average), got {momentum}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.weight = creation.ones(num_features, dtype=dtype, backend=backend) if affine \
            else None
        self.bias = creation.zeros(num_features, dtype=dtype, backend=backend) if affine \
            else None
        track = track_running_stats
        self.running_mean = creation.zeros(num_features, dtype=dtype, backend=backend) if track \
            else None
        self.running_var = creation.ones(num_features, dtype=dtype, backend=backend) if track \
            else None
        self.num_batches_tracked = creation.zeros((), dtype=dt.int32, backend=backend) \
            if track else None

    def forward(self, x: Tensor) -> Tensor:
        channels = self.num_features
        if x.ndim < 2 or x.shape[1] != channels:
            raise BurnError(f"BatchNorm({channels}): expects inputs (N, {channels}, ...), got "
                            f"shape {x.shape}")
        if self.training and x.numel() // max(channels, 1) < 2:
            raise BurnError(f"BatchNorm({channels}): training needs more than one value "
                            f"per channel to take a variance, got shape {x.shape}")
        tracking = self.training and self.running_mean is not None
        rate: Any = self.momentum
        if tracking:
            counter = self.num_batches_tracked
            count = counter + 1
            counter.backend.assign(counter.prim, count.prim)
            # momentum=None: the mean of every batch's statistics, so the rate 1/count is read
            # on the device (a captured step's graph replays it with the count it has then)
            if self.momentum is None:
                rate = 1.0 / count.to(dt.float32)
        return tensor_batch_norm.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias,
            training=self.training, momentum=rate if tracking else 0.0, eps=self.eps)


BatchNorm1d = BatchNorm2d = BatchNorm3d = BatchNorm  # torch's names: one class, every rank
