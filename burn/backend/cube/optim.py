"""Optimizer steps through ``kernels.optim``: one kernel per parameter."""

from __future__ import annotations

from kernels import optim
from kernels.layout import View

from ..ops.optim import OptimOps
from .core import CubeCore


class CubeOptim(CubeCore, OptimOps):
    def adam_step(self, p: View, g: View, m: View | None, v: View | None, lr: float,
                  betas: tuple[float, float], eps: float, weight_decay: float, step: int,
                  decoupled: bool, numbers: View | None = None, in_place: bool = False
                  ) -> tuple[View, View, View]:
        return optim.adam(self.ctx, p, g, m, v, lr, betas, eps, weight_decay, step, decoupled,
                          numbers, in_place)

    def sgd_step(self, p: View, g: View, buf: View | None, lr: float, momentum: float,
                 dampening: float, weight_decay: float, nesterov: bool,
                 numbers: View | None = None, in_place: bool = False
                 ) -> tuple[View, View | None]:
        return optim.sgd(self.ctx, p, g, buf, lr, momentum, dampening, weight_decay, nesterov,
                         numbers, in_place)
