"""Linear algebra, convolution, pooling and attention ops.

Shapes are already checked and normalized by ``burn.tensor.linalg``: matmul operands are at
least 2-D with equal batch shapes (broadcast axes have stride 0) and one dtype; convolution
and pooling see 4-D ``(N, C, H, W)`` inputs (1-D ops arrive as height-1 views) with every
parameter a pair ``(height, width)``, padding as (top, left) and the output size computed.
Attention (``burn.tensor.attention``) sees 4-D ``(B, H, S, D)`` operands of one float dtype
(float16, bfloat16 or float32), no empty axis and a positive scale. Results are fresh
views, contiguous but for attention's output (see ``attention``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from cubepy.ir.dtypes import DType
from kernels.layout import View


class LinalgOps(ABC):
    @abstractmethod
    def matmul(self, a: View, b: View, out_dtype: DType) -> View:
        """``a (*batch, M, K) @ b (*batch, K, N)`` as ``(*batch, M, N)`` of ``out_dtype``.

        Floats accumulate in float32 (float64 for float64), integers in int32 (int64 for
        int64), wrapping around on overflow as NumPy's integer matmul does.
        """

    @abstractmethod
    def conv2d(self, x: View, weight: View, bias: View | None, stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int], groups: int,
               out_size: Sequence[int]) -> View:
        """Cross-correlation of ``x`` (N, C, H, W) with ``weight`` (O, C / groups, KH, KW),
        plus ``bias`` (O,) if given: (N, O, OH, OW) of ``x``'s dtype. ``padding`` is (top,
        left); taps past the bottom or right edge read zeros."""

    @abstractmethod
    def pool2d(self, op: str, x: View, kernel: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int],
               out_size: Sequence[int]) -> View:
        """``op`` ("max" or "avg") pooling of ``x`` (N, C, H, W) into (N, C, OH, OW). Max
        pads with -inf and propagates NaN; avg counts padding (divides by KH * KW)."""

    @abstractmethod
    def adaptive_avg_pool2d(self, x: View, out_size: Sequence[int]) -> View:
        """Average of ``x`` (N, C, H, W) over the windows ``[floor(i*H/OH), ceil((i+1)*H/OH))``
        (likewise for width): (N, C, OH, OW)."""

    @abstractmethod
    def attention(self, q: View, k: View, v: View, causal: bool, scale: float
                  ) -> tuple[View, View]:
        """Scaled dot-product attention of ``q`` (B, H, Sq, D) over ``k`` and ``v`` (B, H, Sk,
        D), any strides: ``out = softmax(q @ k^T * scale) @ v`` (B, H, Sq, D) of ``q``'s
        dtype, and ``lse`` (B, H, Sq) float32, contiguous: each query row's log-sum-exp of its
        scaled scores. ``causal``: query ``i`` sees keys ``0..i`` only (top-left aligned).

        ``out`` may be a view of (B, Sq, H, D)-ordered memory (the fused kernel writes it so
        that merging the heads, ``out.transpose(1, 2).reshape(B, Sq, H * D)``, is free).
        """

    @abstractmethod
    def attention_backward(self, q: View, k: View, v: View, out: View, lse: View, d_out: View,
                           causal: bool, scale: float) -> tuple[View, View, View]:
        """The gradients ``(dq, dk, dv)`` of ``attention(q, k, v, causal, scale)`` given its
        ``out`` and ``lse`` and the gradient ``d_out`` of ``out`` (any strides): with ``P``
        the attention weights, ``dv = P^T @ d_out``, ``dS = P * (d_out @ v^T - rowsum(d_out *
        out))``, ``dq = dS @ k * scale``, ``dk = dS^T @ q * scale``; each of its input's shape
        and dtype."""
