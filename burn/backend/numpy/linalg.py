"""The NumPy reference for matmul, convolution, pooling and attention: the kernels' semantics
in plain NumPy (16-bit floats computed in float32, integer products summed in int64 and
wrapped to the result's dtype, which equals the kernels' wrapping int32 sums). Attention is
computed in float64 and rounded once: the exact values the fused kernels approximate."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from kernels.layout import View

from ..ops.linalg import LinalgOps
from .core import NumpyCore, register_dtype


def _compute_dtype(dtype: DType) -> np.dtype:
    return np.dtype(np.int64) if dtype.is_int else register_dtype(dtype)


def _taps(padded: np.ndarray, kh: int, kw: int, stride: Sequence[int],
          dilation: Sequence[int], out_size: Sequence[int]) -> np.ndarray:
    """The (N, C, OH, OW) slice of ``padded`` that kernel tap (kh, kw) reads."""
    top, left = kh * dilation[0], kw * dilation[1]
    return padded[:, :, top:top + stride[0] * (out_size[0] - 1) + 1:stride[0],
                  left:left + stride[1] * (out_size[1] - 1) + 1:stride[1]]


def _pad(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
         dilation: Sequence[int], out_size: Sequence[int], value: float) -> np.ndarray:
    """``x`` padded by (top, left) and on the far sides as much as the last window reaches."""
    pads = [(0, 0), (0, 0)]
    for axis in range(2):
        reach = stride[axis] * (out_size[axis] - 1) + dilation[axis] * (kernel[axis] - 1) + 1
        far = max(0, reach - x.shape[2 + axis] - padding[axis])
        pads.append((padding[axis], far))
    return np.pad(x, pads, constant_values=value)


def _attention_weights(q: np.ndarray, k: np.ndarray, causal: bool, scale: float
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(P, lse) of float64 ``q`` (..., Sq, D) and ``k`` (..., Sk, D): the softmax of the
    scaled (masked) scores and each row's log-sum-exp."""
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if causal:  # key j > query i is masked; key 0 is always seen, so no row is all -inf
        sq, sk = scores.shape[-2:]
        scores = np.where(np.arange(sk)[None, :] > np.arange(sq)[:, None], -np.inf, scores)
    peak = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - peak)
    total = e.sum(axis=-1, keepdims=True)
    return e / total, (peak + np.log(total))[..., 0]


class NumpyLinalg(NumpyCore, LinalgOps):
    def matmul(self, a: View, b: View, out_dtype: DType) -> View:
        compute = _compute_dtype(a.dtype)
        product = np.matmul(self.array(a).astype(compute), self.array(b).astype(compute))
        return self.result(product.astype(out_dtype.numpy) if a.dtype.is_int else product,
                           out_dtype)

    def conv2d(self, x: View, weight: View, bias: View | None, stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int], groups: int,
               out_size: Sequence[int]) -> View:
        compute = register_dtype(x.dtype)
        w = self.array(weight).astype(compute)
        o, c_group, kh, kw = w.shape
        n = x.shape[0]
        padded = _pad(self.array(x).astype(compute), (kh, kw), stride, padding, dilation,
                      out_size, 0.0)
        out = np.zeros((n, o, *out_size), compute)
        o_group = o // groups
        for g in range(groups):
            channels = slice(g * c_group, (g + 1) * c_group)
            filters = slice(g * o_group, (g + 1) * o_group)
            for i in range(kh):
                for j in range(kw):
                    tap = _taps(padded[:, channels], i, j, stride, dilation, out_size)
                    out[:, filters] += np.einsum("nchw,oc->nohw", tap, w[filters, :, i, j])
        if bias is not None:
            out += self.array(bias).astype(compute)[None, :, None, None]
        return self.result(out, x.dtype)

    def pool2d(self, op: str, x: View, kernel: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int],
               out_size: Sequence[int]) -> View:
        compute = register_dtype(x.dtype)
        fill = -np.inf if op == "max" else 0.0
        padded = _pad(self.array(x).astype(compute), kernel, stride, padding, dilation,
                      out_size, fill)
        taps = np.stack([_taps(padded, i, j, stride, dilation, out_size)
                         for i in range(kernel[0]) for j in range(kernel[1])])
        if op == "max":
            result = np.max(taps, axis=0)  # NaN propagates, as in the kernel
        else:
            result = np.sum(taps, axis=0) / compute.type(kernel[0] * kernel[1])
        return self.result(result, x.dtype)

    def adaptive_avg_pool2d(self, x: View, out_size: Sequence[int]) -> View:
        compute = register_dtype(x.dtype)
        v = self.array(x).astype(compute)
        n, c, h, w = v.shape
        out = np.zeros((n, c, *out_size), compute)
        for i in range(out_size[0]):
            rows = slice(i * h // out_size[0], -(-(i + 1) * h // out_size[0]))
            for j in range(out_size[1]):
                cols = slice(j * w // out_size[1], -(-(j + 1) * w // out_size[1]))
                out[:, :, i, j] = v[:, :, rows, cols].mean(axis=(2, 3))
        return self.result(out, x.dtype)

    def _float64(self, x: View) -> np.ndarray:
        return self.array(x).astype(np.float64)

    def attention(self, q: View, k: View, v: View, causal: bool, scale: float
                  ) -> tuple[View, View]:
        p, lse = _attention_weights(self._float64(q), self._float64(k), causal, scale)
        out = np.matmul(p, self._float64(v))
        return self.result(out, q.dtype), self.result(lse, dt.float32)

    def attention_backward(self, q: View, k: View, v: View, out: View, lse: View, d_out: View,
                           causal: bool, scale: float) -> tuple[View, View, View]:
        # P recomputed from the scores in float64 (``lse`` is the rounded float32 one); the
        # row term uses the given ``out``, as the kernels do
        q64, k64, v64, do = (self._float64(x) for x in (q, k, v, d_out))
        p, _ = _attention_weights(q64, k64, causal, scale)
        dv = np.matmul(np.swapaxes(p, -1, -2), do)
        dp = np.matmul(do, np.swapaxes(v64, -1, -2))
        rows = (do * self._float64(out)).sum(axis=-1, keepdims=True)
        ds = p * (dp - rows)
        dq = np.matmul(ds, k64) * scale
        dk = np.matmul(np.swapaxes(ds, -1, -2), q64) * scale
        return self.result(dq, q.dtype), self.result(dk, k.dtype), self.result(dv, v.dtype)
