"""Metrics of a training run: ``Loss``, ``Accuracy``, and ``Metric`` to write others.

A metric keeps its running sums as tensors on the model's backend, so updating it after a
step launches a kernel or two and reads nothing back: a GPU keeps running ahead of the host.
Only ``value()`` reads (the dashboard calls it a few times a second at most, and at the end of
each epoch).

Example:
    >>> accuracy = burn.train.Accuracy()
    >>> logits = burn.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]])
    >>> accuracy.update(logits, burn.tensor([0, 1, 1]), loss=None)
    >>> round(accuracy.value(), 4)
    0.6667
"""

from __future__ import annotations

import math

from cubepy.ir import dtypes as dt

from ..backend.base import BurnError
from ..tensor.tensor import Tensor


class Metric:
    """Base of the metrics. Subclasses define ``update`` and ``value``; ``reset`` clears
    what they accumulated by assigning fresh state (the learner measures each epoch and each
    evaluation with a shallow copy of the metric, reset). ``name`` heads the metric's column;
    ``format`` writes its value."""

    name = "metric"

    def reset(self) -> None:
        raise NotImplementedError

    def update(self, output: Tensor, target: Tensor, loss: Tensor | None) -> None:
        """Account for one batch: the model's ``output``, the batch's ``target`` and the
        batch's mean ``loss`` (None where no loss was computed)."""
        raise NotImplementedError

    def value(self) -> float:
        """The metric over the batches seen since ``reset`` (NaN before any)."""
        raise NotImplementedError

    def format(self, value: float) -> str:
        return f"{value:.4g}"


class _RunningMean(Metric):
    """A sum kept on the device and a count kept on the host (the count never needs a read)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.total: Tensor | None = None
        self.count = 0

    def add(self, amount: Tensor, count: int) -> None:
        amount = amount.to(dt.float32)
        self.total = amount if self.total is None else self.total + amount
        self.count += count

    def value(self) -> float:
        if self.total is None or self.count == 0:
            return math.nan
        return float(self.total.item()) / self.count


def _batch_size(target: Tensor) -> int:
    return target.shape[0] if target.ndim else 1


class Loss(_RunningMean):
    """The mean loss over the items seen (each batch's mean loss weighted by its size, so a
    short last batch counts for what it holds).

    Example:
        >>> loss = burn.train.Loss()
        >>> loss.update(None, burn.zeros(4), loss=burn.tensor(1.0))
        >>> loss.update(None, burn.zeros(2), loss=burn.tensor(4.0))
        >>> loss.value()
        2.0
    """

    name = "loss"

    def update(self, output: Tensor | None, target: Tensor, loss: Tensor | None) -> None:
        if loss is None:
            return
        if loss.numel() != 1:
            raise BurnError(f"Loss metric: the loss must be one number (a mean over the batch), "
                            f"got shape {loss.shape}")
        n = _batch_size(target)
        self.add(loss.detach().reshape(()) * float(n), n)


class Accuracy(_RunningMean):
    """The fraction of items whose largest output (along the last axis) is at the target
    class index. Outputs of shape ``(..., classes)``, integer targets of shape ``(...)``."""

    name = "accuracy"

    def update(self, output: Tensor, target: Tensor, loss: Tensor | None) -> None:
        if output.shape[:-1] != target.shape:
            raise BurnError(f"Accuracy: outputs of shape {output.shape} need targets of shape "
                            f"{output.shape[:-1]} (one class index per row), got "
                            f"{target.shape}")
        if target.dtype.is_float:
            raise BurnError(f"Accuracy: targets must be class indices (an integer dtype), got "
                            f"{target.dtype.name}; for one-hot targets pass target.argmax(axis=-1)")
        hits = output.detach().argmax(axis=-1) == target.to(dt.int64)
        self.add(hits.sum(), target.numel())

    def format(self, value: float) -> str:
        return f"{value:.2%}"


class MeanAbsoluteError(_RunningMean):
    """``mean(|output - target|)`` over every element seen (regression).

    Example:
        >>> mae = burn.train.MeanAbsoluteError()
        >>> mae.update(burn.tensor([1.0, 2.0]), burn.tensor([1.5, 0.0]), loss=None)
        >>> mae.value()
        1.25
    """

    name = "mae"

    def update(self, output: Tensor, target: Tensor, loss: Tensor | None) -> None:
        if output.shape != target.shape:
            raise BurnError(f"MeanAbsoluteError: output {output.shape} and target "
                            f"{target.shape} must have one shape")
        difference = output.detach().to(dt.float32) - target.to(dt.float32)
        self.add(difference.abs().sum(), target.numel())
