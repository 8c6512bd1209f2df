"""Storage of the NumPy backend: flat host arrays; ops see them as strided NumPy views."""

from __future__ import annotations

from typing import Any

import numpy as np

from cubepy.ir.dtypes import DType
from kernels.layout import View, float_register

from ..base import Backend, strided_numpy


def register_dtype(dtype: DType) -> np.dtype:
    """The NumPy dtype the reference computes ``dtype`` in (16-bit floats in float32)."""
    return float_register(dtype).numpy


class NumpyCore(Backend):
    name = "numpy"

    def allocate(self, numel: int, dtype: DType) -> Any:
        return np.empty(numel, dtype.numpy)

    def storage_from_numpy(self, flat: np.ndarray) -> Any:
        return flat.copy()

    def storage_to_numpy(self, storage: Any, dtype: DType) -> np.ndarray:
        return storage

    def array(self, view: View) -> np.ndarray:
        """``view`` as a NumPy view of its storage (no copy)."""
        return strided_numpy(view.storage, view)

    def result(self, value: Any, dtype: DType) -> View:
        """A fresh contiguous view holding ``value`` converted to ``dtype``."""
        value = np.asarray(value)
        if dtype.name in ("float16", "bfloat16") and value.dtype.kind in "iub":
            value = value.astype(np.float32)  # ml_dtypes converts from floats only
        return self.from_numpy(np.asarray(value).astype(dtype.numpy, copy=False))
