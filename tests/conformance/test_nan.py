"""NaN on every target, as in NumPy: maximum/minimum and max/min reductions propagate it,
argmax/argmin find the first one, a cast to bool makes it True, atomic max/min act as
np.maximum.at/np.minimum.at.

(A WGSL compiler may fold a float `!=` on NaN to false: lavapipe does.)
"""

from __future__ import annotations

import numpy as np
import pytest
from util import FLOAT_DTYPES, assert_close, cdiv, np_dtype, poison, run_or_expect_unsupported

import cubepy as cube

N = 64


def nan_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """NaN in a only, in b only, in both, next to infinities and zeros, then ordinary values."""
    nan, inf = np.nan, np.inf
    a = [nan, 1.0, nan, nan, -inf, inf, nan, 0.0, -0.0, 2.0, -3.0, inf]
    b = [1.0, nan, nan, -inf, nan, nan, inf, nan, 0.0, -3.0, 2.0, -inf]
    rest = N - len(a)
    rng = np.random.default_rng(0)
    a += list(rng.uniform(-4, 4, rest))
    b += list(np.where(rng.random(rest) < 0.2, nan, rng.uniform(-4, 4, rest)))
    return np.array(a).astype(np_dtype(dtype)), np.array(b).astype(np_dtype(dtype))


