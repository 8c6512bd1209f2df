"""Optimizer steps: one op per parameter update, so a step costs one kernel per parameter.

State tensors (moments, momentum buffers) are in the compute dtype (float32 for 16-bit
parameters); ``None`` state means the first step. The results are fresh tensors: the
parameter, then the new state. The formulas are torch's (``kernels/optim.py``).

For a step captured as a CUDA graph (``burn.train.CapturedStep``) two keywords change that:
``numbers``, a view in the compute dtype holding the numbers that change from step to step
(``kernels.optim.adam_numbers``; the learning rate for SGD), read in place of ``lr`` and
``step``; and ``in_place``, which writes the results into the parameter and state views given
(a first step's missing state is allocated) and returns them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from kernels.layout import View


class OptimOps(ABC):
    @abstractmethod
    def adam_step(self, p: View, g: View, m: View | None, v: View | None, lr: float,
                  betas: tuple[float, float], eps: float, weight_decay: float, step: int,
                  decoupled: bool, numbers: View | None = None, in_place: bool = False
                  ) -> tuple[View, View, View]:
        """Adam (AdamW with ``decoupled``) at step number ``step``: new ``p``, ``m``, ``v``."""

    @abstractmethod
    def sgd_step(self, p: View, g: View, buf: View | None, lr: float, momentum: float,
                 dampening: float, weight_decay: float, nesterov: bool,
                 numbers: View | None = None, in_place: bool = False
                 ) -> tuple[View, View | None]:
        """SGD: new ``p`` and momentum buffer (None without momentum)."""
