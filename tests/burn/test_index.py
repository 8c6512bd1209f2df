"""Indexing and joining ops on every backend against the NumPy reference: gather, scatter_add,
index_select (and ``x[index]``), embedding, masked_fill, cat, stack, pad, repeat, tril/triu,
one_hot; non-contiguous views, 0-size and 1-element tensors, the dtype matrix, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from optest import VIEW_KINDS, check, on, random_tensor, strided, supports

import burn

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "bfloat16",
          "float32", "float64"]


def _index(rng: np.random.Generator, shape, high: int, dtype: str = "int64") -> np.ndarray:
    return rng.integers(0, high, size=shape).astype(dtype)


# ---------------------------------------------------------------- gather


@pytest.mark.parametrize("kind", VIEW_KINDS)
def test_gather_views(backend, ref, rng, kind):
    x = random_tensor(rng, (6, 5), "float32")
    idx = _index(rng, (4, 5), 6)
    check(lambda b: burn.gather(strided(b, x, kind), 0, on(b, idx)), backend, ref)
    idx_t = np.ascontiguousarray(_index(rng, (5, 4), 5).T)  # (4, 5), stored transposed
    check(lambda b: strided(b, x, kind).gather(1, on(b, idx_t.T).T), backend, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_dtypes(backend, ref, rng, dtype):
    if not supports(backend, [dtype]):
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, random_tensor(rng, 4, dtype))
        return
    x = random_tensor(rng, (3, 7, 4), dtype)
    idx = _index(rng, (2, 5, 4), 7, "int32")  # smaller than x off the gathered axis
    check(lambda b: burn.gather(on(b, x), -2, on(b, idx)), backend, ref)


# ---------------------------------------------------------------- index_select, embedding


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_index_select(backend, ref, rng, index_dtype):
    x = random_tensor(rng, (5, 6, 3), "float32")
    idx = _index(rng, 9, 6, index_dtype)
    check(lambda b: on(b, x).index_select(1, on(b, idx)), backend, ref)
    check(lambda b: on(b, x).index_select(0, on(b, idx[:2] % 5)), backend, ref)
    check(lambda b: strided(b, x, "transposed")[on(b, idx % 5)], backend, ref)
    # an n-d index selects as NumPy's take; a 0-d one drops the axis
    grid = _index(rng, (2, 4), 3, index_dtype)
    check(lambda b: on(b, x).index_select(-1, on(b, grid)), backend, ref)
    check(lambda b: on(b, x).index_select(1, on(b, np.array(4, index_dtype))), backend, ref)


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_negative_indices_count_from_the_end_in_brackets(backend, ref, rng, index_dtype):
    """``x[index]`` takes negative indices from the end (torch's and NumPy's indexing), on
    uploaded indices and on ones computed on the device, and its gradient goes back there."""
    x = random_tensor(rng, (5, 3), "float32")
    idx = np.array([[-1, 0], [2, -5]], index_dtype)
    check(lambda b: strided(b, x, "transposed")[on(b, idx)], backend, ref)
    np.testing.assert_array_equal(on(backend, x)[on(backend, idx)].numpy(), x[idx])
    computed = on(backend, np.array([1, 2], index_dtype)) - 3  # [-2, -1], no host bounds
    np.testing.assert_array_equal(on(backend, x)[computed].numpy(), x[[-2, -1]])
    ad = burn.Autodiff(backend)
    leaf = burn.from_numpy(x, backend=ad).require_grad()
    grad = leaf[burn.from_numpy(idx, backend=ad)].sum().backward()[leaf].numpy()
    want = np.zeros_like(x)
    np.add.at(want, idx, 1.0)
    np.testing.assert_array_equal(grad, want)


@pytest.mark.parametrize("kind", ["contiguous", "transposed"])
def test_embedding(backend, ref, rng, kind):
    weight = random_tensor(rng, (10, 8), "float32")
    idx = _index(rng, (3, 4), 10)
    check(lambda b: burn.embedding(strided(b, weight, kind), on(b, idx)), backend, ref)
    check(lambda b: burn.embedding(on(b, weight), on(b, idx)[:, ::2]), backend, ref)


# ---------------------------------------------------------------- scatter_add


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_add(backend, ref, rng, axis):
    x = random_tensor(rng, (4, 6, 5), "float32")
    shape = [3, 5, 4]  # smaller than x off the axis ...
    shape[axis] = 7  # ... and longer along it: many repeated targets
    idx = _index(rng, shape, x.shape[axis])
    src = random_tensor(rng, [n + 1 for n in shape], "float32")  # larger than the index
    check(lambda b: burn.scatter_add(on(b, x), axis, on(b, idx), on(b, src)), backend, ref)


def test_scatter_add_views(backend, ref, rng):
    x = random_tensor(rng, (6, 5), "float32")
    src = random_tensor(rng, (8, 5), "float32")
    idx = _index(rng, (8, 5), 6, "int32")
    check(lambda b: strided(b, x, "transposed").scatter_add(0, strided(b, idx, "flipped"),
                                                            strided(b, src, "sliced")),
          backend, ref)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64"])  # int16, uint32: as int8, int32
def test_scatter_add_dtypes(backend, ref, rng, dtype):
    if not supports(backend, [dtype]):
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, random_tensor(rng, 4, dtype))
        return
    x = random_tensor(rng, (5, 9), dtype)
    src = random_tensor(rng, (12, 9), dtype)
    idx = _index(rng, (12, 9), 5)
    if dtype == "float64" and backend.device == "wgpu":  # no float64 atomics in WGSL
        with pytest.raises(burn.BurnError, match=r"scatter_add: .* no atomic add for float64"):
            burn.scatter_add(on(backend, x), 0, on(backend, idx), on(backend, src))
        return
    # 16-bit floats accumulate in float32 and round once: the dtype's own tolerance holds
    check(lambda b: burn.scatter_add(on(b, x), 0, on(b, idx), on(b, src)), backend, ref)


# ---------------------------------------------------------------- masked_fill


def test_masked_fill(backend, ref, rng):
    x = random_tensor(rng, (5, 4), "float32")
    mask = rng.random((5, 1)) < 0.5
    check(lambda b: on(b, x).masked_fill(on(b, mask), -1.5), backend, ref)
    every_third = (np.arange(x.size).reshape(x.shape) % 3) == 0
    check(lambda b: strided(b, x, "flipped").masked_fill(on(b, every_third),
                                                         burn.tensor(7.0, backend=b)),
          backend, ref)
    xi = random_tensor(rng, (3, 4), "int32")
    check(lambda b: burn.masked_fill(on(b, xi), on(b, np.array([True, False, True, False])), 2),
          backend, ref)


# ---------------------------------------------------------------- cat, stack, pad, repeat


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cat(backend, ref, rng, axis):
    shapes = [[3, 4, 2], [3, 4, 2], [3, 4, 2]]
    for i, size in enumerate((1, 5, 0)):
        shapes[i][axis] = size
    xs = [random_tensor(rng, s, "float32") for s in shapes]
    check(lambda b: burn.cat([on(b, xs[0]), strided(b, xs[1], "transposed"), on(b, xs[2])],
                             axis), backend, ref)


def test_cat_promotes(backend, ref, rng):
    a = random_tensor(rng, (2, 3), "int32")
    c = random_tensor(rng, (4, 3), "float32")
    check(lambda b: burn.cat([on(b, a), strided(b, c, "sliced")]), backend, ref)


@pytest.mark.parametrize("axis", [0, -1])
def test_stack(backend, ref, rng, axis):
    xs = [random_tensor(rng, (3, 4), "float32") for _ in range(3)]
    check(lambda b: burn.stack([on(b, xs[0]), strided(b, xs[1], "flipped"), on(b, xs[2])],
                               axis), backend, ref)


@pytest.mark.parametrize("pads", [(1, 2), (0, 1, 3, 0), (2, 0, 0, 0, 1, 1)])
def test_pad(backend, ref, rng, pads):
    x = random_tensor(rng, (2, 3, 4), "float32")
    check(lambda b: burn.pad(strided(b, x, "transposed"), pads, value=-2.5), backend, ref)


NUMPY_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", sorted(NUMPY_PAD_MODES))
def test_pad_modes(backend, rng, mode):
    """reflect, replicate and circular against NumPy's reflect, edge and wrap, on a view,
    with pads up to the longest each mode takes (the axis less one for reflect, the axis for
    circular, any for replicate)."""
    x = random_tensor(rng, (3, 4, 5), "float32")
    pads = ({"reflect": 4, "circular": 5, "replicate": 9}[mode], 1, 0, 2, 2, 0)
    got = burn.pad(strided(backend, x, "transposed"), pads, mode=mode)
    want = np.pad(x, [(2, 0), (0, 2), (pads[0], 1)], mode=NUMPY_PAD_MODES[mode])
    np.testing.assert_array_equal(got.numpy(), want)
    ints = random_tensor(rng, (6,), "int32")
    np.testing.assert_array_equal(burn.pad(on(backend, ints), (3, 2), mode=mode).numpy(),
                                  np.pad(ints, (3, 2), mode=NUMPY_PAD_MODES[mode]))


#: torch's F.pad of arange(5) (torch 2.13, written out): a negative count crops first, then
#: the others pad what is left
CROPS = {("constant", (-1, 2)): [1, 2, 3, 4, 0, 0], ("constant", (-3, 2)): [3, 4, 0, 0],
         ("reflect", (-1, 2)): [1, 2, 3, 4, 3, 2], ("reflect", (2, -1)): [2, 1, 0, 1, 2, 3],
         ("replicate", (2, -1)): [0, 0, 0, 1, 2, 3], ("replicate", (-2, -1)): [2, 3],
         ("circular", (-1, 2)): [1, 2, 3, 4, 1, 2], ("circular", (2, -1)): [2, 3, 0, 1, 2, 3]}


@pytest.mark.parametrize("mode, pads", sorted(CROPS), ids=str)
def test_negative_pads_crop(backend, mode, pads):
    x = on(backend, np.arange(5, dtype=np.float32))
    assert burn.pad(x, pads, mode=mode).tolist() == CROPS[mode, pads]


def test_cropping_on_views_with_gradients(backend, ref, rng):
    x = random_tensor(rng, (3, 5, 4), "float32")
    check(lambda b: burn.pad(strided(b, x, "transposed"), (1, -2, -1, 0, 0, -3), value=7.0),
          backend, ref)
    ad = burn.Autodiff(backend)
    leaf = burn.from_numpy(x, backend=ad).require_grad()
    grad = burn.pad(leaf, (-1, 2, 0, -4)).sum().backward()[leaf].numpy()
    want = np.zeros_like(x)
    want[:, :1, 1:] = 1.0  # the elements the crop keeps
    np.testing.assert_array_equal(grad, want)


def test_pad_int_and_bool(backend, ref, rng):
    xi = random_tensor(rng, (3, 4), "int32")
    check(lambda b: burn.pad(on(b, xi), (1, 1), value=9), backend, ref)
    xb = random_tensor(rng, (3, 4), "bool")
    check(lambda b: burn.pad(on(b, xb), (0, 0, 2, 1), value=True), backend, ref)


@pytest.mark.parametrize("repeats", [(2, 3), (2, 1, 3), (1, 0)])
def test_repeat(backend, ref, rng, repeats):
    x = random_tensor(rng, (3, 4), "float32")
    check(lambda b: strided(b, x, "transposed").repeat(*repeats), backend, ref)


# ---------------------------------------------------------------- tril, triu, one_hot


@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_tril_triu(backend, ref, rng, diagonal):
    x = random_tensor(rng, (2, 4, 5), "float32")
    check(lambda b: on(b, x).tril(diagonal), backend, ref)
    check(lambda b: strided(b, x, "transposed").triu(diagonal), backend, ref)


def test_tril_int(backend, ref, rng):
    x = random_tensor(rng, (6, 3), "int32")
    check(lambda b: burn.tril(on(b, x)), backend, ref)


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_one_hot(backend, ref, rng, index_dtype):
    idx = _index(rng, (3, 4), 6, index_dtype)
    check(lambda b: burn.one_hot(on(b, idx), 7), backend, ref)
    check(lambda b: burn.one_hot(strided(b, idx, "transposed")), backend, ref)
    result = burn.one_hot(on(backend, idx), 7)
    assert result.dtype == burn.int64


# ---------------------------------------------------------------- edge sizes


def test_empty_and_single(backend, ref, rng):
    x = random_tensor(rng, (3, 4), "float32")
    empty = np.zeros((0, 4), "int64")
    check(lambda b: burn.gather(on(b, x), 0, on(b, empty)), backend, ref)
    check(lambda b: on(b, x).index_select(1, on(b, np.zeros(0, "int64"))), backend, ref)
    check(lambda b: burn.scatter_add(on(b, x), 0, on(b, empty), on(b, x)), backend, ref)
    check(lambda b: burn.one_hot(on(b, empty), 3), backend, ref)
    zero = np.zeros((0, 4), "float32")
    check(lambda b: burn.cat([on(b, zero), on(b, zero)]), backend, ref)
    check(lambda b: burn.pad(on(b, zero), (1, 1)), backend, ref)
    check(lambda b: on(b, zero).tril(), backend, ref)
    one = random_tensor(rng, (1, 1), "float32")
    check(lambda b: burn.gather(on(b, one), 1, on(b, np.zeros((1, 1), "int32"))), backend, ref)
    check(lambda b: burn.pad(on(b, one), (0, 1)).triu(), backend, ref)
    check(lambda b: on(b, one).repeat(1, 3), backend, ref)


# ---------------------------------------------------------------- bad input


def test_out_of_range_index(backend):
    x = on(backend, np.zeros((3, 4), "float32"))
    bad = on(backend, np.array([[0, 5]], "int64"))
    with pytest.raises(burn.BurnError, match=r"gather: index values span \[0, 5\] but axis 1 of "
                                             r"shape \(3, 4\) has size 4"):
        burn.gather(x, 1, bad)
    negative = on(backend, np.array([1, -1], "int32"))
    with pytest.raises(burn.BurnError, match=r"index_select: index values span \[-1, 1\] .*"
                                             r"negative indices are not accepted"):
        x.index_select(0, negative)
    with pytest.raises(burn.BurnError, match=r"indexing: index values span \[-4, 1\] but axis 0 "
                                             r"of shape \(3, 4\) has size 3; valid indices: "
                                             r"\[-3, 2\] \(negative ones count from the end\)"):
        x[on(backend, np.array([1, -4], "int64"))]
    with pytest.raises(burn.BurnError, match=r"embedding: index values span \[0, 5\] but axis 0 "
                                             r"of shape \(3, 4\)"):
        burn.embedding(x, bad)
    with pytest.raises(burn.BurnError, match=r"scatter_add: index values span \[0, 5\]"):
        x.scatter_add(1, bad, x)
    with pytest.raises(burn.BurnError, match=r"one_hot: index values span \[0, 5\]"):
        burn.one_hot(bad, 4)
    big = on(backend, np.arange(3000, dtype="int32").reshape(3, 1000))  # several partial cubes
    with pytest.raises(burn.BurnError, match=r"index values span \[0, 2999\]"):
        burn.one_hot(big, 2999)


def test_uploaded_indices_are_checked_without_a_device_read(backend, monkeypatch):
    """Indices uploaded from NumPy carry their bounds (and their copies, and an arange, its
    ends): in range, they are not read back (on a GPU that read waits for all the work
    queued, and a captured step cannot read at all); indices computed on the device, and
    bounds that do not fit, are read and checked as before."""
    x = on(backend, np.arange(12, dtype="float32").reshape(3, 4))
    labels = burn.tensor(np.array([[3, 0], [1, 2], [0, 0]]), backend=backend)
    reads = []
    original = type(backend).index_range

    def counted(self, view):
        reads.append(view.shape)
        return original(self, view)
    monkeypatch.setattr(type(backend), "index_range", counted)
    assert burn.gather(x, 1, labels).tolist() == [[3, 0], [5, 6], [8, 8]]
    assert burn.gather(x, 1, labels[1:]).tolist() == [[1, 2], [4, 4]]  # a view: same storage
    assert reads == []
    copied = labels.T.reshape(3, 2)  # a copy of a view keeps the bounds it copies
    assert burn.gather(x, 1, copied).tolist() == [[3, 1], [4, 4], [10, 8]]
    steps = burn.arange(3, -1, -1, dtype=burn.int64, backend=backend)[None, :]
    assert burn.gather(x, 1, steps).tolist() == [[3, 2, 1, 0]]  # arange: its ends
    assert reads == []
    assert burn.gather(x, 1, labels * 1).tolist() == [[3, 0], [5, 6], [8, 8]]  # computed
    assert reads == [(3, 2)]
    with pytest.raises(burn.BurnError, match=r"gather: index values span \[0, 3\] but axis 1 "
                                             r"of shape \(3, 2\) has size 2"):
        burn.gather(x[:, :2], 1, labels)  # the bounds do not fit: read for the exact range
    assert len(reads) == 2


def test_index_checks_note_the_origin_of_their_indices(backend):
    """Inside ``bounds.recording_limits`` each index check notes the storage its indices
    were uploaded to (through views and copies) and the size of the axis they index: what
    a captured step checks its replayed inputs against."""
    from burn.backend import bounds

    x = on(backend, np.arange(12, dtype="float32").reshape(3, 4))
    labels = burn.tensor(np.array([[3, 0], [1, 2], [0, 0]]), backend=backend)
    uploaded = labels.prim.storage
    with bounds.recording_limits() as limits:
        burn.gather(x, 1, labels.T.reshape(3, 2))  # a copy: its origin is the upload
        burn.one_hot(labels[1:], 7)
        burn.gather(x, 1, labels * 1)  # computed on the device: no origin
    assert [(origin is uploaded, size) for origin, size in limits] == \
        [(True, 4), (True, 7), (False, 4)]
    burn.gather(x, 1, labels)
    assert len(limits) == 3  # recorded only inside the block


def test_bad_arguments(backend):
    x = on(backend, np.zeros((3, 4), "float32"))
    idx = on(backend, np.zeros((2, 2), "int64"))
    with pytest.raises(burn.BurnError, match=r"gather: the index must be int32 or int64, got "
                                             r"float32"):
        burn.gather(x, 0, x)
    with pytest.raises(burn.BurnError, match=r"gather: the index \(shape \(2,\)\) must have as "
                                             r"many dimensions as the input \(shape \(3, 4\)\)"):
        burn.gather(x, 0, on(backend, np.zeros(2, "int64")))
    with pytest.raises(burn.BurnError, match=r"gather: the index \(shape \(2, 5\)\) is larger "
                                             r"than the input \(shape \(3, 4\)\) on axis 1"):
        burn.gather(x, 0, on(backend, np.zeros((2, 5), "int64")))
    with pytest.raises(burn.BurnError, match=r"scatter_add: src \(int32, shape \(2, 2\)\) must "
                                             r"have the input's dtype \(float32"):
        x.scatter_add(0, idx, on(backend, np.zeros((2, 2), "int32")))
    with pytest.raises(burn.BurnError, match=r"scatter_add: bool tensors cannot be added"):
        on(backend, np.zeros((3, 4), bool)).scatter_add(0, idx, on(backend, np.ones((2, 2),
                                                                                   bool)))
    with pytest.raises(burn.BurnError, match=r"embedding: the weight must be 2-D"):
        burn.embedding(on(backend, np.zeros(3, "float32")), idx)
    with pytest.raises(burn.BurnError, match=r"masked_fill: the mask must be a bool tensor"):
        x.masked_fill(idx, 1.0)
    with pytest.raises(burn.BurnError, match=r"masked_fill: the mask \(shape \(2, 3, 4\)\) must "
                                             r"broadcast to the input's shape \(3, 4\)"):
        x.masked_fill(on(backend, np.zeros((2, 3, 4), bool)), 1.0)
    with pytest.raises(burn.BurnError, match=r"cat: shapes \(3, 4\), \(2, 2\) differ off axis "
                                             r"0"):
        burn.cat([x, idx])
    with pytest.raises(burn.BurnError, match=r"stack: tensors must have one shape"):
        burn.stack([x, idx])
    with pytest.raises(burn.BurnError, match=r"pad: pads \(-3, -2\) crop 5 elements of axis 1, "
                                             r"which has 4 \(shape \(3, 4\)\)"):
        burn.pad(x, (-3, -2))
    with pytest.raises(burn.BurnError, match=r"pad: mode='reflect' pads axis 1 \(size 4\) "
                                             r"by at most 3 on each side, got \(4, 0\)"):
        burn.pad(x, (4, 0), mode="reflect")
    with pytest.raises(burn.BurnError, match=r"pad: mode must be one of constant, reflect, "
                                             r"replicate, circular, got 'mirror'"):
        burn.pad(x, (1, 0), mode="mirror")
    with pytest.raises(burn.BurnError, match=r"only used by mode='constant', not 'circular'"):
        burn.pad(x, (1, 0), value=2.0, mode="circular")
    with pytest.raises(burn.BurnError, match=r"pad: mode='replicate' has no element to read "
                                             r"on axis 0 of size 0"):
        burn.pad(on(backend, np.zeros((0, 2), "float32")), (0, 0, 1, 0), mode="replicate")
    with pytest.raises(burn.BurnError, match=r"repeat: needs a non-negative count for each of "
                                             r"the 2 axes of shape \(3, 4\)"):
        x.repeat(2)
    with pytest.raises(burn.BurnError, match=r"tril: needs a tensor of at least 2 dimensions"):
        on(backend, np.zeros(3, "float32")).tril()


def test_two_devices(backend, ref):
    x = burn.zeros((3, 4), backend=backend)
    idx = burn.zeros((1, 4), dtype=burn.int64, backend=ref)
    with pytest.raises(burn.BurnError, match=r"gather: tensors are on different devices"):
        burn.gather(x, 0, idx)
    with pytest.raises(burn.BurnError, match=r"cat: tensors are on different devices"):
        burn.cat([x, burn.zeros((3, 4), backend=ref)])
