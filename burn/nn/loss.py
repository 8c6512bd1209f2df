"""Loss functions: ``cross_entropy``, ``nll_loss``, ``binary_cross_entropy_with_logits``,
``mse_loss`` and ``l1_loss``, each with torch's ``reduction`` (``"mean"``, ``"sum"`` or
``"none"``).

Example:
    >>> logits = burn.tensor([[2.0, 0.0], [0.0, 2.0]])
    >>> round(burn.nn.cross_entropy(logits, burn.tensor([0, 1])).item(), 4)
    0.1269
"""

from __future__ import annotations

from ..backend.base import BurnError
from ..tensor import elementwise, index, reduce, views
from ..tensor.tensor import Tensor

REDUCTIONS = ("mean", "sum", "none")


def _reduced(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction not in REDUCTIONS:
        raise BurnError(f"{op}: reduction must be one of {', '.join(REDUCTIONS)}, got "
                        f"{reduction!r}")
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


def nll_loss(log_probs: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """``-log_probs[i, target[i]]``: ``log_probs`` (N, C, ...) and integer class indices
    ``target`` (N, ...)."""
    if log_probs.ndim < 2:
        raise BurnError(f"nll_loss: log-probabilities must be (N, C, ...), got shape "
                        f"{log_probs.shape}")
    expected = log_probs.shape[:1] + log_probs.shape[2:]
    if target.dtype.is_float or target.dtype.is_bool or target.shape != expected:
        raise BurnError(f"nll_loss: target must be integer class indices of shape {expected} "
                        f"for log-probabilities of shape {log_probs.shape}, got "
                        f"{target.dtype.name} of shape {target.shape}")
    picked = index.gather(log_probs, 1, views.unsqueeze(target, 1))
    return _reduced(-views.squeeze(picked, 1), reduction, "nll_loss")


def cross_entropy(logits: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """``nll_loss(log_softmax(logits, axis=1), target)`` for integer class indices; for float
    ``target`` of the logits' shape (probabilities), ``-sum(target * log_softmax)`` over
    classes."""
    if logits.ndim < 2:
        raise BurnError(f"cross_entropy: logits must be (N, C, ...), got shape {logits.shape}")
    log_probs = reduce.log_softmax(logits, 1)
    if target.dtype.is_float:
        if target.shape != logits.shape:
            raise BurnError(f"cross_entropy: class probabilities must have the logits' shape "
                            f"{logits.shape}, got {target.shape}")
        return _reduced(-(target * log_probs).sum(axis=1), reduction, "cross_entropy")
    return nll_loss(log_probs, target, reduction)


def binary_cross_entropy_with_logits(logits: Tensor, target: Tensor,
                                     reduction: str = "mean") -> Tensor:
    """``-(t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x)))``, computed as
    ``softplus(x) - x * t`` (no overflow for large logits)."""
    _same_shape("binary_cross_entropy_with_logits", logits, target)
    loss = elementwise.softplus(logits) - logits * target
    return _reduced(loss, reduction, "binary_cross_entropy_with_logits")


def mse_loss(prediction: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """``(prediction - target) ** 2``."""
    _same_shape("mse_loss", prediction, target)
    diff = prediction - target
    return _reduced(diff * diff, reduction, "mse_loss")


def l1_loss(prediction: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """``|prediction - target|``."""
    _same_shape("l1_loss", prediction, target)
    return _reduced(elementwise.abs(prediction - target), reduction, "l1_loss")


def _same_shape(op: str, a: Tensor, b: Tensor) -> None:
    if a.shape != b.shape:
        raise BurnError(f"{op}: the prediction (shape {a.shape}) and target (shape {b.shape}) "
                        "must have one shape")
