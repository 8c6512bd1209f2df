"""sort, argsort and topk on every backend against the NumPy reference (``np.argsort(kind=
"stable")``): ties, NaN, both directions, any axis, non-contiguous views, short and long rows,
0-size and 1-element tensors, every dtype, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from optest import VIEW_KINDS, check, on, random_tensor, strided, supports

import burn

# int16 and uint8 take int8's path (compared as int32), float16 bfloat16's (compared as
# float32); int32, float32 and float16 are covered by the tests below
DTYPES = ["bool", "int8", "int64", "uint32", "bfloat16", "float64"]


def _with_ties(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Values from a small range, so rows have many equal elements."""
    if dtype == "bool":
        return random_tensor(rng, shape, dtype)
    low = 0 if dtype.startswith("u") else -4
    return rng.integers(low, low + 8, size=shape).astype(random_tensor(rng, 1, dtype).dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_dtypes(backend, ref, rng, dtype):
    if not supports(backend, [dtype]):
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, random_tensor(rng, 4, dtype))
        return
    x = _with_ties(rng, (3, 37), dtype)
    for descending in (False, True):
        check(lambda b, d=descending: on(b, x).sort(descending=d), backend, ref)
    wide = random_tensor(rng, (2, 30), dtype)  # the full range of the dtype
    check(lambda b: on(b, wide).sort(-1, descending=True), backend, ref)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_sort_nan(backend, ref, rng, dtype):
    if not supports(backend, [dtype]):
        pytest.skip(f"{dtype} is checked as an explicit error in test_sort_dtypes")
    x = _with_ties(rng, (4, 23), dtype)
    x[0, [3, 9, 17]] = np.nan
    x[1, :] = np.nan
    x[2, [0, 22]] = [np.inf, -np.inf]
    x[3, [1, 2]] = [-0.0, 0.0]
    for descending in (False, True):
        check(lambda b, d=descending: on(b, x).sort(1, descending=d), backend, ref)
        check(lambda b, d=descending: on(b, x).topk(5, largest=not d), backend, ref)


@pytest.mark.parametrize("kind", VIEW_KINDS)
def test_sort_views(backend, ref, rng, kind):
    x = _with_ties(rng, (3, 5, 20), "float32")
    check(lambda b: strided(b, x, kind).sort(-1), backend, ref)
    check(lambda b: strided(b, x, kind).argsort(1, descending=True), backend, ref)
    check(lambda b: strided(b, x, kind).topk(3, axis=0), backend, ref)


@pytest.mark.parametrize("k", [1, 4, 20])
def test_topk(backend, ref, rng, k):
    x = _with_ties(rng, (6, 20), "int32")
    check(lambda b: on(b, x).topk(k), backend, ref)
    check(lambda b: burn.topk(on(b, x), k, largest=False, sorted=False), backend, ref)


def test_sort_rows_of_many_shapes(backend, ref, rng):
    # rows of one tile (kernels.sort.TILE_ROW, a row of 1024 the longest), a row of 9 to 17
    # segments (kernels.sort.SEGMENTS) merged in 4 or 5 passes, and a 5-axis layout; 64-bit
    # dtypes take the ranking kernels for short rows too (test_sort_dtypes)
    for shape in [(7, 1), (3, 16), (2, 130), (2, 1024)]:
        x = _with_ties(rng, shape, "float32")
        check(lambda b, x=x: on(b, x).sort(descending=True), backend, ref)
    long_row = _with_ties(rng, (1, 2100), "float32")
    long_row[0, ::91] = np.nan
    check(lambda b: on(b, long_row).topk(2000, largest=False), backend, ref)
    x = _with_ties(rng, (2, 3, 2, 3, 5), "int32")
    view = (lambda b: on(b, x).permute(4, 0, 2, 1, 3))  # outer axes that do not merge
    check(lambda b: view(b).argsort(0), backend, ref)


def test_sort_empty_and_single(backend, ref, rng):
    for shape in [(0, 5), (4, 0), (1,), (3, 1)]:
        x = random_tensor(rng, shape, "float32")
        check(lambda b, x=x: on(b, x).sort(), backend, ref)
        check(lambda b, x=x: on(b, x).topk(min(x.shape[-1], 1)), backend, ref)
    scalar = random_tensor(rng, (), "float32")
    check(lambda b: on(b, scalar).sort(), backend, ref)
    check(lambda b: on(b, np.zeros((3, 4), "float32")).topk(0), backend, ref)


def test_index_dtype_and_result(backend):
    values, indices = burn.tensor([[2.0, 1.0, 2.0]], backend=backend).sort()
    assert indices.dtype == burn.int64
    assert values.tolist() == [[1.0, 2.0, 2.0]] and indices.tolist() == [[1, 0, 2]]


def test_bad_arguments(backend):
    x = on(backend, np.zeros((3, 4), "float32"))
    with pytest.raises(burn.BurnError, match=r"topk: k=5 is out of range for axis 1 of size 4 "
                                             r"\(shape \(3, 4\)\)"):
        x.topk(5)
    with pytest.raises(burn.BurnError, match=r"topk: k=-1 is out of range"):
        x.topk(-1, axis=0)
    with pytest.raises(burn.BurnError, match=r"sort: axis 2 is out of range for a tensor of 2 "
                                             r"dimensions"):
        x.sort(2)
    with pytest.raises(burn.BurnError, match=r"topk: k must be an int"):
        x.topk(1.5)
