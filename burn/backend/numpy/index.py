"""The NumPy reference for indexing, joining and sorting: the semantics the kernels have."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt
from cubepy.ir.dtypes import DType
from kernels.layout import View
from kernels.rows import identity
from kernels.scatter import REDUCTION_OF

from ..ops.index import IndexOps
from .core import NumpyCore, register_dtype


def _as(array: np.ndarray, dtype: DType) -> np.ndarray:
    """``array`` converted to ``dtype`` (to 16-bit floats through float32, as kernels do)."""
    if dtype.name in ("float16", "bfloat16") and array.dtype != dtype.numpy:
        array = array.astype(np.float32)
    return array.astype(dtype.numpy)


def _accumulator(dtype: DType) -> np.dtype:
    """What ``scatter_add`` sums ``dtype`` in: 16-bit floats in float32, 8/16-bit integers in
    int32 (wrapping around like the narrow sum when converted back)."""
    if dtype.name in ("int8", "int16", "uint8"):
        return np.dtype(np.int32)
    return register_dtype(dtype)


_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _coordinates(shape: Sequence[int], axis: int, index: np.ndarray) -> tuple[Any, ...]:
    """Advanced-indexing coordinates: ``index`` on ``axis``, the position elsewhere."""
    grids = np.indices(shape, sparse=True)
    return tuple(index if d == axis else g for d, g in enumerate(grids))


class NumpyIndex(NumpyCore, IndexOps):
    def assign(self, target: View, source: View) -> None:
        self.array(target)[...] = self.array(source)

    def index_range(self, index: View) -> tuple[int, int]:
        a = self.array(index)
        return int(a.min()), int(a.max())

    def gather(self, x: View, axis: int, index: View) -> View:
        idx = self.array(index)
        out = self.array(x)[_coordinates(idx.shape, axis, idx)]
        return self.result(out, x.dtype)

    def take(self, x: View, axis: int, index: View) -> View:
        return self.result(np.take(self.array(x), self.array(index), axis=axis), x.dtype)

    def scatter_add(self, x: View, axis: int, index: View, src: View) -> View:
        idx = self.array(index)
        acc = self.array(x).astype(_accumulator(x.dtype))
        values = self.array(src)[tuple(slice(0, n) for n in idx.shape)].astype(acc.dtype)
        np.add.at(acc, _coordinates(idx.shape, axis, idx), values)
        return self.result(_as(acc, x.dtype), x.dtype)

    def scatter_reduce(self, x: View, axis: int, index: View, src: View, op: str,
                       include_self: bool) -> View:
        idx = self.array(index)
        acc = self.array(x).astype(_accumulator(x.dtype))
        values = self.array(src)[tuple(slice(0, n) for n in idx.shape)].astype(acc.dtype)
        slots = _coordinates(idx.shape, axis, idx)
        if not include_self:
            acc[slots] = identity(REDUCTION_OF[op], dt.from_numpy(acc.dtype))
        _UFUNCS[op].at(acc, slots, values)
        return self.result(_as(acc, x.dtype), x.dtype)

    def one_hot(self, index: View, num_classes: int, dtype: DType) -> View:
        hot = self.array(index)[..., None] == np.arange(num_classes)
        return self.result(hot.astype(dtype.numpy), dtype)

    def triangle(self, x: View, diagonal: int, upper: bool) -> View:
        a = self.array(x)
        rows, cols = a.shape[-2:]
        offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
        keep = offset >= diagonal if upper else offset <= diagonal
        return self.result(np.where(keep, a, np.zeros((), a.dtype)), x.dtype)

    def cat(self, xs: Sequence[View], axis: int, dtype: DType) -> View:
        parts = [_as(self.array(x), dtype) for x in xs]
        return self.result(np.concatenate(parts, axis=axis), dtype)

    def pad(self, x: View, pads: Sequence[tuple[int, int]], value: Any) -> View:
        a = self.array(x)
        shape = [n + lo + hi for n, (lo, hi) in zip(a.shape, pads)]
        fill = np.full((), value, register_dtype(x.dtype)).astype(a.dtype)
        out = np.full(shape, fill, a.dtype)
        out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape, pads))] = a
        return self.result(out, x.dtype)

    def sort(self, x: View, axis: int, k: int, descending: bool,
             index_dtype: DType) -> tuple[View, View]:
        a = self.array(x)
        keys = a.astype(np.float32) if x.dtype.name in ("float16", "bfloat16") else a
        n = a.shape[axis]
        if descending:
            # stable descending: sort the reversed row ascending, read it backwards
            flipped = np.flip(keys, axis)
            order = n - 1 - np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis)
        else:
            order = np.argsort(keys, axis=axis, kind="stable")
        order = np.take(order, np.arange(k), axis=axis)
        values = np.take_along_axis(a, order, axis=axis)
        return self.result(values, x.dtype), self.result(order, index_dtype)
