"""Early stopping: end a run once a measured value has stopped improving.

``EarlyStopping("valid.loss", patience=3)`` stops ``Learner.fit`` after an epoch that is the
third in a row without a new best validation loss. The value is read from the learner's
``history`` (``"valid.<metric>"`` or ``"train.<metric>"``), and the decision is made from the
history alone, so a resumed run (whose history comes back with its checkpoint) stops where
the uninterrupted one would have. The model returned is the last epoch's, unless
``restore_best=True``: then, when ``fit`` ends (stopped early or not), the learner's model
gets the parameters of the best epoch back (the best epoch is named in the message and in
``best_epoch``).

Example:
    >>> stop = EarlyStopping("valid.loss", patience=2)
    >>> history = [{"epoch": e, "valid": {"loss": v}} for e, v in enumerate([3, 2, 2.5, 2.1])]
    >>> stop.should_stop(history), stop.best_epoch(history)
    (True, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..backend.base import BurnError

_PHASES = ("train", "valid")


class EarlyStopping:
    """Stop when ``monitor`` has not improved by more than ``min_delta`` for ``patience``
    epochs. ``mode``: ``"min"`` (a loss, an error) or ``"max"`` (an accuracy); by default
    ``"max"`` for names containing "accuracy", else ``"min"``. ``restore_best``: end ``fit``
    with the best epoch's parameters (kept on the host as each best epoch ends)."""

    def __init__(self, monitor: str = "valid.loss", patience: int = 3, *,
                 mode: str | None = None, min_delta: float = 0.0, restore_best: bool = False):
        phase, _, name = monitor.partition(".")
        if phase not in _PHASES or not name:
            raise BurnError(f"EarlyStopping: monitor must name a phase and a metric, such as "
                            f"'valid.loss' or 'train.accuracy', got {monitor!r}")
        if not isinstance(patience, int) or patience < 1:
            raise BurnError(f"EarlyStopping: patience must be an int >= 1 (epochs without "
                            f"improvement), got {patience!r}")
        mode = mode or ("max" if "accuracy" in name else "min")
        if mode not in ("min", "max"):
            raise BurnError(f"EarlyStopping: mode must be 'min' or 'max', got {mode!r}")
        if not min_delta >= 0:
            raise BurnError(f"EarlyStopping: min_delta must be >= 0, got {min_delta!r}")
        self.monitor, self.phase, self.name = monitor, phase, name
        self.patience, self.mode, self.min_delta = patience, mode, float(min_delta)
        #: whether the learner's model ends with the best epoch's parameters
        self.restore_best = bool(restore_best)

    def value(self, record: dict[str, Any]) -> float:
        """The monitored value in one epoch's record."""
        measured = record.get(self.phase)
        if measured is None or self.name not in measured:
            have = [f"{phase}.{name}" for phase in _PHASES for name in record.get(phase, {})]
            hint = " (pass valid= to Learner.fit)" if self.phase == "valid" and \
                "valid" not in record else ""
            raise BurnError(f"EarlyStopping: epoch {record.get('epoch')} measured no "
                            f"{self.monitor!r}{hint}; it has {', '.join(have) or 'nothing'}")
        return float(measured[self.name])

    def best_epoch(self, history: Sequence[dict[str, Any]]) -> int | None:
        """The index in ``history`` of the best epoch (the first of equals), None if empty:
        an epoch counts as better only by more than ``min_delta``."""
        best, best_value = None, math.nan
        for index, record in enumerate(history):
            value = self.value(record)
            if best is None or self._improves(value, best_value):
                best, best_value = index, value
        return best

    def should_stop(self, history: Sequence[dict[str, Any]]) -> bool:
        """Whether the last ``patience`` epochs of ``history`` all failed to improve."""
        best = self.best_epoch(history)
        return best is not None and len(history) - 1 - best >= self.patience

    def message(self, history: Sequence[dict[str, Any]]) -> str:
        """Why the run stopped, for the dashboard."""
        best = self.best_epoch(history)
        return (f"stopped early after epoch {len(history)}: {self.monitor} has not improved "
                f"for {self.patience} epochs; the best was {self.value(history[best]):.4g} in "
                f"epoch {best + 1}")

    def _improves(self, value: float, best: float) -> bool:
        if math.isnan(value):
            return False
        if math.isnan(best):
            return True
        if self.mode == "min":
            return value < best - self.min_delta
        return value > best + self.min_delta
