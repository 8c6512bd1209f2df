"""The NumPy reference for the optimizer steps (torch's formulas, as ``kernels/optim.py``)."""

from __future__ import annotations

import numpy as np

from cubepy.ir import dtypes as dt
from kernels.layout import View
from kernels.optim import adam_numbers

from ..ops.optim import OptimOps
from .core import NumpyCore, register_dtype


class NumpyOptim(NumpyCore, OptimOps):
    def adam_step(self, p: View, g: View, m: View | None, v: View | None, lr: float,
                  betas: tuple[float, float], eps: float, weight_decay: float, step: int,
                  decoupled: bool, numbers: View | None = None, in_place: bool = False
                  ) -> tuple[View, View, View]:
        compute = register_dtype(p.dtype)
        step_size, root, shrink = (compute.type(x) for x in (
            adam_numbers(lr, betas, weight_decay, step) if numbers is None
            else self.array(numbers)[:3]))
        w, grad = self.array(p).astype(compute), self.array(g).astype(compute)
        if decoupled:
            w = w * shrink
        else:
            grad = grad + compute.type(weight_decay) * w
        # 1 - beta in float64 first, as the kernels' host side and torch do
        b1, b2 = (compute.type(b) for b in betas)
        rest1, rest2 = (compute.type(1 - b) for b in betas)
        m1 = rest1 * grad if m is None else b1 * self.array(m) + rest1 * grad
        v1 = rest2 * grad * grad if v is None else b2 * self.array(v) + rest2 * grad * grad
        w = w - step_size * m1 / (np.sqrt(v1) / root + compute.type(eps))
        state = p.dtype if p.dtype.bits >= 32 else dt.float32
        return (self._written(p, w, in_place), self._written(m, m1, in_place, state),
                self._written(v, v1, in_place, state))

    def sgd_step(self, p: View, g: View, buf: View | None, lr: float, momentum: float,
                 dampening: float, weight_decay: float, nesterov: bool,
                 numbers: View | None = None, in_place: bool = False
                 ) -> tuple[View, View | None]:
        compute = register_dtype(p.dtype)
        rate = compute.type(lr if numbers is None else self.array(numbers)[0])
        w = self.array(p).astype(compute)
        grad = self.array(g).astype(compute) + compute.type(weight_decay) * w
        new_buf = None
        if momentum:
            mu = compute.type(momentum)
            new_buf = grad if buf is None else (
                mu * self.array(buf) + compute.type(1 - dampening) * grad)
            grad = grad + mu * new_buf if nesterov else new_buf
        w = w - rate * grad
        state = p.dtype if p.dtype.bits >= 32 else dt.float32
        return self._written(p, w, in_place), (
            None if new_buf is None else self._written(buf, new_buf, in_place, state))

    def _written(self, target: View | None, value: np.ndarray, in_place: bool,
                 dtype: dt.DType | None = None) -> View:
        """``value`` in ``target`` itself (``in_place``, when there is a target) or in a fresh
        view of ``dtype`` (``target``'s by default)."""
        if in_place and target is not None:
            self.array(target)[...] = value.astype(target.dtype.numpy)
            return target
        assert dtype is not None or target is not None
        return self.result(value, dtype or target.dtype)  # type: ignore[union-attr]
