"""The NumPy reference for the optimizer steps (torch's formulas, as ``kernels/optim.py``)."""

from __future__ import annotations

import math

import numpy as np

from cubepy.ir import dtypes as dt
from kernels.layout import View

from ..ops.optim import OptimOps
from .core import NumpyCore, register_dtype


class NumpyOptim(NumpyCore, OptimOps):
    def adam_step(self, p: View, g: View, m: View | None, v: View | None, lr: float,
                  betas: tuple[float, float], eps: float, weight_decay: float, step: int,
                  decoupled: bool) -> tuple[View, View, View]:
        compute = register_dtype(p.dtype)
        w, grad = self.array(p).astype(compute), self.array(g).astype(compute)
        if decoupled:
            w = w * compute.type(1 - lr * weight_decay)
        else:
            grad = grad + compute.type(weight_decay) * w
        # 1 - beta in float64 first, as the kernels' host side and torch do
        b1, b2 = (compute.type(b) for b in betas)
        rest1, rest2 = (compute.type(1 - b) for b in betas)
        m1 = rest1 * grad if m is None else b1 * self.array(m) + rest1 * grad
        v1 = rest2 * grad * grad if v is None else b2 * self.array(v) + rest2 * grad * grad
        step_size = compute.type(lr / (1 - betas[0] ** step))
        root = compute.type(math.sqrt(1 - betas[1] ** step))
        w = w - step_size * m1 / (np.sqrt(v1) / root + compute.type(eps))
        state = p.dtype if p.dtype.bits >= 32 else dt.float32
        return self.result(w, p.dtype), self.result(m1, state), self.result(v1, state)

    def sgd_step(self, p: View, g: View, buf: View | None, lr: float, momentum: float,
                 dampening: float, weight_decay: float, nesterov: bool
                 ) -> tuple[View, View | None]:
        compute = register_dtype(p.dtype)
        w = self.array(p).astype(compute)
        grad = self.array(g).astype(compute) + compute.type(weight_decay) * w
        new_buf = None
        if momentum:
            mu = compute.type(momentum)
            new_buf = grad if buf is None else (
                mu * self.array(buf) + compute.type(1 - dampening) * grad)
            grad = grad + mu * new_buf if nesterov else new_buf
        w = w - compute.type(lr) * grad
        state = p.dtype if p.dtype.bits >= 32 else dt.float32
        return self.result(w, p.dtype), (None if new_buf is None else self.result(new_buf, state))

