"""Linear algebra, convolution and pooling ops.

Shapes are already checked and normalized by ``burn.tensor.linalg``: matmul operands are at
least 2-D with equal batch shapes (broadcast axes have stride 0) and one dtype; convolution
and pooling see 4-D ``(N, C, H, W)`` inputs (1-D ops arrive as height-1 views) with every
parameter a pair ``(height, width)``, padding as (top, left) and the output size computed.
Results are fresh contiguous views.
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