@cube.kernel
def min_max_kernel(x, y, o_max, o_min, o_pymax, o_pymin, BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    a = cube.load(x + i)
    b = cube.load(y + i)
    cube.store(o_max + i, cube.maximum(a, b))
    cube.store(o_min + i, cube.minimum(a, b))
    cube.store(o_pymax + i, max(a, b))
    cube.store(o_pymin + i, min(a, b))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_maximum_minimum_propagate_nan(target, dtype):
    a, b = nan_pairs(dtype)
    outs = [poison(N, dtype) for _ in range(4)]
    if run_or_expect_unsupported(
        target, [dtype], lambda: min_max_kernel[(1,)](a, b, *outs, BLOCK=N, target=target)
    ):
        with np.errstate(invalid="ignore"):  # bfloat16's ufuncs warn on NaN
            expected = [np.maximum(a, b), np.minimum(a, b)] * 2
        for got, want in zip(outs, expected):
            assert_close(got, want)


@cube.kernel
def to_bool_kernel(x, out, BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    cube.store(out + i, cube.load(x + i).to(cube.bool))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cast_of_nan_to_bool_is_true(target, dtype):
    x, _ = nan_pairs(dtype)
    expected = x.astype(bool)
    out = ~expected
    if run_or_expect_unsupported(
        target, [dtype], lambda: to_bool_kernel[(1,)](x, out, BLOCK=N, target=target)
    ):
        np.testing.assert_array_equal(out, expected)


@cube.kernel
def nan_reduce_kernel(x, o_max, o_min, o_argmax, o_argmin, o_all,
                      R: cube.Comptime[int], C: cube.Comptime[int], AXIS: cube.Comptime[int]):
    v = cube.load(x + cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :])
    o = cube.arange(0, C if AXIS == 0 else R)
    cube.store(o_max + o, cube.max(v, axis=AXIS))
    cube.store(o_min + o, cube.min(v, axis=AXIS))
    cube.store(o_argmax + o, cube.argmax(v, axis=AXIS))
    cube.store(o_argmin + o, cube.argmin(v, axis=AXIS))
    cube.store(o_all + 0, cube.max(v, axis=None))
    cube.store(o_all + 1, cube.min(v, axis=None))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(8, 16), (4, 256), (64, 8)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_reductions_with_nan(target, rng, dtype, shape, axis):
    """max/min propagate NaN; argmax/argmin give the index of the first NaN."""
    x = rng.uniform(-4, 4, shape)
    x[rng.random(shape) < 1.5 / shape[axis]] = np.nan
    lines = np.moveaxis(x, axis, -1)  # a view: one line per output
    lines[0, :] = np.nan
    lines[-1, lines.shape[-1] // 2:] = np.nan  # NaNs from the middle on
    lines[1, :] = np.where(np.isnan(lines[1, :]), 0.0, lines[1, :])  # and one line without
    x = x.astype(np_dtype(dtype))
    n = shape[1 - axis]
    outs = [poison(n, dtype), poison(n, dtype), poison(n, "int32"), poison(n, "int32"),
            poison(2, dtype)]
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: nan_reduce_kernel[(1,)](x, *outs, R=shape[0], C=shape[1], AXIS=axis,
                                        target=target),
    ):
        with np.errstate(invalid="ignore"):
            assert_close(outs[0], np.max(x, axis=axis))
            assert_close(outs[1], np.min(x, axis=axis))
        assert_close(outs[2], np.argmax(x, axis=axis).astype(np.int32))
        assert_close(outs[3], np.argmin(x, axis=axis).astype(np.int32))
        assert np.isnan(outs[4]).all()


# ---------------------------------------------------------------- atomic max/min
# As np.maximum.at/np.minimum.at: a NaN value makes the slot NaN, a NaN slot (either sign bit)
# stays NaN, and each update returns the slot's value before it. Zeros: -0.0 < +0.0 on every
# target, so the result does not depend on the order the updates land in (NumPy's own answer
# depends on the dtype and the CPU: its SIMD loops return the second operand on a tie, its
# scalar loop the first).


@cube.kernel
def atomic_nan_kernel(x, idx, mx, mn, old_mx, old_mn, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    slot = cube.load(idx + offs, mask=mask, other=0)
    cube.store(old_mx + offs, cube.atomic_max(mx + slot, v, mask=mask), mask=mask)
    cube.store(old_mn + offs, cube.atomic_min(mn + slot, v, mask=mask), mask=mask)


def negative_nan(dtype) -> np.ndarray:
    """A NaN with its sign bit set (np.nan has it clear)."""
    return np.copysign(np.array(np.nan, np_dtype(dtype)), -1)


def one_update_per_slot(rng, dtype):
    """(x, idx, slots): every pair of nan_pairs (NaN value, NaN slot, both, infinities, zeros)
    as slot and value, and NaN slots with the sign bit set under numbers, NaNs and zeros."""
    slots, x = nan_pairs(dtype)
    slots[12:20] = negative_nan(dtype)
    x[12:20] = [1.0, -1.0, np.inf, -np.inf, np.nan, negative_nan(dtype), 0.0, -0.0]
    slots[20:24], x[20:24] = [0.0, -0.0, 0.0, -0.0], [negative_nan(dtype), 0.0, -0.0, -0.0]
    return x, np.arange(N, dtype=np.int32), slots


def many_updates_per_slot(rng, dtype):
    """(x, idx, slots): 1500 updates of 8 slots; NaN values (both signs) go to slots 0 and 1
    among numbers and zeros of both signs, slots 2 and 3 start as NaN (both signs), slots 4
    and 5 start as zeros and get only zeros (both signs)."""
    n, nslots = 1500, 8
    idx = rng.integers(0, nslots, n).astype(np.int32)
    x = rng.uniform(-4, 4, n)
    x[(rng.random(n) < 0.2) | (idx == 4) | (idx == 5)] = 0.0
    x[rng.random(n) < 0.3] *= -1.0  # -0.0 among the zeros
    x[(idx <= 1) & (rng.random(n) < 0.05)] = np.nan
    x[(idx == 1) & (rng.random(n) < 0.05)] = negative_nan("float64")
    slots = np.array([1.0, -2.0, np.nan, negative_nan("float64"), 0.0, -0.0, 10.0, -10.0])
    return x.astype(np_dtype(dtype)), idx, slots.astype(np_dtype(dtype))


def check_atomic_nan(x, idx, slots, mx, mn, old_mx, old_mn) -> None:
    """The slots against np.maximum.at/np.minimum.at, zero results signed by -0.0 < +0.0, and
    the old values: each one the slot's start or one of its values (NaN once the slot is), and
    the start itself, bit for bit, where a slot has one update."""
    want_mx, want_mn = slots.copy(), slots.copy()
    with np.errstate(invalid="ignore"):
        np.maximum.at(want_mx, idx, x)
        np.minimum.at(want_mn, idx, x)
    assert_close(mx, want_mx)  # NaN where NumPy has NaN, and nowhere else
    assert_close(mn, want_mn)
    for got, want, neg_wins in ((mx, want_mx, False), (mn, want_mn, True)):
        for i in np.flatnonzero(want == 0):
            signs = np.signbit(np.concatenate([slots[i:i + 1], x[idx == i]]))
            want_neg = signs.any() if neg_wins else signs.all()  # -0.0 < +0.0
            assert np.signbit(got[i]) == want_neg, (i, got[i])
    unsigned = np.dtype(f"u{slots.dtype.itemsize}")
    for old in (old_mx, old_mn):
        if len(np.unique(idx)) == len(idx):
            np.testing.assert_array_equal(old.view(unsigned), slots[idx].view(unsigned))
        assert np.isnan(old[np.isnan(slots[idx])]).all()
        for i in np.unique(idx):
            seen = old[idx == i]
            allowed = np.concatenate([slots[i:i + 1], x[idx == i]])
            known = np.isin(seen, allowed) | (np.isnan(seen) & np.isnan(allowed).any())
            assert known.all(), (i, seen[~known])


@pytest.mark.parametrize("case", [one_update_per_slot, many_updates_per_slot],
                         ids=["one_update_per_slot", "many_updates_per_slot"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_atomic_max_min_with_nan(target, rng, dtype, case):
    x, idx, slots = case(rng, dtype)
    n = len(x)
    mx, mn = slots.copy(), slots.copy()
    old_mx, old_mn = poison(n, dtype), poison(n, dtype)
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: atomic_nan_kernel[(cdiv(n, 128),)](x, idx, mx, mn, old_mx, old_mn, n,
                                                  BLOCK=128, target=target),
        atomic_dtypes=[dtype],
    ):
        check_atomic_nan(x, idx, slots, mx, mn, old_mx, old_mn)
