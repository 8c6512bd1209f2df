"""Datasets: sized, indexable collections of items, each a tuple of NumPy arrays or numbers.

A dataset is anything with ``__len__`` and ``__getitem__(index)`` (the ``Dataset`` protocol): a
list of ``(x, y)`` tuples is one. ``ArrayDataset`` serves rows of arrays held in memory (and
whole batches of them at once), ``MappedDataset`` transforms each item, ``Subset`` picks items
by index and ``random_split`` cuts a dataset into random, disjoint subsets.

Example:
    >>> x, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    >>> data = burn.data.ArrayDataset(x, y)
    >>> len(data), data[1]
    (6, (array([2., 3.]), np.int64(1)))
    >>> train, test = burn.data.random_split(data, [0.5, 0.5], seed=0)
    >>> len(train), len(test)
    (3, 3)
    >>> scaled = burn.data.MappedDataset(data, lambda x, y: (x / 10, y))
    >>> scaled[1][0]
    array([0.2, 0.3])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..backend.base import BurnError
from ..tensor.tensor import Tensor

#: one item: a tuple of fields, each a NumPy array or a number
Item = tuple[Any, ...]

__all__ = ["ArrayDataset", "Dataset", "Item", "MappedDataset", "Subset", "batch_function",
           "random_split"]


@runtime_checkable
class Dataset(Protocol):
    """What ``DataLoader`` reads: ``len(dataset)`` items, ``dataset[i]`` for ``0 <= i < len``.

    An item is a tuple of fields (NumPy arrays or numbers), the same number of fields and the
    same shape per field for every item; a bare array or number counts as a 1-tuple. A dataset
    may also have ``batch(indices) -> tuple of arrays`` (rows ``indices`` of each field,
    stacked), which the loader then calls once per batch instead of gathering item by item.
    """

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Item: ...


def _index(index: Any, length: int, what: str) -> int:
    """``index`` as an int in ``range(length)``, negatives counted from the end."""
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise TypeError(f"{what} indices must be integers, got {type(index).__name__}")
    i = int(index)
    if not -length <= i < length:
        # IndexError, not BurnError: `for item in dataset` and `list(dataset)` stop on it
        raise IndexError(f"{what} index {i} is out of range for {length} items")
    return i + length if i < 0 else i


class ArrayDataset:
    """Items are the rows of ``arrays`` (equal first dimensions): item ``i`` is
    ``(arrays[0][i], arrays[1][i], ...)``. The arrays are held, not copied; burn tensors and
    nested lists are converted to NumPy arrays once, here.

    Example:
        >>> data = burn.data.ArrayDataset(np.zeros((4, 3)), np.arange(4))
        >>> [a.shape for a in data.batch(np.array([3, 0]))]
        [(2, 3), (2,)]
    """

    def __init__(self, *arrays: Any) -> None:
        if not arrays:
            raise BurnError("ArrayDataset: give at least one array, e.g. ArrayDataset(x, y)")
        self.arrays = tuple(_as_array(a, i) for i, a in enumerate(arrays))
        shapes = [a.shape for a in self.arrays]
        if any(len(s) == 0 for s in shapes):
            raise BurnError(f"ArrayDataset: arrays must have a first (item) dimension; the "
                            f"shapes are {', '.join(map(str, shapes))}")
        if len({s[0] for s in shapes}) > 1:
            raise BurnError(f"ArrayDataset: the arrays' first dimensions (the item counts) "
                            f"differ; the shapes are {', '.join(map(str, shapes))}")

    def __len__(self) -> int:
        return self.arrays[0].shape[0]

    def __getitem__(self, index: int) -> Item:
        i = _index(index, len(self), "ArrayDataset")
        return tuple(a[i] for a in self.arrays)

    def batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The rows ``indices`` (an int array) of every array: one fancy index per array."""
        return tuple(a[indices] for a in self.arrays)

    def __repr__(self) -> str:
        fields = ", ".join(f"{a.dtype}{list(a.shape[1:])}" for a in self.arrays)
        return f"ArrayDataset({len(self)} items of ({fields}))"


def _as_array(value: Any, position: int) -> np.ndarray:
    # a burn Tensor is downloaded once, here, not once per item
    array = value.numpy() if isinstance(value, Tensor) else value
    try:
        return np.asarray(array)
    except ValueError as error:  # ragged nested lists
        raise BurnError(f"ArrayDataset: argument {position} is not an array ({error})") from None


class MappedDataset:
    """Items of ``dataset`` passed through ``fn``: item ``i`` is ``fn(*dataset[i])`` (the
    fields as arguments, as ``tf.data``'s ``map`` does), computed when it is read.

    Example:
        >>> data = burn.data.ArrayDataset(np.arange(3.0), np.arange(3))
        >>> burn.data.MappedDataset(data, lambda x, y: (x * 2, y))[2]
        (np.float64(4.0), np.int64(2))
    """

    def __init__(self, dataset: Dataset, fn: Callable[..., Any]) -> None:
        self.dataset = check_dataset(dataset, "MappedDataset")
        if not callable(fn):
            raise BurnError(f"MappedDataset: fn must be callable, got {type(fn).__name__}; "
                            f"write MappedDataset(dataset, lambda x, y: (x / 255, y))")
        self.fn = fn

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        item = self.dataset[_index(index, len(self), "MappedDataset")]
        return self.fn(*(item if isinstance(item, tuple) else (item,)))

    def __repr__(self) -> str:
        return f"MappedDataset({self.dataset!r}, {getattr(self.fn, '__name__', self.fn)!r})"


