"""Indexing, joining and sorting ops.

Shapes, axes and index ranges are checked by ``burn.tensor.index`` before a backend sees
them: every index value is in ``[0, size)`` of the axis it indexes (``index_range`` is how
the tensor level finds out), ``axis`` is non-negative, and result dtypes are decided.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from cubepy.ir.dtypes import DType
from kernels.layout import View


class IndexOps(ABC):
    @abstractmethod
    def assign(self, target: View, source: View) -> None:
        """Write ``source`` into the dense ``target`` in place (same shape and dtype): the
        one op that changes an existing tensor (``BatchNorm``'s running statistics)."""

    @abstractmethod
    def index_range(self, index: View) -> tuple[int, int]:
        """The smallest and largest value of a non-empty integer view, on the host."""

    @abstractmethod
    def gather(self, x: View, axis: int, index: View) -> View:
        """``out[i] = x[i with its axis coordinate replaced by index[i]]`` (torch's
        ``gather``); ``index`` has ``x``'s rank and fits inside ``x`` off ``axis``."""

    @abstractmethod
    def take(self, x: View, axis: int, index: View) -> View:
        """``x`` indexed along ``axis`` by ``index`` of any shape (NumPy's ``take``): shape
        ``x.shape[:axis] + index.shape + x.shape[axis + 1:]``."""

    @abstractmethod
    def scatter_add(self, x: View, axis: int, index: View, src: View) -> View:
        """A copy of ``x`` with ``src[i]`` added at ``i`` with its axis coordinate replaced
        by ``index[i]`` (torch's ``scatter_add``); ``index`` fits inside ``src``."""

    @abstractmethod
    def scatter_reduce(self, x: View, axis: int, index: View, src: View, op: str,
                       include_self: bool) -> View:
        """A copy of ``x`` with ``src[i]`` combined by ``op`` (``add``, ``mul``, ``max``,
        ``min``) into ``i`` with its axis coordinate replaced by ``index[i]``; without
        ``include_self`` the slots an index names reduce ``src`` alone (torch's
        ``scatter_reduce``). Float max/min follow ``np.maximum.at``: NaN wins."""

    @abstractmethod
    def one_hot(self, index: View, num_classes: int, dtype: DType) -> View:
        """``index.shape + (num_classes,)`` of ``dtype``: 1 at each index's class, else 0."""

    @abstractmethod
    def triangle(self, x: View, diagonal: int, upper: bool) -> View:
        """``triu`` (``upper``) or ``tril`` of the last two axes of ``x``."""

    @abstractmethod
    def cat(self, xs: Sequence[View], axis: int, dtype: DType) -> View:
        """``xs`` (equal shapes off ``axis``) joined along ``axis``, as ``dtype``."""

    @abstractmethod
    def pad(self, x: View, pads: Sequence[tuple[int, int]], value: Any) -> View:
        """``x`` with ``pads[d] = (before, after)`` elements of ``value`` around axis ``d``
        (one pair per axis, none negative)."""

    @abstractmethod
    def sort(self, x: View, axis: int, k: int, descending: bool,
             index_dtype: DType) -> tuple[View, View]:
        """The first ``k`` of ``x`` sorted along ``axis`` and their indices (``index_dtype``):
        a stable sort, ties in their original order in both directions, NaN larger than
        every number. ``k = x.shape[axis]`` sorts fully."""
