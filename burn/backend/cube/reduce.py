"""Reductions, scans and normalizations through ``kernels.reduce``, ``scan``, ``softmax``,
``norm``, ``norm_grad`` and ``batch_norm``."""

from __future__ import annotations

from collections.abc import Sequence

from cubepy.ir.dtypes import DType
from kernels import batch_norm as batch_norm_kernels
from kernels import norm, norm_grad, reduce, scan, softmax
from kernels.layout import View

from ..ops.reduce import ReduceOps
from .core import CubeCore


class CubeReduce(CubeCore, ReduceOps):
    def reduce(self, op: str, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
               ) -> View:
        return reduce.reduce(self.ctx, op, x, axes, compute, out_dtype)

    def argreduce(self, op: str, x: View, axes: Sequence[int], out_dtype: DType) -> View:
        return reduce.argreduce(self.ctx, op, x, axes, out_dtype)

    def variance(self, x: View, axes: Sequence[int], correction: float, sqrt: bool,
                 compute: DType, out_dtype: DType) -> View:
        return reduce.variance(self.ctx, x, axes, correction, sqrt, compute, out_dtype)

    def logsumexp(self, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
                  ) -> View:
        return reduce.logsumexp(self.ctx, x, axes, compute, out_dtype)

    def scan(self, op: str, x: View, axis: int, compute: DType, out_dtype: DType) -> View:
        return scan.scan(self.ctx, op, x, axis, compute, out_dtype)

    def softmax(self, x: View, axis: int, log: bool, compute: DType, out_dtype: DType
                ) -> View:
        return softmax.softmax(self.ctx, x, axis, log, compute, out_dtype)

    def layer_norm(self, x: View, k: int, weight: View | None, bias: View | None, eps: float,
                   compute: DType, out_dtype: DType) -> View:
        return norm.layer_norm(self.ctx, x, k, weight, bias, eps, compute, out_dtype)

    def rms_norm(self, x: View, k: int, weight: View | None, eps: float, compute: DType,
                 out_dtype: DType) -> View:
        return norm.rms_norm(self.ctx, x, k, weight, eps, compute, out_dtype)

    def norm_backward(self, x: View, k: int, weight: View | None, d_out: View, eps: float,
                      rms: bool, params: bool, compute: DType
                      ) -> tuple[View, View | None, View | None]:
        return norm_grad.norm_backward(self.ctx, x, k, weight, d_out, eps, rms, params,
                                       compute)

    def batch_norm(self, x: View, mean: View | None, var: View | None, weight: View | None,
                   bias: View | None, eps: float, compute: DType, out_dtype: DType
                   ) -> tuple[View, View, View]:
        return batch_norm_kernels.batch_norm(self.ctx, x, mean, var, weight, bias, eps,
                                             compute, out_dtype)

    def batch_norm_backward(self, x: View, d_out: View, mean: View, var: View,
                            weight: View | None, eps: float, params: bool, compute: DType
                            ) -> tuple[View, View | None, View | None]:
        return batch_norm_kernels.batch_norm_backward(self.ctx, x, d_out, mean, var, weight,
                                                      eps, params, compute)