class Subset:
    """The items ``indices`` of ``dataset``, in that order: item ``i`` is
    ``dataset[indices[i]]``.

    Example:
        >>> data = burn.data.ArrayDataset(np.arange(10) * 10)
        >>> part = burn.data.Subset(data, [7, 2])
        >>> len(part), part[0]
        (2, (np.int64(70),))
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int] | np.ndarray) -> None:
        self.dataset = check_dataset(dataset, "Subset")
        index_array = np.asarray(indices)
        if index_array.size == 0:
            index_array = index_array.astype(np.int64)  # np.asarray([]) is float64
        if index_array.ndim != 1 or index_array.dtype.kind not in "iu":
            raise BurnError(f"Subset: indices must be a 1-D sequence of ints, got "
                            f"{index_array.dtype} of shape {index_array.shape}")
        n = len(self.dataset)
        bad = index_array[(index_array < 0) | (index_array >= n)]
        if bad.size:
            raise BurnError(f"Subset: index {int(bad[0])} is out of range for a dataset of "
                            f"{n} items (indices must be in 0..{n - 1})")
        self.indices = index_array.astype(np.int64)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[int(self.indices[_index(index, len(self), "Subset")])]

    def batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The dataset's fast ``batch`` of these items; only for a subset of a dataset that has
        one (``batch_function(subset)`` says whether it does)."""
        parent = batch_function(self.dataset)
        if parent is None:
            raise BurnError(f"Subset.batch: {type(self.dataset).__name__} has no batch(); "
                            f"read the items one by one: subset[i]")
        return parent(self.indices[indices])

    def __repr__(self) -> str:
        return f"Subset({len(self)} items of {self.dataset!r})"


def batch_function(dataset: Dataset) -> Callable[[np.ndarray], tuple[np.ndarray, ...]] | None:
    """``dataset``'s ``batch(indices)``, when it has one that works (a ``Subset`` has one only
    over a dataset that does), else None: the loader then gathers item by item."""
    if isinstance(dataset, Subset):
        return dataset.batch if batch_function(dataset.dataset) is not None else None
    batch = getattr(dataset, "batch", None)
    return batch if callable(batch) else None


def check_dataset(dataset: Any, op: str) -> Dataset:
    """``dataset`` if it is one (``__len__`` and ``__getitem__``), else a BurnError that says
    how to make one of what was given."""
    if isinstance(dataset, (np.ndarray, Tensor)):
        raise BurnError(f"{op}: expected a dataset, got an array; wrap arrays as "
                        f"burn.data.ArrayDataset(x, y)")
    if isinstance(dataset, (str, bytes, dict)) or not (
            hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
        raise BurnError(f"{op}: expected a dataset (an object with __len__ and __getitem__), "
                        f"got {type(dataset).__name__}; wrap arrays as "
                        f"burn.data.ArrayDataset(x, y), or a list of items as a list of tuples")
    return dataset


def random_split(dataset: Dataset, lengths_or_fractions: Sequence[float],
                 seed: int = 0) -> list[Subset]:
    """``dataset`` cut into disjoint ``Subset``s of random items, one per entry: ints are
    lengths (summing to ``len(dataset)``), floats are fractions (summing to 1; the items
    left over by rounding down go one each to the first subsets, as torch does). The same
    ``seed`` gives the same split.

    Example:
        >>> data = burn.data.ArrayDataset(np.arange(10))
        >>> [len(s) for s in burn.data.random_split(data, [0.34, 0.33, 0.33], seed=1)]
        [4, 3, 3]
    """
    check_dataset(dataset, "random_split")
    n = len(dataset)
    lengths = _split_lengths(list(lengths_or_fractions), n)
    order = np.random.default_rng(check_seed(seed, "random_split")).permutation(n)
    bounds = np.cumsum([0, *lengths])
    return [Subset(dataset, order[start:stop]) for start, stop in zip(bounds, bounds[1:])]


def _split_lengths(parts: list[Any], n: int) -> list[int]:
    if not parts:
        raise BurnError("random_split: give lengths or fractions, e.g. [0.8, 0.2]")
    if any(isinstance(p, bool) or not isinstance(p, numbers.Real) for p in parts):
        raise BurnError(f"random_split: lengths or fractions must be numbers, got {parts}")
    if all(isinstance(p, numbers.Integral) for p in parts):
        lengths = [int(p) for p in parts]
        if any(length < 0 for length in lengths) or sum(lengths) != n:
            raise BurnError(f"random_split: lengths {lengths} must be non-negative and sum to "
                            f"the dataset's {n} items (they sum to {sum(lengths)}); or give "
                            f"fractions that sum to 1, e.g. [0.8, 0.2]")
        return lengths
    fractions = [float(p) for p in parts]
    if any(not 0 <= f <= 1 for f in fractions) or not math.isclose(sum(fractions), 1.0,
                                                                     abs_tol=1e-6):
        raise BurnError(f"random_split: fractions {fractions} must be in [0, 1] and sum to 1 "
                        f"(they sum to {sum(fractions):g}); or give lengths (ints) that sum "
                        f"to the dataset's {n} items")
    lengths = [math.floor(f * n) for f in fractions]
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    return lengths


def check_seed(seed: Any, op: str) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise BurnError(f"{op}: seed must be a non-negative int, got {seed!r}")
    return int(seed)
