"""burn.data: datasets, splits and the DataLoader on every backend present, against NumPy:
every item once per epoch, shuffles fixed by (seed, epoch), batches equal to NumPy's rows in
their dtypes, prefetching that changes nothing but timing, stops cleanly and reports errors,
and every user error named."""

from __future__ import annotations

import gc
import threading
import time
import traceback

import numpy as np
import pytest

import burn
from burn.data import ArrayDataset, DataLoader, MappedDataset, Subset, random_split, stack_items
from burn.data.loader import THREAD_NAME


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME and t.is_alive()]


@pytest.fixture(autouse=True)
def no_thread_left():
    """Every test ends with its prefetch threads gone, whatever it did with its iterators."""
    yield
    if prefetch_threads():
        # an iterator in a reference cycle stops its thread once collected; collected only
        # then, since a collection costs seconds in a process holding hundreds of kernels
        gc.collect()
    assert prefetch_threads() == []


class Items:
    """A dataset read item by item (no ``batch``): the loader's general path."""

    def __init__(self, *arrays):
        self.arrays = arrays

    def __len__(self):
        return len(self.arrays[0])

    def __getitem__(self, index):
        return tuple(a[index] for a in self.arrays)


class Broken(Items):
    """Item ``bad`` raises, as a corrupt file would."""

    def __init__(self, n, bad):
        super().__init__(np.arange(n))
        self.bad = bad

    def __getitem__(self, index):
        if index == self.bad:
            raise RuntimeError(f"broken item {index}")
        return super().__getitem__(index)


class Slow(Items):
    """Items that take ``delay`` seconds each, to catch the worker in the middle of a batch."""

    def __init__(self, n, delay):
        super().__init__(np.arange(n))
        self.delay = delay

    def __getitem__(self, index):
        time.sleep(self.delay)
        return super().__getitem__(index)


def _data(n=10, rng=None):
    rng = rng or np.random.default_rng(0)
    return rng.normal(size=(n, 2, 3)).astype(np.float32), np.arange(n, dtype=np.int64)


def _numpy_batches(loader):
    return [tuple(t.numpy() for t in batch) for batch in loader]


# ---- coverage, order, epochs ----

@pytest.mark.parametrize("path", ["fast", "per-item"])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_item_once_per_epoch(backend, rng, shuffle, drop_last, path):
    x, y = _data(10, rng)
    dataset = ArrayDataset(x, y) if path == "fast" else Items(x, y)
    loader = DataLoader(dataset, 3, shuffle=shuffle, drop_last=drop_last, backend=backend)
    assert len(loader) == (3 if drop_last else 4)
    for _ in range(2):
        batches = list(loader)
        assert len(batches) == len(loader)
        assert all(t.backend == backend for batch in batches for t in batch)
        assert [len(b[1].numpy()) for b in batches] == ([3, 3, 3] if drop_last else [3, 3, 3, 1])
        seen = np.concatenate([b[1].numpy() for b in batches])
        assert len(set(seen.tolist())) == len(seen) == (9 if drop_last else 10)
        if not shuffle:
            np.testing.assert_array_equal(seen, np.arange(len(seen)))
        for xb, yb in batches:  # each x row is the one of its label
            np.testing.assert_array_equal(xb.numpy(), x[yb.numpy()])


def test_shuffle_is_fixed_by_seed_and_epoch(backend):
    def orders(seed, epochs=3):
        loader = DataLoader(ArrayDataset(np.arange(20)), 20, shuffle=True, seed=seed,
                            backend=backend)
        return [next(iter(loader))[0].numpy() for _ in range(epochs)]

    first, again, other = orders(7), orders(7), orders(8)
    for epoch, order in enumerate(first):
        np.testing.assert_array_equal(order, again[epoch])
        np.testing.assert_array_equal(order, np.random.default_rng((7, epoch)).permutation(20))
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])
    assert not np.array_equal(first[0], other[0])


def test_set_epoch_resumes(backend):
    loader = DataLoader(ArrayDataset(np.arange(12)), 5, shuffle=True, seed=3, backend=backend)
    assert loader.epoch == 0
    epochs = [np.concatenate([b[0].numpy() for b in loader]) for _ in range(3)]
    assert loader.epoch == 3
    loader.set_epoch(1)
    assert loader.epoch == 1
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in loader]), epochs[1])
    np.testing.assert_array_equal(loader.order(2), epochs[2])
    assert loader.epoch == 2
    with pytest.raises(burn.BurnError, match=r"set_epoch: epoch must be an int >= 0, got -1"):
        loader.set_epoch(-1)


