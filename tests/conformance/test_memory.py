"""Memory: atomics, scalar loads and stores, masked stores, gathers, strided views and copies."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    assert_close,
    assert_points_at_the_line,
    cdiv,
    np_dtype,
    poison,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube

BLOCK = 128

# ---------------------------------------------------------------- atomics


@cube.kernel
def histogram_kernel(x, hist, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    bins = cube.load(x + offs, mask=mask, other=0)
    cube.atomic_add(hist + bins, 1, mask=mask)


def test_histogram_atomic_add(target, rng):
    n, bins = 2000, 16
    x = random_array(rng, n, "int32", 0, bins)
    base = random_array(rng, bins, "int32", 100, 200)  # counts start from random values, not 0
    hist = base.copy()
    histogram_kernel[(cdiv(n, BLOCK),)](x, hist, n, BLOCK=BLOCK, target=target)
    assert_close(hist, base + np.bincount(x, minlength=bins).astype(np.int32))


@cube.kernel
def atomic_minmax_kernel(x, idx, mx, mn, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    slot = cube.load(idx + offs, mask=mask, other=0)
    cube.atomic_max(mx + slot, v, mask=mask)
    cube.atomic_min(mn + slot, v, mask=mask)


@pytest.mark.parametrize("dtype", ["int32", "float32", "uint32", "int64"])
def test_atomic_max_min(target, rng, dtype):
    n, slots = 1500, 7
    lo, hi = (-1000, 1000) if dtype != "uint32" else (0, 2000)
    x = random_array(rng, n, dtype, lo, hi)
    idx = random_array(rng, n, "int32", 0, slots)
    mx0 = random_array(rng, slots, dtype, lo, hi)
    mn0 = random_array(rng, slots, dtype, lo, hi)
    mx, mn = mx0.copy(), mn0.copy()
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: atomic_minmax_kernel[(cdiv(n, BLOCK),)](
            x, idx, mx, mn, n, BLOCK=BLOCK, target=target
        ),
        atomic_dtypes=[dtype],
    ):
        np.maximum.at(mx0, idx, x)
        np.minimum.at(mn0, idx, x)
        assert_close(mx, mx0)
        assert_close(mn, mn0)


@cube.kernel
def atomic_bits_kernel(x, idx, acc, old, n, BLOCK: cube.Comptime[int],
                       KIND: cube.Comptime[str]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    slot = cube.load(idx + offs, mask=mask, other=0)
    if KIND == "and":
        before = cube.atomic_and(acc + slot, v, mask=mask)
    elif KIND == "or":
        before = cube.atomic_or(acc + slot, v, mask=mask, sem="relaxed")
    else:
        before = cube.atomic_xor(acc + slot, v, mask=mask)
    cube.store(old + offs, before, mask=mask)


def bitwise_case(rng: np.random.Generator, kind: str, dtype: str, n: int = 1500, slots: int = 5
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random values, their slots (many lanes on few slots) and the slots' start."""
    info = np.iinfo(np_dtype(dtype))
    x = rng.integers(info.min, info.max, n, dtype=np_dtype(dtype), endpoint=True)
    if kind == "and":  # mostly ones, so the slots do not all end at 0
        x |= ~(np_dtype(dtype).type(1) << rng.integers(0, 8, n).astype(np_dtype(dtype)))
    idx = random_array(rng, n, "int32", 0, slots)
    return x, idx, rng.integers(info.min, info.max, slots, dtype=np_dtype(dtype), endpoint=True)


def assert_bitwise_atomics(kind: str, x: np.ndarray, idx: np.ndarray, acc0: np.ndarray,
                           acc: np.ndarray, old: np.ndarray) -> None:
    """Each slot ends as its start combined with every value (in any order), and the old
    values chain: each lane's update turns its old value into another lane's old value, or
    into the slot's end, so the states before the updates (and the end) are the states after
    them (and the start), as multisets."""
    ufunc = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
    want = acc0.copy()
    ufunc.at(want, idx, x)
    np.testing.assert_array_equal(acc, want)
    after = ufunc(old, x)
    for s in range(acc0.size):
        lanes = idx == s
        befores = sorted(old[lanes].tolist() + [int(want[s])])
        afters = sorted(after[lanes].tolist() + [int(acc0[s])])
        assert befores == afters, f"slot {s}: old values that no order of updates gives"


