"""Linear algebra, convolution, pooling and attention through ``kernels.matmul``, ``conv``,
``pool`` and ``attention``."""

from __future__ import annotations

from collections.abc import Sequence

from cubepy.ir.dtypes import DType
from kernels import attention as attention_kernels
from kernels import conv, matmul, pool
from kernels.layout import View

from ..ops.linalg import LinalgOps
from .core import CubeCore


class CubeLinalg(CubeCore, LinalgOps):
    def matmul(self, a: View, b: View, out_dtype: DType) -> View:
        return matmul.matmul(self.ctx, a, b, out_dtype)

    def conv2d(self, x: View, weight: View, bias: View | None, stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int], groups: int,
               out_size: Sequence[int]) -> View:
        return conv.conv2d(self.ctx, x, weight, bias, stride, padding, dilation, groups,
                           out_size)

    def pool2d(self, op: str, x: View, kernel: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int],
               out_size: Sequence[int]) -> View:
        return pool.pool2d(self.ctx, op, x, kernel, stride, padding, dilation, out_size)

    def adaptive_avg_pool2d(self, x: View, out_size: Sequence[int]) -> View:
        return pool.adaptive_avg_pool2d(self.ctx, x, out_size)

    def attention(self, q: View, k: View, v: View, causal: bool, scale: float
                  ) -> tuple[View, View]:
        return attention_kernels.attention(self.ctx, q, k, v, causal, scale)

    def attention_backward(self, q: View, k: View, v: View, out: View, lse: View, d_out: View,
                           causal: bool, scale: float) -> tuple[View, View, View]:
        return attention_kernels.attention_backward(self.ctx, q, k, v, out, lse, d_out, causal,
                                                    scale)