# ---- values and dtypes ----

def test_batches_equal_numpy_rows_in_their_dtypes(backend, rng):
    fields = (rng.normal(size=(7, 2, 3)).astype(np.float32), rng.normal(size=7),
              rng.integers(-5, 5, 7), rng.integers(0, 9, (7, 4)).astype(np.int32),
              rng.random(7) > 0.5, rng.integers(0, 255, (7, 2)).astype(np.uint8))
    for dataset in (ArrayDataset(*fields), Items(*fields)):
        loader = DataLoader(dataset, 4, shuffle=True, seed=1, backend=backend)
        order = loader.order(0)
        for b, batch in enumerate(loader):
            rows = order[4 * b:4 * b + 4]
            assert len(batch) == len(fields)
            for tensor, field in zip(batch, fields):
                expected = field[rows]
                name = "bool" if field.dtype == np.bool_ else field.dtype.name
                if name not in backend.dtypes:  # e.g. uint8 on wgpu: the first fallback held
                    name = next(n for n in burn.data.FALLBACK_DTYPES[name]
                                if n in backend.dtypes)
                assert tensor.dtype.name == name and tensor.shape == expected.shape
                np.testing.assert_array_equal(tensor.numpy(), expected.astype(name))


def test_python_numbers_become_1d_int64_and_float64(backend):
    items = [(1.5, 2, True, [1.0, 2.0]), (2.5, 3, False, [3.0, 4.0])]
    x, y, flag, pair = next(iter(DataLoader(items, 2, backend=backend, prefetch=0)))
    assert (x.dtype.name, y.dtype.name, flag.dtype.name, pair.dtype.name) == (
        "float64", "int64", "bool", "float64")
    assert x.tolist() == [1.5, 2.5] and y.tolist() == [2, 3] and flag.tolist() == [True, False]
    assert pair.shape == (2, 2)


def test_fields_narrow_on_a_backend_without_their_dtype():
    narrow = burn.NumPy()
    narrow.dtypes = frozenset({"float32", "int32", "bool"})
    data = ArrayDataset(np.arange(4.0), np.arange(4), np.arange(4, dtype=np.uint8),
                        np.ones(4, bool))
    batch = next(iter(DataLoader(data, 4, backend=narrow)))
    assert [t.dtype.name for t in batch] == ["float32", "int32", "int32", "bool"]
    assert batch[1].tolist() == [0, 1, 2, 3]
    huge = ArrayDataset(np.array([0, 2**40]))
    with pytest.raises(burn.BurnError, match=r"field 0 is int64; the numpy backend holds "
                                             r"neither that nor, for these values, int32"):
        next(iter(DataLoader(huge, 2, backend=narrow, prefetch=0)))


def test_default_backend_at_iteration_and_device_names(backend):
    loader = DataLoader(ArrayDataset(np.arange(3)), 2)
    previous = burn.default_backend()
    burn.set_default_backend(backend)
    try:
        assert next(iter(loader))[0].backend == backend
    finally:
        burn.set_default_backend(previous)
    assert next(iter(DataLoader(ArrayDataset(np.arange(3)), 2, backend="numpy")))[0].backend \
        == burn.NumPy()
    wrapped = burn.Autodiff(backend)
    assert next(iter(DataLoader(ArrayDataset(np.arange(3)), 2, backend=wrapped)))[0].backend \
        == wrapped


# ---- datasets ----

def test_mapped_dataset(backend):
    x, y = _data(5)
    mapped = MappedDataset(ArrayDataset(x, y), lambda a, b: (a * 2, b + 1))
    assert len(mapped) == 5
    np.testing.assert_array_equal(mapped[-1][0], x[4] * 2)
    xb, yb = next(iter(DataLoader(mapped, 5, backend=backend)))
    np.testing.assert_array_equal(xb.numpy(), x * 2)
    np.testing.assert_array_equal(yb.numpy(), y + 1)
    single = MappedDataset(ArrayDataset(x, y), lambda a, b: a.sum())  # a bare value: 1 field
    (total,) = next(iter(DataLoader(single, 5, backend=backend)))
    np.testing.assert_allclose(total.numpy(), x.sum(axis=(1, 2)), rtol=1e-6)
    with pytest.raises(burn.BurnError, match=r"MappedDataset: fn must be callable, got int"):
        MappedDataset(ArrayDataset(x), 3)


