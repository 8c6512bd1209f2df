"""DataLoader: a dataset read in batches of burn tensors, shuffled per epoch, built ahead.

Each ``iter(loader)`` is one epoch: the item order (a new permutation per epoch when
``shuffle``), cut into batches, each gathered and stacked into NumPy arrays (one per field)
and uploaded to the backend as a tuple of tensors. With ``prefetch > 0`` a background thread
builds the next NumPy batches while the consumer trains on the current one; uploading stays on
the consumer's thread, because GPU runtimes are not all thread-safe.

Example:
    >>> data = burn.data.ArrayDataset(np.arange(10.0).reshape(5, 2), np.arange(5))
    >>> loader = burn.data.DataLoader(data, 2, shuffle=True, seed=0, backend="cpu")
    >>> len(loader), [len(y.tolist()) for x, y in loader]
    (3, [2, 2, 1])
    >>> x, y = next(iter(loader))
    >>> x.shape, x.dtype.name, y.dtype.name
    ((2, 2), 'float64', 'int64')
"""

from __future__ import annotations

import numbers
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt

from ..backend import Backend, BurnError, backend_for, default_backend
from ..tensor.creation import from_numpy
from ..tensor.tensor import Tensor
from .dataset import Dataset, Item, batch_function, check_dataset, check_seed

__all__ = ["DataLoader", "stack_items"]

#: NumPy batches: one array per field, items along the first axis
Fields = tuple[np.ndarray, ...]

#: what a field becomes on a backend without its dtype, most faithful first; ints narrower
#: than their values are skipped (an int64 id of 2**40 is refused rather than wrapped)
FALLBACK_DTYPES = {
    "float64": ("float32",), "float16": ("float32",), "bfloat16": ("float32",),
    "int64": ("int32",), "int16": ("int32",), "int8": ("int16", "int32"),
    "uint8": ("int16", "int32", "uint32"), "uint32": ("int64", "int32"),
    "bool": ("uint8", "int32"),
}

#: the name of the prefetch threads, so that a leaked one is easy to spot
THREAD_NAME = "burn.data prefetch"


