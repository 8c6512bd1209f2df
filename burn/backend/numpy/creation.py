"""The NumPy reference for creation ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cubepy.ir.dtypes import DType
from kernels.layout import View

from ..ops.creation import CreationOps
from .core import NumpyCore


class NumpyCreation(NumpyCore, CreationOps):
    def full(self, shape: Sequence[int], value: Any, dtype: DType) -> View:
        return self.result(np.full(tuple(shape), value, np.float64 if dtype.is_float
                                   else dtype.numpy), dtype)

    def arange(self, start: float, step: float, n: int, dtype: DType) -> View:
        kind = np.float64 if dtype.is_float else np.int64
        return self.result(np.asarray(start, kind) + np.arange(n, dtype=kind) *
                           np.asarray(step, kind), dtype)

    def linspace(self, start: float, stop: float, n: int, dtype: DType) -> View:
        return self.result(np.linspace(start, stop, n, dtype=np.float64), dtype)

    def eye(self, n: int, m: int, dtype: DType) -> View:
        return self.result(np.eye(n, m), dtype)