def test_subset(backend):
    x, y = _data(8)
    data = ArrayDataset(x, y)
    part = Subset(data, [6, 1, 3])
    assert len(part) == 3 and part[0][1] == 6 and part[-1][1] == 3
    _, yb = next(iter(DataLoader(part, 3, backend=backend)))
    assert yb.tolist() == [6, 1, 3]
    nested = Subset(part, np.array([2, 0]))
    assert burn.data.batch_function(nested) is not None
    assert [a.tolist() for a in nested.batch(np.array([1]))][1] == [6]
    mapped = Subset(MappedDataset(data, lambda a, b: (a, b * 10)), [7, 0])
    assert burn.data.batch_function(mapped) is None
    assert next(iter(DataLoader(mapped, 2, backend=backend)))[1].tolist() == [70, 0]
    with pytest.raises(burn.BurnError, match=r"Subset.batch: MappedDataset has no batch\(\)"):
        mapped.batch(np.array([0]))
    with pytest.raises(burn.BurnError, match=r"Subset: index 8 is out of range for a dataset "
                                             r"of 8 items \(indices must be in 0..7\)"):
        Subset(data, [0, 8])
    with pytest.raises(burn.BurnError, match=r"Subset: indices must be a 1-D sequence of ints, "
                                             r"got float64 of shape \(2,\)"):
        Subset(data, [0.0, 1.0])
    with pytest.raises(IndexError, match=r"Subset index 3 is out of range for 3 items"):
        part[3]


def test_the_loader_uses_a_fast_batch_when_there_is_one(backend):
    class NoItems(ArrayDataset):
        def __getitem__(self, index):
            raise AssertionError("read item by item")

    data = NoItems(np.arange(6), np.arange(6) * 2)
    for dataset in (data, Subset(data, [5, 4, 3])):
        batches = _numpy_batches(DataLoader(dataset, 2, shuffle=True, backend=backend))
        assert sum(len(b[0]) for b in batches) == len(dataset)
    collated = DataLoader(data, 3, backend=backend, collate=lambda items: items[0])
    with pytest.raises(AssertionError, match="read item by item"):
        next(iter(collated))  # a collate is given items: the fast path is not used


def test_array_dataset():
    x, y = _data(4)
    data = ArrayDataset(x, y.tolist())
    assert len(data) == 4 and data[2][1] == 2 and data[-4][1] == 0
    assert data.arrays[0] is x  # held, not copied
    np.testing.assert_array_equal(ArrayDataset(burn.tensor([1, 2], backend="numpy"))[1][0], 2)
    assert repr(data) == "ArrayDataset(4 items of (float32[2, 3], int64[]))"
    assert len(list(data)) == 4  # IndexError ends Python's iteration
    with pytest.raises(IndexError, match=r"ArrayDataset index 4 is out of range for 4 items"):
        data[4]
    with pytest.raises(TypeError, match=r"ArrayDataset indices must be integers, got str"):
        data["a"]
    with pytest.raises(burn.BurnError, match=r"give at least one array, e.g. ArrayDataset\(x, "):
        ArrayDataset()
    with pytest.raises(burn.BurnError, match=r"the arrays' first dimensions \(the item counts\) "
                                             r"differ; the shapes are \(4, 2, 3\), \(3,\)"):
        ArrayDataset(x, np.arange(3))
    with pytest.raises(burn.BurnError, match=r"arrays must have a first \(item\) dimension; the "
                                             r"shapes are \(4, 2, 3\), \(\)"):
        ArrayDataset(x, np.float32(1))
    with pytest.raises(burn.BurnError, match=r"ArrayDataset: argument 1 is not an array"):
        ArrayDataset(x, [[1, 2], [3]])


