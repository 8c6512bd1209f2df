"""Indexing, joining and sorting through ``kernels.index`` and ``kernels.sort``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cubepy as cube
from cubepy.ir.dtypes import DType
from kernels import elementwise as elementwise_kernels
from kernels import index as index_kernels
from kernels import scatter as scatter_kernels
from kernels import sort as sort_kernels
from kernels.layout import View

from ..base import BurnError
from ..ops.index import IndexOps
from .core import CubeCore


class CubeIndex(CubeCore, IndexOps):
    def assign(self, target: View, source: View) -> None:
        elementwise_kernels.copy_into(self.ctx, target, source)

    def index_range(self, index: View) -> tuple[int, int]:
        lo, hi = self.to_numpy(index_kernels.index_range(self.ctx, index)).tolist()
        return int(lo), int(hi)

    def gather(self, x: View, axis: int, index: View) -> View:
        return index_kernels.gather(self.ctx, x, index, axis)

    def take(self, x: View, axis: int, index: View) -> View:
        return index_kernels.take(self.ctx, x, index, axis)

    def scatter_add(self, x: View, axis: int, index: View, src: View) -> View:
        try:
            return scatter_kernels.scatter_add(self.ctx, x, index, src, axis)
        except cube.UnsupportedError as err:  # no atomics for the dtype on this target
            raise BurnError(str(err)) from None

    def scatter_reduce(self, x: View, axis: int, index: View, src: View, op: str,
                       include_self: bool) -> View:
        try:
            return scatter_kernels.scatter_reduce(self.ctx, x, index, src, axis, op,
                                                  include_self)
        except cube.UnsupportedError as err:
            raise BurnError(str(err)) from None

    def one_hot(self, index: View, num_classes: int, dtype: DType) -> View:
        return index_kernels.one_hot(self.ctx, index, num_classes, dtype)

    def triangle(self, x: View, diagonal: int, upper: bool) -> View:
        return index_kernels.triangle(self.ctx, x, diagonal, upper)

    def cat(self, xs: Sequence[View], axis: int, dtype: DType) -> View:
        return index_kernels.cat(self.ctx, xs, axis, dtype)

    def pad(self, x: View, pads: Sequence[tuple[int, int]], value: Any) -> View:
        return index_kernels.pad(self.ctx, x, pads, value)

    def sort(self, x: View, axis: int, k: int, descending: bool,
             index_dtype: DType) -> tuple[View, View]:
        return sort_kernels.sort(self.ctx, x, axis, k, descending, index_dtype)
