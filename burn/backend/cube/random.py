"""Random ops through ``kernels.random`` (Threefry-2x32 in uint32 arithmetic)."""

from __future__ import annotations

from collections.abc import Sequence

from cubepy.ir.dtypes import DType
from kernels import random
from kernels.layout import View
from kernels.random import Stream

from ..ops.random import RandomOps
from .core import CubeCore


class CubeRandom(CubeCore, RandomOps):
    def random_uniform(self, shape: Sequence[int], low: float, high: float, dtype: DType,
                       stream: Stream) -> View:
        return random.uniform(self.ctx, shape, low, high, dtype, stream)

    def random_normal(self, shape: Sequence[int], mean: float, std: float, dtype: DType,
                      stream: Stream) -> View:
        return random.normal(self.ctx, shape, mean, std, dtype, stream)

    def random_randint(self, shape: Sequence[int], low: int, high: int, dtype: DType,
                       stream: Stream) -> View:
        return random.randint(self.ctx, shape, low, high, dtype, stream)

    def random_bernoulli(self, p: View, dtype: DType, stream: Stream) -> View:
        return random.bernoulli(self.ctx, p, dtype, stream)

    def random_dropout(self, x: View, p: float, stream: Stream) -> View:
        return random.dropout(self.ctx, x, p, stream)
