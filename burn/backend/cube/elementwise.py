"""Elementwise ops through ``kernels.elementwise``."""

from __future__ import annotations

from typing import Any

from cubepy.ir.dtypes import DType
from kernels import elementwise
from kernels.layout import View

from ..ops.elementwise import ElementwiseOps
from .core import CubeCore


class CubeElementwise(CubeCore, ElementwiseOps):
    def unary(self, op: str, x: View, compute: DType, out_dtype: DType) -> View:
        return elementwise.unary(self.ctx, op, x, compute, out_dtype)

    def binary(self, op: str, x: View, y: View, compute: DType, out_dtype: DType) -> View:
        return elementwise.binary(self.ctx, op, x, y, compute, out_dtype)

    def where(self, cond: View, x: View, y: View, out_dtype: DType) -> View:
        return elementwise.where(self.ctx, cond, x, y, out_dtype)

    def clamp(self, x: View, lo: Any, hi: Any, out_dtype: DType) -> View:
        return elementwise.clamp(self.ctx, x, lo, hi, out_dtype)

    def cast(self, x: View, dtype: DType) -> View:
        return elementwise.cast(self.ctx, x, dtype)

    def copy(self, x: View) -> View:
        return elementwise.copy(self.ctx, x)
