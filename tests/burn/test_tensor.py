"""The Tensor core on every backend: creation, conversion, views without copies, the default
backend, and the memory pools staying bounded."""

from __future__ import annotations

import numpy as np
import pytest
from optest import check, on, random_tensor, strided, supports
from util import assert_close

import burn


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "float64", "bool"])
def test_creation(backend, ref, dtype):
    if not supports(backend, [dtype]):
        pytest.skip("dtype refusals are checked in test_pointwise.py::test_dtype_matrix")
    dt = getattr(burn, dtype)
    check(lambda b: burn.full((3, 5), 7, dtype=dt, backend=b), backend, ref)
    check(lambda b: burn.zeros((2, 0), dtype=dt, backend=b), backend, ref)
    check(lambda b: burn.ones(1, dtype=dt, backend=b), backend, ref)
    check(lambda b: burn.eye(3, 4, dtype=dt, backend=b), backend, ref)
    if dtype != "bool":
        check(lambda b: burn.arange(2, 40, 3, dtype=dt, backend=b), backend, ref)


def test_float_ranges(backend, ref):
    check(lambda b: burn.arange(-1.0, 1.0, 0.125, backend=b), backend, ref)
    check(lambda b: burn.linspace(-2.0, 3.0, 17, backend=b), backend, ref)
    check(lambda b: burn.linspace(0, 1, 1, backend=b), backend, ref)
    check(lambda b: burn.arange(5, backend=b).to(burn.float32) * 0.5, backend, ref)
    assert burn.arange(5, backend=backend).dtype == burn.int32


def test_conversion_round_trip(backend, rng):
    x = random_tensor(rng, (4, 3), "float32")
    t = on(backend, x)
    assert t.shape == (4, 3) and t.dtype == burn.float32 and t.device == backend.device
    assert_close(t.numpy(), x)
    moved = t.to("numpy")
    assert moved.backend.name == "numpy"
    assert_close(moved.to(backend).numpy(), x)
    assert t[1, 2].item() == pytest.approx(float(x[1, 2]))
    assert t.tolist() == x.tolist()
    assert_close(np.asarray(t.T), x.T)
    assert "Tensor(" in repr(t) and backend.name in repr(t)


def test_tensor_from_lists(backend):
    assert burn.tensor([1, 2], backend=backend).dtype == burn.int32
    assert burn.tensor([1.5], backend=backend).dtype == burn.float32
    assert burn.tensor([True], backend=backend).dtype == burn.bool
    assert burn.tensor([2**40], backend=backend).dtype == burn.int64 or \
        not supports(backend, ["int64"])


def test_views_share_storage(backend, rng):
    x = random_tensor(rng, (4, 6), "float32")
    t = on(backend, x)
    views = {
        "T": (t.T, x.T), "slice": (t[1:, ::2], x[1:, ::2]), "neg_step": (t[::-1, 1], x[::-1, 1]),
        "reshape": (t.reshape(2, 12), x.reshape(2, 12)), "view": (t.view(3, -1), x.reshape(3, -1)),
        "unsqueeze": (t.unsqueeze(1), x[:, None]), "squeeze": (t[:1].squeeze(0), x[0]),
        "expand": (t[:, :1].expand(4, 5), np.broadcast_to(x[:, :1], (4, 5))),
        "flip": (t.flip(), x[::-1, ::-1]), "permute": (t.permute(1, 0), x.T),
        "none_ellipsis": (t[None, ..., 2], x[None, ..., 2]),
        "flatten": (t.flatten(), x.reshape(-1)),
    }
    for name, (view, expected) in views.items():
        assert view.prim.storage is t.prim.storage, name
        assert_close(view.numpy(), expected)


def test_reshape_copies_only_when_needed(backend, rng):
    x = random_tensor(rng, (4, 6), "float32")
    t = on(backend, x)
    r = t.T.reshape(24)  # not viewable: a contiguous copy
    assert r.prim.storage is not t.prim.storage
    assert_close(r.numpy(), x.T.reshape(24))
    r2 = t.T.reshape(6, 2, 2)  # splits the outer axis of the transposed layout: a view
    assert r2.prim.storage is t.prim.storage
    assert_close(r2.numpy(), x.T.reshape(6, 2, 2))
    with pytest.raises(burn.BurnError, match=r"view: a tensor of shape \(6, 4\)"):
        t.T.view(24)


def test_split_and_chunk(backend, rng):
    x = random_tensor(rng, (7, 3), "float32")
    t = on(backend, x)
    parts = t.split(3)
    assert [p.shape for p in parts] == [(3, 3), (3, 3), (1, 3)]
    assert_close(parts[2].numpy(), x[6:])
    chunks = t.chunk(2, axis=1)
    assert [c.shape for c in chunks] == [(7, 2), (7, 1)]
    assert_close(chunks[1].numpy(), x[:, 2:])


def test_view_errors(backend, rng):
    t = on(backend, random_tensor(rng, (2, 3), "float32"))
    with pytest.raises(burn.BurnError, match=r"reshape: cannot reshape a tensor of shape \(2, 3\)"):
        t.reshape(4, 2)
    with pytest.raises(burn.BurnError, match="indexing: index 5 is out of range for axis 1"):
        t[0, 5]
    with pytest.raises(burn.BurnError, match=r"permute: \(0, 0\) is not a permutation"):
        t.permute(0, 0)
    with pytest.raises(burn.BurnError, match=r"expand: cannot expand shape \(2, 3\) to \(4, 3\)"):
        t.expand(4, 3)
    with pytest.raises(burn.BurnError, match="squeeze: axis 1 has size 3"):
        t.squeeze(1)
    with pytest.raises(burn.BurnError, match="axis 2 is out of range"):
        t.transpose(0, 2)
    with pytest.raises(burn.BurnError, match="item"):
        t.item()