def test_random_split():
    data = ArrayDataset(np.arange(10))
    parts = random_split(data, [6, 0, 4], seed=5)
    assert [len(p) for p in parts] == [6, 0, 4]
    indices = np.concatenate([p.indices for p in parts])
    np.testing.assert_array_equal(np.sort(indices), np.arange(10))
    np.testing.assert_array_equal(indices, np.random.default_rng(5).permutation(10))
    again = random_split(data, [6, 0, 4], seed=5)
    assert all(np.array_equal(a.indices, b.indices) for a, b in zip(parts, again))
    assert not np.array_equal(random_split(data, [6, 0, 4], seed=6)[0].indices, parts[0].indices)
    assert [len(p) for p in random_split(data, [0.5, 0.25, 0.25])] == [6, 2, 2]  # 5+1, 2, 2
    assert [len(p) for p in random_split(data, [0.7, 0.3])] == [7, 3]
    np.testing.assert_array_equal(random_split(data, [1.0, 0.0])[0].indices,  # seed 0
                                  np.random.default_rng(0).permutation(10))
    for bad, message in [
        ([6, 3], r"lengths \[6, 3\] must be non-negative and sum to the dataset's 10 items "
                 r"\(they sum to 9\)"),
        ([11, -1], r"lengths \[11, -1\] must be non-negative"),
        ([0.5, 0.4], r"fractions \[0.5, 0.4\] must be in \[0, 1\] and sum to 1 \(they sum to "
                     r"0.9\); or give lengths"),
        ([1.5, -0.5], r"fractions \[1.5, -0.5\] must be in \[0, 1\]"),
        ([], r"give lengths or fractions, e.g. \[0.8, 0.2\]"),
        (["a"], r"lengths or fractions must be numbers, got \['a'\]"),
    ]:
        with pytest.raises(burn.BurnError, match=r"random_split: " + message):
            random_split(data, bad)
    with pytest.raises(burn.BurnError, match=r"random_split: seed must be a non-negative int, "
                                             r"got -1"):
        random_split(data, [10], seed=-1)
    with pytest.raises(burn.BurnError, match=r"random_split: expected a dataset"):
        random_split(np.arange(3), [3])


# ---- collation ----

def test_custom_collate(backend):
    x, y = _data(5)

    def collate(items):
        return np.stack([a for a, _ in items]) * 2, [b for _, b in items]

    xb, yb = next(iter(DataLoader(ArrayDataset(x, y), 5, backend=backend, collate=collate)))
    np.testing.assert_array_equal(xb.numpy(), x * 2)
    assert yb.tolist() == y.tolist()
    tensors = DataLoader(ArrayDataset(x), 2, backend=backend, prefetch=0,
                         collate=lambda items: burn.zeros(2, backend="numpy"))
    with pytest.raises(burn.BurnError, match=r"collate must return NumPy arrays, not tensors"):
        next(iter(tensors))


def test_items_that_do_not_stack_are_named(backend):
    ragged = [(np.zeros(3), 0), (np.zeros(3), 1), (np.zeros(4), 2)]
    with pytest.raises(burn.BurnError, match=r"item 2 field 0 has shape \(4,\) but item 0 has "
                                             r"\(3,\); items stack into a batch only when"):
        next(iter(DataLoader(ragged, 3, backend=backend)))
    uneven = [(np.zeros(3), 0), (np.zeros(3),)]
    with pytest.raises(burn.BurnError, match=r"item 1 has 1 fields but item 0 has 2"):
        next(iter(DataLoader(uneven, 2, backend=backend)))
    words = [(1.0, "cat"), (2.0, "dog")]
    with pytest.raises(burn.BurnError, match=r"field 1 has dtype <U3, which no burn tensor "
                                             r"holds; turn it into numbers in a MappedDataset"):
        next(iter(DataLoader(words, 2, backend=backend)))
    with pytest.raises(burn.BurnError, match=r"stack_items: no items to stack"):
        stack_items([])
    x, y = stack_items([(np.zeros(2), 1), (np.ones(2), 0)], indices=[4, 9])
    assert x.shape == (2, 2) and y.tolist() == [1, 0]


# ---- prefetching ----

