"""Reductions, scans and normalizations: the names are in ``kernels.reduce.REDUCE_OPS``,
``ARG_OPS`` and ``kernels.scan.SCAN_OPS``.

Axes arrive normalized (sorted, distinct, non-negative); reductions return the kept axes only
(``burn.tensor`` adds ``keepdim`` axes back as views). ``compute`` is the accumulator dtype
``burn.tensor`` chose (int64 or int32 for integer sums and products, float32 for 16-bit
floats); results are fresh contiguous views of ``out_dtype``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from cubepy.ir.dtypes import DType
from kernels.layout import View


class ReduceOps(ABC):
    @abstractmethod
    def reduce(self, op: str, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
               ) -> View:
        """``sum``, ``prod``, ``max``, ``min``, ``any``, ``all`` or ``mean`` over ``axes``
        (``max``/``min`` never see an empty axis; ``mean`` of none is NaN)."""

    @abstractmethod
    def argreduce(self, op: str, x: View, axes: Sequence[int], out_dtype: DType) -> View:
        """``argmax``/``argmin``: the first index of the extreme value over one axis, or over
        every axis as an index into the row-major flattened ``x``."""

    @abstractmethod
    def variance(self, x: View, axes: Sequence[int], correction: float, sqrt: bool,
                 compute: DType, out_dtype: DType) -> View:
        """Sum of squared deviations from the mean over ``axes`` divided by
        ``max(count - correction, 0)``; its square root with ``sqrt``."""

    @abstractmethod
    def logsumexp(self, x: View, axes: Sequence[int], compute: DType, out_dtype: DType
                  ) -> View:
        """``max + log(sum(exp(x - max)))`` over ``axes`` (an infinite max is taken as 0
        inside the sum): -inf over an empty axis."""

    @abstractmethod
    def scan(self, op: str, x: View, axis: int, compute: DType, out_dtype: DType) -> View:
        """The inclusive ``cumsum`` or ``cumprod`` along ``axis``, of ``x``'s shape."""

    @abstractmethod
    def softmax(self, x: View, axis: int, log: bool, compute: DType, out_dtype: DType
                ) -> View:
        """``exp(x - max) / sum(exp(x - max))`` along ``axis``; its log with ``log``."""

    @abstractmethod
    def layer_norm(self, x: View, k: int, weight: View | None, bias: View | None, eps: float,
                   compute: DType, out_dtype: DType) -> View:
        """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last ``k`` axes (biased
        variance); ``weight``/``bias`` have those axes' shape or are None."""

    @abstractmethod
    def rms_norm(self, x: View, k: int, weight: View | None, eps: float, compute: DType,
                 out_dtype: DType) -> View:
        """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last ``k`` axes."""

    @abstractmethod
    def norm_backward(self, x: View, k: int, weight: View | None, d_out: View, eps: float,
                      rms: bool, params: bool, compute: DType
                      ) -> tuple[View, View | None, View | None]:
        """The gradients of ``layer_norm`` (``rms_norm`` with ``rms``) over the last ``k`` axes
        at ``x`` for the output gradient ``d_out``: ``dx`` in ``x``'s dtype; with ``params``
        the weight's (``d_out * (x - mean) * rstd`` summed over the leading axes) and the
        bias's (``d_out`` summed; None for ``rms``) in ``compute``, else None."""

    @abstractmethod
    def batch_norm(self, x: View, mean: View | None, var: View | None, weight: View | None,
                   bias: View | None, eps: float, compute: DType, out_dtype: DType
                   ) -> tuple[View, View, View]:
        """``(x - mean) * rsqrt(var + eps) * weight + bias`` with (C,) statistics and
        parameters along axis 1 of an (N, C, ...) ``x``, computed in ``compute``. Without
        ``mean`` and ``var``, the batch's own (over every axis but 1; the biased variance).
        Returns the result and the statistics used, in ``compute``."""

    @abstractmethod
    def batch_norm_backward(self, x: View, d_out: View, mean: View, var: View,
                            weight: View | None, eps: float, params: bool, compute: DType
                            ) -> tuple[View, View | None, View | None]:
        """The gradients of ``batch_norm`` normalized by the batch's own statistics
        (``mean``, ``var`` of ``x``) for the output gradient ``d_out``: ``dx`` in ``x``'s
        dtype; with ``params`` the weight's (``d_out * (x - mean) * rstd`` summed over every
        axis but 1) and the bias's (``d_out`` summed), in ``compute``, else None."""