def test_default_backend():
    previous = burn.default_backend()
    assert previous.name in ("cuda", "wgpu", "cpu")
    burn.set_default_backend("numpy")
    try:
        assert burn.zeros(2).backend.name == "numpy"
        with pytest.raises(burn.BurnError, match="unknown device 'tpu'"):
            burn.set_default_backend("tpu")
    finally:
        burn.set_default_backend(previous)
    assert burn.ones(1).backend is previous


def _pool_stats(backend: burn.Backend) -> dict[str, int]:
    if backend.name == "wgpu":
        from cubepy.backends.wgsl.buffers import get_pool

        get_pool().collect()  # frees from the garbage collector are applied here
        return get_pool().stats()
    if backend.name == "cpu" or not getattr(backend, "on_gpu", False):
        from cubepy.runtime.pool import host_pool

        return host_pool().stats()
    import torch  # a GPU: torch's caching allocator is the pool

    return {"allocations": 0, "reuses": 0, "held_bytes": torch.cuda.memory_reserved(),
            "in_use_bytes": torch.cuda.memory_allocated()}


def test_pool_stays_bounded(backend, rng):
    """10,000 alloc/free cycles of mixed sizes (4 bytes to 800 KiB): the pool reuses blocks,
    creates few and holds a bounded number of bytes. No gc.collect(): a dropped tensor's block
    must return to the pool by reference counting alone (a collection costs seconds in a
    process holding hundreds of compiled kernels)."""
    sizes = np.exp(rng.uniform(0, np.log(200_000), size=10_000)).astype(int)
    plain = backend.wraps or backend  # with --fusion: the pool is the wrapped backend's
    before = _pool_stats(plain)
    live: list[burn.Tensor] = []
    for size in sizes:
        live.append(burn.empty((int(size),), backend=backend))
        if len(live) > 8:  # at most 9 tensors alive at once
            live.pop(int(rng.integers(0, len(live))))  # freed by its reference count alone
    live.clear()
    after = _pool_stats(plain)
    if getattr(plain, "on_gpu", False):  # torch counts bytes, not blocks
        assert after["in_use_bytes"] <= before["in_use_bytes"], after
        assert after["held_bytes"] <= before["held_bytes"] + 64 * 1024 * 1024, after
        return
    created = after["allocations"] - before["allocations"]
    # 9 live tensors in each of at most 13 power-of-two classes (256 B .. 1 MiB)
    assert created <= 9 * 13, after
    assert after["reuses"] - before["reuses"] > 1000, after
    assert after["held_bytes"] <= before["held_bytes"] + created * 1024 * 1024, after
    assert after["in_use_bytes"] <= before["in_use_bytes"], after


def test_constants_reach_the_backend_once(backend):
    """``x * 0.5`` at every step of a loop uploads 0.5 once (a GPU upload waits for its
    queue); distinct bits are distinct constants."""
    half = backend.constant(np.array(0.5, np.float32))
    assert backend.constant(np.array(0.5, np.float32)) is half
    assert backend.constant(np.array(0.5, np.float64)) is not half
    zero, negative_zero = (backend.constant(np.array(v, np.float32)) for v in (0.0, -0.0))
    assert zero is not negative_zero
    assert np.signbit(backend.to_numpy(negative_zero)) and not np.signbit(backend.to_numpy(zero))
    x = burn.tensor([1.0, 2.0], backend=backend)
    assert (x * 0.5).tolist() == [0.5, 1.0] and (x * 0.5).tolist() == [0.5, 1.0]


@pytest.mark.parametrize("kind", ["contiguous", "transposed", "flipped"])
@pytest.mark.parametrize("offset, dim1, dim2", [(0, 0, 1), (1, 1, 2), (-2, 2, 0), (5, 0, 1),
                                                (-1, -1, -2)])
def test_diagonal(backend, rng, kind, offset, dim1, dim2):
    """A view: its values are NumPy's, and a computation on it reads the right elements."""
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    got = strided(backend, x, kind).diagonal(offset, dim1, dim2)
    expected = x.diagonal(offset, dim1, dim2)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)
    np.testing.assert_array_equal((got * 2).numpy(), expected * 2)


def test_diagonal_errors(backend):
    x = burn.ones((2, 3), backend=backend)
    with pytest.raises(burn.BurnError, match=r"diagonal: dim1 and dim2 are both axis 1 of "
                                             r"shape \(2, 3\); name two different axes"):
        x.diagonal(0, 1, -1)
    with pytest.raises(burn.BurnError, match=r"diagonal: axis 2 is out of range"):
        x.diagonal(0, 0, 2)


def test_narrow(backend):
    x = burn.tensor([[1, 2, 3], [4, 5, 6]], backend=backend)
    assert x.narrow(1, 1, 2).tolist() == [[2, 3], [5, 6]]
    assert x.narrow(0, -1, 1).tolist() == [[4, 5, 6]]
    assert x.narrow(1, 3, 0).shape == (2, 0)
    with pytest.raises(burn.BurnError, match=r"narrow: elements 2 to 4 do not fit axis 1 of "
                                             r"shape \(2, 3\)"):
        x.narrow(1, 2, 2)