class DataLoader:
    """Batches of ``dataset``: tuples of tensors (one per item field) on ``backend``.

    - ``batch_size`` items per batch; the last one is smaller unless ``drop_last``.
    - ``shuffle``: epoch ``e`` reads the items in the order
      ``np.random.default_rng((seed, e)).permutation(len(dataset))``, the same in every run.
      ``epoch`` is the epoch the next ``iter()`` runs (each adds one); ``set_epoch`` resumes.
    - ``backend``: a backend or a device name; None is ``burn.default_backend()`` at each
      ``iter()``.
    - ``collate(items) -> array or tuple of arrays`` replaces the default, ``stack_items``;
      NumPy arrays, not tensors. A dataset with a ``batch(indices)`` method (``ArrayDataset``
      and subsets of one) gives whole batches at once when ``collate`` is None.
    - dtypes are kept (Python ints are int64, floats float64) where the backend holds them;
      otherwise a field becomes the first of ``FALLBACK_DTYPES`` that the backend holds and,
      for ints, that holds its values.
    - ``prefetch``: how many NumPy batches a background thread builds ahead (0: none, all on
      the caller's thread). An exception there is raised from ``next()`` with its traceback;
      an iterator dropped or ``close()``d early stops and joins its thread.

    Example:
        >>> data = burn.data.ArrayDataset(np.zeros((7, 3), np.float32), np.arange(7))
        >>> loader = burn.data.DataLoader(data, 4, drop_last=True, backend="cpu")
        >>> [(x.shape, y.shape) for x, y in loader]
        [((4, 3), (4,))]
    """

    def __init__(self, dataset: Dataset, batch_size: int, *, shuffle: bool = False,
                 drop_last: bool = False, seed: int = 0, backend: Backend | str | None = None,
                 collate: Callable[[list[Item]], Any] | None = None, prefetch: int = 2) -> None:
        self.dataset = check_dataset(dataset, "DataLoader")
        self.batch_size = _count(batch_size, "batch_size", 1, "DataLoader(dataset, 32)")
        n = len(dataset)
        if n == 0:
            raise BurnError("DataLoader: the dataset is empty; a loader needs at least one item")
        if drop_last and n < self.batch_size:
            raise BurnError(f"DataLoader: drop_last=True with {n} items and batch_size "
                            f"{self.batch_size} gives no batches; use batch_size <= {n} or "
                            f"drop_last=False")
        if collate is not None and not callable(collate):
            raise BurnError(f"DataLoader: collate must be a function of a list of items, got "
                            f"{type(collate).__name__}; write collate=lambda items: ...")
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.seed = check_seed(seed, "DataLoader")
        self.backend = None if backend is None else backend_for(backend)
        self.collate = collate
        self.prefetch = _count(prefetch, "prefetch", 0, "prefetch=2, or prefetch=0 for none")
        self._epoch = 0

    @property
    def epoch(self) -> int:
        """The epoch the next ``iter()`` runs: 0 at first, one more after each."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` run epoch ``epoch`` (its shuffle order), to resume."""
        self._epoch = _count(epoch, "set_epoch: epoch", 0, "loader.set_epoch(5)")

    def __len__(self) -> int:
        """Batches per epoch."""
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def order(self, epoch: int) -> np.ndarray:
        """The item indices epoch ``epoch`` reads, in order (before cutting into batches)."""
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        return np.random.default_rng((self.seed, epoch)).permutation(n)

    def __iter__(self) -> Batches:
        backend = default_backend() if self.backend is None else self.backend
        order = self.order(self._epoch)
        self._epoch += 1
        stop = len(self) * self.batch_size if self.drop_last else len(order)
        chunks = [order[start:start + self.batch_size]
                  for start in range(0, stop, self.batch_size)]
        return Batches(self, chunks, backend)

    def numpy_batch(self, indices: np.ndarray, backend: Backend,
                    stopped: Callable[[], bool] = lambda: False) -> Fields:
        """The items ``indices`` as NumPy arrays, one per field, in dtypes ``backend`` holds:
        what a batch is before its upload (``stopped`` aborts a gather midway)."""
        fast = batch_function(self.dataset) if self.collate is None else None
        if fast is not None:
            fields = fast(indices)
        else:
            items = []
            for index in indices:
                if stopped():
                    raise _Abandoned
                items.append(self.dataset[int(index)])
            fields = stack_items(items, indices) if self.collate is None else self.collate(items)
        return tuple(_for_backend(field, i, backend)
                     for i, field in enumerate(_as_fields(fields)))

    def __repr__(self) -> str:
        backend = self.backend.name if self.backend is not None else "default"
        return (f"DataLoader({self.dataset!r}, batch_size={self.batch_size}, shuffle="
                f"{self.shuffle}, drop_last={self.drop_last}, backend={backend}, epoch="
                f"{self._epoch})")


class Batches:
    """One epoch of a ``DataLoader``: an iterator of tuples of tensors. ``close()`` it (or use
    it in a ``with`` block, or drop it) to stop its prefetch thread before the end."""

    def __init__(self, loader: DataLoader, chunks: list[np.ndarray], backend: Backend) -> None:
        self.backend = backend
        self._prefetcher: _Prefetcher | None = None

        def produce(stopped: Callable[[], bool]) -> Iterator[Fields]:
            return (loader.numpy_batch(chunk, backend, stopped) for chunk in chunks)

        if loader.prefetch:
            self._prefetcher = _Prefetcher(produce, loader.prefetch)
            self._source: Iterator[Fields] = self._prefetcher
        else:
            self._source = produce(lambda: False)

    def __iter__(self) -> Batches:
        return self

    def __next__(self) -> tuple[Tensor, ...]:
        return tuple(from_numpy(field, self.backend) for field in next(self._source))

    def close(self) -> None:
        """Stop building batches; the prefetch thread has exited when this returns."""
        if self._prefetcher is not None:
            self._prefetcher.close()

    def __enter__(self) -> Batches:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # at interpreter exit daemon threads are frozen: joining one would never return
        if self._prefetcher is not None and not sys.is_finalizing():
            self._prefetcher.close()


class _Abandoned(Exception):
    """Raised inside a gather whose iterator was closed: the worker stops at the next item."""


