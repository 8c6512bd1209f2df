"""Batch normalization: ``batch_norm``, torch's ``F.batch_norm``.

Normalizing by the batch's statistics is two reductions (the mean, then the squared
deviations) and one elementwise kernel; its gradient, one fused backward pass
(``kernels/batch_norm.py``). 16-bit inputs are normalized in float32.

Example:
    >>> x = burn.tensor([[0.0, 10.0], [2.0, 30.0]])
    >>> burn.batch_norm(x, training=True).tolist()  # doctest: +ELLIPSIS
    [[-0.99..., -0.99...], [0.99..., 0.99...]]
"""

from __future__ import annotations

from typing import Any

from cubepy.ir import dtypes as dt

from ..backend.base import BurnError
from .reduce import float_dtypes
from .tensor import Tensor, same_backend

__all__ = ["batch_norm"]


def _check_channel_vectors(x: Tensor, vectors: dict[str, Tensor | None]) -> None:
    channels = x.shape[1]
    for name, v in vectors.items():
        if v is None:
            continue
        same_backend("batch_norm", x, v)
        if v.shape != (channels,):
            raise BurnError(f"batch_norm: {name} has shape {v.shape}; expected ({channels},), "
                            f"one per channel of the input {x.shape}")
        if not v.dtype.is_float:
            raise BurnError(f"batch_norm: {name} must be a float tensor, got {v.dtype.name}")


def batch_norm(x: Tensor, running_mean: Tensor | None = None,
               running_var: Tensor | None = None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False,
               momentum: float | Tensor = 0.1, eps: float = 1e-5) -> Tensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` per channel (axis 1) of an (N, C, ...)
    float ``x``, as torch's ``F.batch_norm``. With ``training`` (or without running
    statistics) ``mean`` and ``var`` are the batch's (over every axis but 1; the biased
    variance), and ``running_mean``/``running_var``, when given, move toward them in place
    by ``momentum`` (a float, or a 0-d tensor read on the device; the running variance
    tracks the unbiased one); otherwise the running statistics normalize.

    Example:
        >>> mean, var = burn.zeros(2), burn.ones(2)
        >>> x = burn.tensor([[0.0, 10.0], [2.0, 30.0]])
        >>> y = burn.batch_norm(x, mean, var, training=True, momentum=0.5)
        >>> mean.tolist(), var.tolist()
        ([0.5, 10.0], [1.5, 100.5])
    """
    if x.ndim < 2:
        raise BurnError(f"batch_norm: the input must be (N, C, ...), got shape {x.shape}")
    if not x.dtype.is_float:
        raise BurnError(f"batch_norm: the input must be a float tensor, got {x.dtype.name}; "
                        "cast it with .to(burn.float32)")
    if (running_mean is None) != (running_var is None):
        raise BurnError("batch_norm: give both running_mean and running_var, or neither")
    _check_channel_vectors(x, {"running_mean": running_mean, "running_var": running_var,
                               "weight": weight, "bias": bias})
    channels = x.shape[1]
    count = x.numel() // channels if channels else 0
    own = training or running_mean is None
    if training and count < 2:
        raise BurnError(f"batch_norm: training needs more than one value per channel to take "
                        f"a variance, got shape {x.shape}")
    compute, out_dtype = float_dtypes(x)
    given = (None, None) if own else (running_mean.prim, running_var.prim)
    out, mean, var = x.backend.batch_norm(
        x.prim, *given, None if weight is None else weight.prim,
        None if bias is None else bias.prim, float(eps), compute, out_dtype)
    if training and running_mean is not None:
        backend = x.backend
        unbiased = Tensor(var, backend) * (count / (count - 1))
        _move_toward(running_mean, Tensor(mean, backend), momentum)
        _move_toward(running_var, unbiased, momentum)
    return Tensor(out, x.backend)


def _move_toward(running: Tensor, batch: Tensor, rate: Any) -> None:
    """``running += (batch - running) * rate``, in place."""
    if isinstance(rate, Tensor):
        rate = rate.to(dt.float32 if running.dtype.bits < 32 else running.dtype)
    moved = running + (batch.to(running.dtype) - running) * rate
    running.backend.assign(running.prim, moved.to(running.dtype).prim)