@pytest.mark.parametrize("kind", ["and", "or", "xor"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
def test_atomic_bitwise(target, rng, kind, dtype):
    x, idx, acc0 = bitwise_case(rng, kind, dtype)
    acc, old = acc0.copy(), np.zeros(x.size, x.dtype)
    if run_or_expect_unsupported(
        target, [dtype],
        lambda: atomic_bits_kernel[(cdiv(x.size, BLOCK),)](x, idx, acc, old, x.size,
                                                           BLOCK=BLOCK, KIND=kind, target=target),
        atomic_dtypes=[dtype],
    ):
        assert_bitwise_atomics(kind, x, idx, acc0, acc, old)


@cube.kernel
def atomic_bits_of_a_float(acc):
    cube.atomic_or(acc + cube.arange(0, 16), 1.0)


def test_atomic_bitwise_of_a_float_array_points_at_the_line():
    assert_points_at_the_line(
        lambda: atomic_bits_of_a_float[(1,)](np.zeros(16, np.float32), target="cpu"),
        "atomic_or needs an integer array, got float32", "test_memory.py")


@cube.kernel
def ticket_kernel(counter, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    old = cube.atomic_add(counter + offs * 0, 1, mask=mask)
    cube.store(out + offs, old, mask=mask)


def test_atomic_add_returns_old_values(target, rng):
    n, base = 700, 1234
    counter = np.array([base], dtype=np.int32)
    out = poison(n, "int32")
    ticket_kernel[(cdiv(n, BLOCK),)](counter, out, n, BLOCK=BLOCK, target=target)
    assert counter[0] == base + n
    np.testing.assert_array_equal(np.sort(out), base + np.arange(n, dtype=np.int32))


@cube.kernel
def float_atomic_add_kernel(x, idx, acc, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    slot = cube.load(idx + offs, mask=mask, other=0)
    cube.atomic_add(acc + slot, cube.load(x + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_atomic_add(target, rng, dtype):
    n, slots = 1000, 8
    x = random_array(rng, n, dtype, -1, 1)
    idx = random_array(rng, n, "int32", 0, slots)
    base = random_array(rng, slots, dtype, -1, 1)
    acc = base.copy()
    expected = base.astype(np.float64)
    np.add.at(expected, idx, x.astype(np.float64))
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: float_atomic_add_kernel[(cdiv(n, BLOCK),)](
            x, idx, acc, n, BLOCK=BLOCK, target=target
        ),
        atomic_dtypes=[dtype],
    ):
        # ~125 additions per slot in any order: float32 partial sums can be off by ~1e-5 each.
        assert_close(acc, expected, atol=1e-4 if dtype == "float32" else 1e-12)


@cube.kernel
def relaxed_sums_kernel(x, idx, acc, counts, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    slot = cube.load(idx + offs, mask=mask, other=0)
    cube.atomic_add(acc + slot, cube.load(x + offs, mask=mask), mask=mask, sem="relaxed")
    cube.atomic_add(counts + slot, 1, mask=mask, sem="relaxed")
    cube.atomic_max(counts + 8 + slot * 0, slot, mask=mask, sem="relaxed")


def test_relaxed_atomics_add_up_the_same(target, rng):
    """sem="relaxed" orders nothing else, but each add still lands exactly once."""
    n, slots = 1000, 8
    x = random_array(rng, n, "float32", -1, 1)
    idx = random_array(rng, n, "int32", 0, slots)
    acc, counts = np.zeros(slots, np.float32), np.zeros(slots + 1, np.int32)
    relaxed_sums_kernel[(cdiv(n, BLOCK),)](x, idx, acc, counts, n, BLOCK=BLOCK, target=target)
    expected = np.zeros(slots)
    np.add.at(expected, idx, x.astype(np.float64))
    assert_close(acc, expected, atol=1e-4)  # ~125 float32 adds per slot, in any order
    np.testing.assert_array_equal(counts, [*np.bincount(idx, minlength=slots), idx.max()])


@cube.kernel
def cas_elementwise_kernel(flags, old_out, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    old = cube.atomic_cas(flags + offs, 7, offs)
    cube.store(old_out + offs, old)


def test_atomic_cas_elementwise(target, rng):
    n = 4 * BLOCK  # atomic_cas takes no mask: the size is a multiple of the block
    flags0 = np.where(rng.random(n) < 0.5, 7, random_array(rng, n, "int32", 8, 100)).astype(
        np.int32
    )
    flags = flags0.copy()
    old = poison(n, "int32")
    cas_elementwise_kernel[(n // BLOCK,)](flags, old, BLOCK=BLOCK, target=target)
    assert_close(old, flags0)
    assert_close(flags, np.where(flags0 == 7, np.arange(n, dtype=np.int32), flags0))


@cube.kernel
def cas_lock_kernel(slot, out):
    pid = cube.cube_pos(0)
    old = cube.atomic_cas(slot, -5, pid + 1)
    cube.store(out + pid, old)


def test_atomic_cas_single_winner(target):
    cubes = 40
    slot = np.array([-5], dtype=np.int32)
    out = poison(cubes, "int32")
    cas_lock_kernel[(cubes,)](slot, out, target=target)
    winners = np.flatnonzero(out == -5)
    assert len(winners) == 1, out
    w = int(winners[0])
    assert slot[0] == w + 1
    assert (np.delete(out, w) == w + 1).all(), out


# ---------------------------------------------------------------- scalar loads and stores


@cube.kernel
def scalar_io_kernel(x, out, scale):
    i = cube.cube_pos(0)
    v = cube.load(x + i)
    cube.store(out + i, v * scale + i)


def test_scalar_load_store(target, rng):
    n = 40
    x = random_array(rng, n, "float32")
    out = poison(n, "float32")
    scalar_io_kernel[(n,)](x, out, 1.5, target=target)
    assert_close(out, x * np.float32(1.5) + np.arange(n, dtype=np.float32))


@cube.kernel
def first_element_kernel(x, out):
    cube.store(out, cube.load(x) * 2.0)


def test_scalar_pointer_is_first_element(target, rng):
    x = random_array(rng, 5, "float64")
    out = poison(3, "float64")
    first_element_kernel[(1,)](x, out, target=target)
    assert_close(out[:1], x[:1] * 2.0)
    assert np.isnan(out[1:]).all()


# ---------------------------------------------------------------- masked stores, gathers


@cube.kernel
def even_only_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = (offs < n) & (offs % 2 == 0)
    cube.store(out + offs, cube.load(x + offs, mask=mask) + 1.0, mask=mask)


def test_masked_store_leaves_other_elements(target, rng):
    n = 301
    x = random_array(rng, n, "float32")
    out = poison(n + 20, "float32")
    even_only_kernel[(cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, target=target)
    assert_close(out[:n:2], x[::2] + np.float32(1.0))
    assert np.isnan(out[1:n:2]).all() and np.isnan(out[n:]).all()


@cube.kernel
def gather_scatter_kernel(x, idx, gathered, scattered, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    i = cube.load(idx + offs, mask=mask, other=0)
    cube.store(gathered + offs, cube.load(x + i, mask=mask), mask=mask)
    cube.store(scattered + i, cube.load(x + offs, mask=mask), mask=mask)


def test_gather_and_scatter(target, rng):
    n = 500
    x = random_array(rng, n, "float32")
    idx = rng.permutation(n).astype(np.int32)
    gathered, scattered = poison(n, "float32"), poison(n, "float32")
    gather_scatter_kernel[(cdiv(n, BLOCK),)](
        x, idx, gathered, scattered, n, BLOCK=BLOCK, target=target
    )
    assert_close(gathered, x[idx])
    expected = np.empty_like(x)
    expected[idx] = x
    assert_close(scattered, expected)


# ---------------------------------------------------------------- strided copies


@cube.kernel
def copy2d_kernel(x, out, M, N, sxm, sxn, som, son, BM: cube.Comptime[int], BN: cube.Comptime[int]):
    rows = cube.cube_pos(0) * BM + cube.arange(0, BM)
    cols = cube.cube_pos(1) * BN + cube.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    v = cube.load(x + rows[:, None] * sxm + cols[None, :] * sxn, mask=mask)
    cube.store(out + rows[:, None] * som + cols[None, :] * son, v, mask=mask)


def _elem_strides(a):
    return [s // a.itemsize for s in a.strides]


@pytest.mark.parametrize("dtype", ["float32", "int8", "float16", "bfloat16", "int64", "float64"])
def test_strided_copy_of_noncontiguous_view(target, rng, dtype):
    big = random_array(rng, (50, 90), dtype, -100, 100)
    x = big[1::2, 3::3]  # a non-contiguous view: 25 x 29, strides (180, 3) elements
    assert not x.flags.c_contiguous
    M, N = x.shape
    out = poison((M, N), dtype)
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: copy2d_kernel[(cdiv(M, 16), cdiv(N, 16))](
            x, out, M, N, *_elem_strides(x), N, 1, BM=16, BN=16, target=target
        ),
    ):
        assert_close(out, x)


def test_transpose_via_pointer_strides(target, rng):
    M, N = 37, 21
    x = random_array(rng, (M, N), "float32")
    out = poison((N, M), "float32")
    copy2d_kernel[(cdiv(M, 16), cdiv(N, 16))](x, out, M, N, N, 1, 1, M, BM=16, BN=16, target=target)
    assert_close(out, x.T)


@cube.kernel
def copy_typed_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=mask), mask=mask)


def test_view_with_offset(target, rng):
    """A view that starts inside its base array: its first element is the kernel's pointer."""
    base = random_array(rng, 400, "int32")
    x = base[37:337]
    out = poison(300, "int32")
    copy_typed_kernel[(cdiv(300, BLOCK),)](x, out, 300, BLOCK=BLOCK, target=target)
    assert_close(out, x)


@cube.kernel
def stencil_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    left = cube.load(x + offs - 1, mask=mask & (offs >= 1), other=0.0)
    right = cube.load(x + offs + 1, mask=(offs + 1) < n, other=0.0)
    cube.store(out + offs, left + 2.0 * cube.load(x + offs, mask=mask) + right, mask=mask)


def test_masked_loads_outside_the_array_are_never_read(target, rng):
    """Offsets -1 and n are masked off: the loads must not touch them (nor fault)."""
    n = 333
    x = random_array(rng, n, "float32")
    out = poison(n, "float32")
    stencil_kernel[(cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, target=target)
    padded = np.concatenate([[0.0], x.astype(np.float64), [0.0]])
    assert_close(out, padded[:-2] + 2 * padded[1:-1] + padded[2:])


@cube.kernel
def scalar_mask_kernel(x, seen, out, counts, active, COLS: cube.Comptime[int]):
    # Each cube reads a 2 x COLS block (contiguous rows); a scalar mask switches whole cubes
    # off: their loads give `other`, their stores and atomics do nothing.
    on = cube.cube_pos(0) < active
    block = ((2 * cube.cube_pos(0) + cube.arange(0, 2))[:, None] * COLS
             + cube.arange(0, COLS)[None, :])
    values = cube.load(x + block, mask=on, other=-1.0)
    cube.store(seen + block, values)
    cube.store(out + block, values + 1.0, mask=on)
    cube.atomic_add(counts + cube.arange(0, COLS), 1, mask=on)


def test_scalar_mask_on_tiles(target, rng):
    cubes, active, cols = 6, 4, 32
    x = random_array(rng, (2 * cubes, cols), "float32")
    seen, out = poison(x.shape, "float32"), poison(x.shape, "float32")
    counts = np.zeros(cols, np.int32)
    scalar_mask_kernel[(cubes,)](x, seen, out, counts, active, COLS=cols, target=target)
    on = 2 * active
    assert_close(seen, np.concatenate([x[:on], np.full_like(x[on:], -1.0)]))
    assert_close(out[:on], x[:on] + np.float32(1.0))
    assert np.isnan(out[on:]).all()
    assert_close(counts, np.full(cols, active, np.int32))
