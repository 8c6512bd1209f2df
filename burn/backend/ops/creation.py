"""Creation ops: tensors filled from a formula."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from cubepy.ir.dtypes import DType
from kernels.layout import View


class CreationOps(ABC):
    @abstractmethod
    def full(self, shape: Sequence[int], value: Any, dtype: DType) -> View:
        """A contiguous tensor of ``shape`` with every element ``value``."""

    @abstractmethod
    def arange(self, start: float, step: float, n: int, dtype: DType) -> View:
        """``start + i * step`` for ``i`` in ``range(n)``, computed in float64 or int64."""

    @abstractmethod
    def linspace(self, start: float, stop: float, n: int, dtype: DType) -> View:
        """``n`` evenly spaced values from ``start`` to ``stop`` inclusive."""

    @abstractmethod
    def eye(self, n: int, m: int, dtype: DType) -> View:
        """An ``n x m`` tensor with ones on the diagonal."""
