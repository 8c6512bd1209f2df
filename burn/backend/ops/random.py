"""Random ops: counter-based, so every backend draws the same values from the same stream.

Each op takes a ``kernels.random.Stream`` (the generator's 64-bit seed and first counter) and
computes every element from Threefry-2x32-20 of (seed, counter + j * n + i), as written in
``kernels/random.py``; the caller advances its generator by
``kernels.random.draws_per_element(op, dtype) * n``. Argument checks and result dtypes are
decided in ``burn.tensor.random``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from cubepy.ir.dtypes import DType
from kernels.layout import View
from kernels.random import Stream


class RandomOps(ABC):
    @abstractmethod
    def random_uniform(self, shape: Sequence[int], low: float, high: float, dtype: DType,
                       stream: Stream) -> View:
        """Floats of ``dtype`` uniform in ``[low, high)`` (``low < high``)."""

    @abstractmethod
    def random_normal(self, shape: Sequence[int], mean: float, std: float, dtype: DType,
                      stream: Stream) -> View:
        """Floats of ``dtype`` from the normal distribution with ``mean`` and ``std``."""

    @abstractmethod
    def random_randint(self, shape: Sequence[int], low: int, high: int, dtype: DType,
                       stream: Stream) -> View:
        """Integers of ``dtype`` uniform in ``[low, high)``; ``high - low`` is at most
        ``2**32`` (``2**63 - 1`` for int64)."""

    @abstractmethod
    def random_bernoulli(self, p: View, dtype: DType, stream: Stream) -> View:
        """1 with probability ``p`` (a float view), else 0, as ``dtype`` (shape of ``p``)."""

    @abstractmethod
    def random_dropout(self, x: View, p: float, stream: Stream) -> View:
        """``x`` (floats) with each element zeroed with probability ``p``, the others
        multiplied by ``1 / (1 - p)``."""
