"""Creation ops through ``kernels.creation``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cubepy.ir.dtypes import DType
from kernels import creation
from kernels.layout import View

from ..ops.creation import CreationOps
from .core import CubeCore


class CubeCreation(CubeCore, CreationOps):
    def full(self, shape: Sequence[int], value: Any, dtype: DType) -> View:
        return creation.full(self.ctx, shape, value, dtype)

    def arange(self, start: float, step: float, n: int, dtype: DType) -> View:
        return creation.arange(self.ctx, start, step, n, dtype)

    def linspace(self, start: float, stop: float, n: int, dtype: DType) -> View:
        return creation.linspace(self.ctx, start, stop, n, dtype)

    def eye(self, n: int, m: int, dtype: DType) -> View:
        return creation.eye(self.ctx, n, m, dtype)