class _Prefetcher:
    """Runs ``produce(stopped)`` on a daemon thread, ``depth`` results ahead, through a
    bounded queue; iterating it returns them in order and re-raises the thread's exception."""

    def __init__(self, produce: Callable[[Callable[[], bool]], Iterator[Fields]],
                 depth: int) -> None:
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._run, args=(produce,), name=THREAD_NAME,
                                        daemon=True)
        self._thread.start()

    def _run(self, produce: Callable[[Callable[[], bool]], Iterator[Fields]]) -> None:
        # the thread holds the prefetcher, never the Batches: dropping those closes this
        try:
            for batch in produce(self._stop.is_set):
                if self._stop.is_set():
                    return
                self._queue.put(("batch", batch))
            message: tuple[str, Any] = ("end", None)
        except BaseException as error:  # noqa: BLE001 - every failure goes to the consumer
            message = ("error", error)
        if not self._stop.is_set():
            self._queue.put(message)

    def __iter__(self) -> _Prefetcher:
        return self

    def __next__(self) -> Fields:
        if self._done:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "batch":
            return value
        self._done = True
        self._thread.join()
        if kind == "error":
            raise value  # its __traceback__ still holds the worker's frames
        raise StopIteration

    def close(self) -> None:
        self._done = True
        self._stop.set()
        # the worker puts at most one more batch after seeing no stop; emptying the queue
        # makes room for it, so its put returns and it sees the stop next
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread is not threading.current_thread():
            self._thread.join()


def stack_items(items: list[Item], indices: np.ndarray | list[int] | None = None) -> Fields:
    """The default collate: field ``f`` of the batch is ``np.stack`` of field ``f`` of every
    item (numbers become 1-D arrays). A tuple item is its fields; anything else is one field.
    ``indices`` (the items' dataset indices) name the culprit when shapes differ.

    Example:
        >>> x, y = burn.data.stack_items([(np.zeros(2), 1), (np.ones(2), 0)])
        >>> x.shape, y.tolist()
        ((2, 2), [1, 0])
    """
    if not items:
        raise BurnError("stack_items: no items to stack")
    names = [int(i) for i in (range(len(items)) if indices is None else indices)]
    rows = [item if isinstance(item, tuple) else (item,) for item in items]
    width = len(rows[0])
    for row, name in zip(rows, names):
        if len(row) != width:
            raise BurnError(f"DataLoader: item {name} has {len(row)} fields but item "
                            f"{names[0]} has {width}; every item must have the same fields")
    fields = []
    for f in range(width):
        values = [np.asarray(row[f]) for row in rows]
        for value, name in zip(values, names):
            if value.shape != values[0].shape:
                raise BurnError(
                    f"DataLoader: item {name} field {f} has shape {value.shape} but item "
                    f"{names[0]} has {values[0].shape}; items stack into a batch only when "
                    f"each field has one shape: pad or crop them in a MappedDataset, or pass "
                    f"collate=")
        fields.append(np.stack(values))
    return tuple(fields)


def _as_fields(batch: Any) -> Fields:
    fields = tuple(batch) if isinstance(batch, (tuple, list)) else (batch,)
    if any(isinstance(f, Tensor) for f in fields):
        raise BurnError("DataLoader: collate must return NumPy arrays, not tensors: the loader "
                        "uploads them itself, on the consumer's thread; return t.numpy()")
    return tuple(np.asarray(f) for f in fields)


def _for_backend(array: np.ndarray, field: int, backend: Backend) -> np.ndarray:
    """``array``, or a copy in the first fallback dtype that ``backend`` holds."""
    try:
        name = dt.from_numpy(array.dtype).name
    except TypeError:  # strings, objects, complex, uint64
        raise BurnError(f"DataLoader: field {field} has dtype {array.dtype}, which no burn "
                        f"tensor holds; turn it into numbers in a MappedDataset (e.g. class "
                        f"names into int labels)") from None
    if name in backend.dtypes:
        return array
    for candidate in FALLBACK_DTYPES.get(name, ()):
        target = dt.from_name(candidate).numpy
        if candidate in backend.dtypes and _holds(target, array):
            return array.astype(target)
    fallbacks = FALLBACK_DTYPES.get(name, ())
    instead = f" nor, for these values, {' or '.join(fallbacks)}" if fallbacks else ""
    raise BurnError(f"DataLoader: field {field} is {name}; the {backend.name} backend holds "
                    f"neither that{instead}; convert the field in a MappedDataset (the "
                    f"backend holds {', '.join(sorted(backend.dtypes))})")


def _holds(target: np.dtype, array: np.ndarray) -> bool:
    if target.kind not in "iu" or array.dtype.kind not in "iu" or array.size == 0:
        return True
    info = np.iinfo(target)
    return info.min <= int(array.min()) and int(array.max()) <= info.max


def _count(value: Any, name: str, least: int, example: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise BurnError(f"DataLoader: {name} must be an int >= {least}, got {value!r}; "
                        f"write {example}")
    return int(value)