@pytest.mark.parametrize("path", ["fast", "per-item"])
def test_prefetch_changes_nothing_but_timing(backend, rng, path):
    x, y = _data(11, rng)
    dataset = ArrayDataset(x, y) if path == "fast" else Items(x, y)
    runs = [_numpy_batches(DataLoader(dataset, 3, shuffle=True, seed=4, backend=backend,
                                      prefetch=p)) for p in (0, 1, 3)]
    for batches in runs[1:]:
        assert len(batches) == len(runs[0]) == 4
        for got, want in zip(batches, runs[0]):
            for a, b in zip(got, want):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_dataset_error_reaches_the_consumer_with_its_traceback(backend, prefetch):
    batches = iter(DataLoader(Broken(10, bad=7), 3, backend=backend, prefetch=prefetch))
    assert next(batches)[0].tolist() == [0, 1, 2] and next(batches)[0].tolist() == [3, 4, 5]
    with pytest.raises(RuntimeError, match=r"broken item 7") as info:
        next(batches)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert any(f.name == "__getitem__" and f.filename == __file__ for f in frames)
    with pytest.raises(StopIteration):
        next(batches)
    assert prefetch_threads() == []


def test_an_early_break_stops_the_thread(backend):
    loader = DataLoader(ArrayDataset(np.arange(200)), 2, backend=backend, prefetch=2)
    for _ in loader:
        break
    assert prefetch_threads() == []
    batches = iter(loader)  # dropped before its first batch, its queue full
    deadline = time.monotonic() + 10
    while batches._prefetcher._queue.qsize() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(prefetch_threads()) == 1
    del batches
    assert prefetch_threads() == []
    with iter(loader) as batches:
        next(batches)
    assert prefetch_threads() == []


def test_close_stops_a_gather_midway():
    batches = iter(DataLoader(Slow(10_000, 0.001), 5_000, backend="numpy", prefetch=1))
    time.sleep(0.05)  # the worker is inside the first batch's 5000 item reads
    start = time.monotonic()
    batches.close()
    assert time.monotonic() - start < 2 and prefetch_threads() == []
    with pytest.raises(StopIteration):
        next(batches)


# ---- user errors ----

def test_loader_input_errors():
    data = ArrayDataset(np.arange(5))
    for bad in (0, -1, 2.5, True):
        with pytest.raises(burn.BurnError, match=rf"DataLoader: batch_size must be an int >= 1, "
                                                 rf"got {bad!r}; write DataLoader\(dataset, 32\)"):
            DataLoader(data, bad)
    with pytest.raises(burn.BurnError, match=r"DataLoader: the dataset is empty"):
        DataLoader(ArrayDataset(np.zeros((0, 3))), 2)
    with pytest.raises(burn.BurnError, match=r"drop_last=True with 5 items and batch_size 8 "
                                             r"gives no batches; use batch_size <= 5"):
        DataLoader(data, 8, drop_last=True)
    for array in (np.arange(5), burn.tensor([1, 2], backend="numpy")):
        with pytest.raises(burn.BurnError, match=r"DataLoader: expected a dataset, got an array;"
                                                 r" wrap arrays as burn.data.ArrayDataset\(x, y"):
            DataLoader(array, 2)
    for other, name in ((3, "int"), ({"a": 1}, "dict"), ((i for i in range(3)), "generator")):
        with pytest.raises(burn.BurnError, match=rf"DataLoader: expected a dataset \(an object "
                                                 rf"with __len__ and __getitem__\), got {name}"):
            DataLoader(other, 2)
    with pytest.raises(burn.BurnError, match=r"collate must be a function of a list of items, "
                                             r"got str"):
        DataLoader(data, 2, collate="stack")
    with pytest.raises(burn.BurnError, match=r"prefetch must be an int >= 0, got -1; write "
                                             r"prefetch=2, or prefetch=0 for none"):
        DataLoader(data, 2, prefetch=-1)
    with pytest.raises(burn.BurnError, match=r"DataLoader: seed must be a non-negative int, "
                                             r"got 1.5"):
        DataLoader(data, 2, seed=1.5)
    with pytest.raises(burn.BurnError, match=r"unknown device 'tpu'"):
        DataLoader(data, 2, backend="tpu")
    assert repr(DataLoader(data, 2)) == ("DataLoader(ArrayDataset(5 items of (int64[])), "
                                         "batch_size=2, shuffle=False, drop_last=False, "
                                         "backend=default, epoch=0)")
