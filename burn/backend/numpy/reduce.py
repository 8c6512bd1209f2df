"""The NumPy reference for reductions, scans and normalizations: the kernels' semantics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cubepy.ir.dtypes import DType
from kernels.layout import View

from ..ops.reduce import ReduceOps
from .core import NumpyCore, register_dtype

_REDUCERS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


class NumpyReduce(NumpyCore, ReduceOps):
    def _values(self, x: View, compute: DType) -> np.ndarray:
        return self.array(x).astype(register_dtype(compute))

    def reduce(self, op: str, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
               ) -> View:
        axes = tuple(axes)
        with np.errstate(all="ignore"):
            if op in ("any", "all"):
                value = getattr(np, op)(self.array(x) != 0, axis=axes)
            elif op == "mean":
                count = int(np.prod([x.shape[a] for a in axes]))
                value = self._values(x, compute).sum(axis=axes) / count
            else:
                value = _REDUCERS[op](self._values(x, compute), axis=axes)
        return self.result(value, out_dtype)

    def argreduce(self, op: str, x: View, axes: Sequence[int], out_dtype: DType) -> View:
        v = self.array(x).astype(register_dtype(x.dtype))
        find = np.argmax if op == "argmax" else np.argmin
        if not axes:
            value = np.zeros(v.shape, np.int64)
        elif len(axes) == 1:
            value = find(v, axis=axes[0])
        else:  # every axis: an index into the row-major flattened array
            value = find(v.reshape(-1))
        return self.result(value, out_dtype)

    def variance(self, x: View, axes: Sequence[int], correction: float, sqrt: bool,
                 compute: DType, out_dtype: DType) -> View:
        axes = tuple(axes)
        v = self._values(x, compute)
        count = int(np.prod([x.shape[a] for a in axes]))
        with np.errstate(all="ignore"):
            mean = v.sum(axis=axes, keepdims=True) / count
            value = ((v - mean) ** 2).sum(axis=axes) / max(count - correction, 0)
            return self.result(np.sqrt(value) if sqrt else value, out_dtype)

    def logsumexp(self, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
                  ) -> View:
        axes = tuple(axes)
        v = self._values(x, compute)
        with np.errstate(all="ignore"):
            peak = np.max(v, axis=axes, keepdims=True, initial=-np.inf)
            shift = np.where(np.isfinite(peak), peak, 0)
            value = peak + np.log(np.exp(v - shift).sum(axis=axes, keepdims=True))
        return self.result(np.squeeze(value, axis=axes), out_dtype)

    def scan(self, op: str, x: View, axis: int, compute: DType, out_dtype: DType) -> View:
        v = self._values(x, compute)
        with np.errstate(all="ignore"):
            value = np.cumsum(v, axis=axis) if op == "cumsum" else np.cumprod(v, axis=axis)
        return self.result(value, out_dtype)

    def softmax(self, x: View, axis: int, log: bool, compute: DType, out_dtype: DType
                ) -> View:
        v = self._values(x, compute)
        if v.size == 0:
            return self.result(v, out_dtype)
        with np.errstate(all="ignore"):
            shifted = v - v.max(axis=axis, keepdims=True)
            e = np.exp(shifted)
            total = e.sum(axis=axis, keepdims=True)
            value = shifted - np.log(total) if log else e / total
        return self.result(value, out_dtype)

    def _normalize(self, rms: bool, x: View, k: int, weight: View | None, bias: View | None,
                   eps: float, compute: DType, out_dtype: DType) -> View:
        v = self._values(x, compute)
        if v.size == 0:
            return self.result(v, out_dtype)
        axes = tuple(range(x.ndim - k, x.ndim))
        with np.errstate(all="ignore"):
            centered, std = _centered(v, axes, eps, rms)
            y = centered / std
            if weight is not None:
                y = y * self._values(weight, compute)
            if bias is not None:
                y = y + self._values(bias, compute)
        return self.result(y, out_dtype)

    def layer_norm(self, x: View, k: int, weight: View | None, bias: View | None, eps: float,
                   compute: DType, out_dtype: DType) -> View:
        return self._normalize(False, x, k, weight, bias, eps, compute, out_dtype)

    def rms_norm(self, x: View, k: int, weight: View | None, eps: float, compute: DType,
                 out_dtype: DType) -> View:
        return self._normalize(True, x, k, weight, None, eps, compute, out_dtype)

    def norm_backward(self, x: View, k: int, weight: View | None, d_out: View, eps: float,
                      rms: bool, params: bool, compute: DType
                      ) -> tuple[View, View | None, View | None]:
        v, g = self._values(x, compute), self._values(d_out, compute)
        axes = tuple(range(x.ndim - k, x.ndim))
        leading = tuple(range(x.ndim - k))
        with np.errstate(all="ignore"):
            centered, std = _centered(v, axes, eps, rms)
            rstd = 1 / std
            n = centered * rstd
            gy = g if weight is None else g * self._values(weight, compute)
            d = gy - n * (gy * n).mean(axis=axes, keepdims=True)
            if not rms:
                d = d - gy.mean(axis=axes, keepdims=True)
            dx = self.result(d * rstd, x.dtype)
            if not params:
                return dx, None, None
            dw = self.result((g * n).sum(axis=leading), compute)
        return dx, dw, None if rms else self.result(g.sum(axis=leading), compute)

    def batch_norm(self, x: View, mean: View | None, var: View | None, weight: View | None,
                   bias: View | None, eps: float, compute: DType, out_dtype: DType
                   ) -> tuple[View, View, View]:
        v = self._values(x, compute)
        axes, per_channel = _channel_axes(x)
        with np.errstate(all="ignore"):
            if mean is None or var is None:
                m = v.mean(axis=axes)
                d = v - m.reshape(per_channel)
                s = (d * d).mean(axis=axes)
            else:
                m, s = self._values(mean, compute), self._values(var, compute)
            y = (v - m.reshape(per_channel)) / np.sqrt(s.reshape(per_channel) + eps)
            if weight is not None:
                y = y * self._values(weight, compute).reshape(per_channel)
            if bias is not None:
                y = y + self._values(bias, compute).reshape(per_channel)
        return (self.result(y, out_dtype), self.result(m, compute),
                self.result(s, compute))

    def batch_norm_backward(self, x: View, d_out: View, mean: View, var: View,
                            weight: View | None, eps: float, params: bool, compute: DType
                            ) -> tuple[View, View | None, View | None]:
        v, g = self._values(x, compute), self._values(d_out, compute)
        axes, per_channel = _channel_axes(x)
        with np.errstate(all="ignore"):
            rstd = 1 / np.sqrt(self._values(var, compute) + eps).reshape(per_channel)
            n = (v - self._values(mean, compute).reshape(per_channel)) * rstd
            scale = rstd if weight is None else \
                rstd * self._values(weight, compute).reshape(per_channel)
            d = g - g.mean(axis=axes, keepdims=True) - n * (g * n).mean(axis=axes, keepdims=True)
            dx = self.result(scale * d, x.dtype)
            if not params:
                return dx, None, None
            return (dx, self.result((g * n).sum(axis=axes), compute),
                    self.result(g.sum(axis=axes), compute))


def _channel_axes(x: View) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The axes a batch norm reduces (all but 1), and the shape a (C,) vector broadcasts by."""
    return (0, *range(2, x.ndim)), (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _centered(v: np.ndarray, axes: tuple[int, ...], eps: float, rms: bool
              ) -> tuple[np.ndarray, np.ndarray]:
    """``v`` minus its mean over ``axes`` (``rms``: ``v`` itself) and ``sqrt(var + eps)``
    (``rms``: of ``mean(v ** 2)``), the statistics of both norms' forward and backward."""
    centered = v if rms else v - v.mean(axis=axes, keepdims=True)
    return centered, np.sqrt((centered * centered).mean(axis=axes, keepdims=True) + eps)
