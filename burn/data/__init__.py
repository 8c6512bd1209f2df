"""Feeding data to a model: datasets of NumPy items and a loader of batches of tensors.

``ArrayDataset`` holds arrays in memory, ``MappedDataset`` transforms items, ``Subset`` and
``random_split`` pick parts; ``DataLoader`` reads a dataset in (shuffled) batches of burn
tensors, building the next ones on a background thread.

Example:
    >>> x = np.random.default_rng(0).normal(size=(100, 3)).astype(np.float32)
    >>> y = (x.sum(axis=1) > 0).astype(np.int64)
    >>> train, valid = burn.data.random_split(burn.data.ArrayDataset(x, y), [0.8, 0.2])
    >>> loader = burn.data.DataLoader(train, 32, shuffle=True, backend="cpu")
    >>> for epoch in range(2):
    ...     shapes = [(xb.shape, yb.shape) for xb, yb in loader]
    >>> len(loader), shapes[-1], loader.epoch
    (3, ((16, 3), (16,)), 2)
"""

from .dataset import ArrayDataset, Dataset, MappedDataset, Subset, batch_function, random_split
from .loader import FALLBACK_DTYPES, Batches, DataLoader, stack_items

__all__ = ["FALLBACK_DTYPES", "ArrayDataset", "Batches", "DataLoader", "Dataset",
           "MappedDataset", "Subset", "batch_function", "random_split", "stack_items"]
