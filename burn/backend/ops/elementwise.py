"""Elementwise ops: the names are ``kernels.elementwise.UNARY_OPS`` and ``BINARY_OPS``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from cubepy.ir.dtypes import DType
from kernels.layout import View


class ElementwiseOps(ABC):
    @abstractmethod
    def unary(self, op: str, x: View, compute: DType, out_dtype: DType) -> View:
        """``op`` on every element of ``x``, computed in ``compute``, stored as ``out_dtype``."""

    @abstractmethod
    def binary(self, op: str, x: View, y: View, compute: DType, out_dtype: DType) -> View:
        """``op(x, y)`` elementwise; ``x`` and ``y`` have one shape."""

    @abstractmethod
    def where(self, cond: View, x: View, y: View, out_dtype: DType) -> View:
        """``x`` where ``cond`` is nonzero, else ``y`` (one shape)."""

    @abstractmethod
    def clamp(self, x: View, lo: Any, hi: Any, out_dtype: DType) -> View:
        """``x`` limited to ``[lo, hi]``; either bound may be None."""

    @abstractmethod
    def cast(self, x: View, dtype: DType) -> View:
        """``x`` as ``dtype`` (floats to integers truncate toward zero)."""

    @abstractmethod
    def copy(self, x: View) -> View:
        """A contiguous copy of ``x``."""
