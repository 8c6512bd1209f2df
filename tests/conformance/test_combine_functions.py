"""``reduce`` and ``associative_scan`` with a ``@cube.func`` combine function, as Triton's
``tl.reduce`` and ``tl.associative_scan``: one tile or several, along either axis or all,
forward and reversed, against NumPy (and a sequential float64 loop) on every target; wrong
combine functions are compile errors at the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    assert_close,
    assert_points_at_the_line,
    np_dtype,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube

R, C = 8, 32


@cube.func
def add(a, b):
    return a + b


@cube.func
def larger(a, b):
    return cube.maximum(a, b)


@cube.func
def first_largest(value_a, index_a, value_b, index_b):
    # the larger value; on a tie the earlier index (a's come from earlier elements)
    take_b = (value_b > value_a) | ((value_b == value_a) & (index_b < index_a))
    return cube.where(take_b, value_b, value_a), cube.where(take_b, index_b, index_a)


@cube.kernel
def reduced(x, rows, cols, every, peak, peak_at, kept, R: cube.Comptime[int],
            C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    v = cube.load(x + offs)
    cube.store(rows + cube.arange(0, R), cube.reduce(v, 1, add))
    cube.store(cols + cube.arange(0, C), cube.reduce(v, 0, add))
    cube.store(every, cube.reduce(v, None, add))
    index = cube.broadcast_to(cube.arange(0, C)[None, :], (R, C))
    value, at = cube.reduce((v, index), 1, first_largest)
    cube.store(peak + cube.arange(0, R), value)
    cube.store(peak_at + cube.arange(0, R), at)
    cube.store(kept + offs, v - cube.reduce(v, 1, larger, keep_dims=True))


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "float16"])
def test_reduce_by_a_combine_function(target, rng, dtype):
    x = random_array(rng, (R, C), dtype, -20, 20)
    x[:, 5] = x[:, 9]  # ties for the first-largest search
    rows, cols = np.zeros(R, x.dtype), np.zeros(C, x.dtype)
    every, peak, peak_at = np.zeros(1, x.dtype), np.zeros(R, x.dtype), np.zeros(R, np.int32)
    kept = np.zeros_like(x)
    if run_or_expect_unsupported(target, [dtype], lambda: reduced[(1,)](
            x, rows, cols, every, peak, peak_at, kept, R=R, C=C, target=target)):
        wide = x.astype(np.float64)
        assert_close(rows, wide.sum(axis=1))
        assert_close(cols, wide.sum(axis=0))
        assert_close(every, [wide.sum()], atol=1e-1 if dtype == "float16" else None)
        np.testing.assert_array_equal(peak, x.max(axis=1))
        np.testing.assert_array_equal(peak_at, x.argmax(axis=1))
        np.testing.assert_array_equal(kept, x - x.max(axis=1, keepdims=True))


@cube.func
def welford(mean_a, m2_a, count_a, mean_b, m2_b, count_b):
    # two partial (mean, sum of squared deviations, count) summaries as one (Chan et al.)
    count = count_a + count_b
    delta = mean_b - mean_a
    share = cube.where(count > 0, count_b / cube.maximum(count, 1.0), 0.0)
    return mean_a + delta * share, m2_a + m2_b + delta * delta * count_a * share, count


@cube.kernel
def row_variance(x, mean, var, n, BLOCK: cube.Comptime[int], R: cube.Comptime[int]):
    cols = cube.arange(0, BLOCK)[None, :]
    offs = cube.arange(0, R)[:, None] * n + cols
    inside = (cols < n) & (offs >= 0)
    v = cube.load(x + offs, mask=inside, other=0.0)
    mu, m2, count = cube.reduce((v, cube.zeros((R, BLOCK), cube.float32),
                                 cube.where(inside, 1.0, 0.0)), 1, welford)
    cube.store(mean + cube.arange(0, R), mu)
    cube.store(var + cube.arange(0, R), m2 / count)


def test_reduce_of_three_tiles_welford(target, rng):
    n = 50  # ragged: the masked lanes are summaries of nothing
    x = rng.standard_normal((R, n)).astype(np.float32) * 3 + 7
    mean, var = np.zeros(R, np.float32), np.zeros(R, np.float32)
    row_variance[(1,)](x, mean, var, n, BLOCK=64, R=R, target=target)
    assert_close(mean, x.astype(np.float64).mean(axis=1))  # float32's tolerance: the worst
    assert_close(var, x.astype(np.float64).var(axis=1))  # of 20 seeds was 4e-7 relative


@cube.func
def recurrence(decay_a, value_a, decay_b, value_b):
    # h_t = decay_t * h_{t-1} + value_t, composed: apply a's step, then b's
    return decay_a * decay_b, decay_b * value_a + value_b


@cube.kernel
def scanned(x, decay, running, totals_back, state, R: cube.Comptime[int],
            C: cube.Comptime[int]):
    offs = cube.arange(0, R)[:, None] * C + cube.arange(0, C)[None, :]
    v = cube.load(x + offs)
    cube.store(running + offs, cube.associative_scan(v, 0, larger))
    cube.store(totals_back + offs, cube.associative_scan(v, 1, add, reverse=True))
    _, h = cube.associative_scan((cube.load(decay + offs), v), 1, recurrence)
    cube.store(state + offs, h)


def test_associative_scan_forward_reversed_and_of_pairs(target, rng):
    x = random_array(rng, (R, C), "float32", -2, 2)
    decay = rng.uniform(0.5, 1.0, (R, C)).astype(np.float32)
    running, totals_back, state = (np.zeros_like(x) for _ in range(3))
    scanned[(1,)](x, decay, running, totals_back, state, R=R, C=C, target=target)
    np.testing.assert_array_equal(running, np.maximum.accumulate(x, axis=0))
    wide = x.astype(np.float64)
    assert_close(totals_back, np.cumsum(wide[:, ::-1], axis=1)[:, ::-1])
    h, want = np.zeros(R), np.zeros((R, C))
    for t in range(C):
        h = decay[:, t].astype(np.float64) * h + wide[:, t]
        want[:, t] = h
    assert_close(state, want, rtol=1e-5, atol=1e-5)


@cube.kernel
def scanned_ints(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n, other=0)
    cube.store(out + offs, cube.associative_scan(v, 0, add), mask=offs < n)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint32"])
def test_associative_scan_of_integers_wraps_in_their_dtype(target, rng, dtype):
    n = 200
    x = random_array(rng, n, dtype)
    out = np.zeros(n, np_dtype(dtype))
    if run_or_expect_unsupported(target, [dtype], lambda: scanned_ints[(1,)](
            x, out, n, BLOCK=256, target=target)):
        np.testing.assert_array_equal(out, np.cumsum(x, dtype=np_dtype(dtype)))


def plain_add(a, b):
    return a + b


@cube.func
def returns_one(a, b):
    return a


@cube.func
def returns_one_of_two(a0, a1, b0, b1):
    return a0 + b0


@cube.func
def returns_wider(a, b):
    return (a + b).to(cube.float64)


@cube.func
def stores_on_the_way(a, b):
    cube.device_print("combining", a)
    return a + b


@cube.kernel
def reduce_by_a_plain_function(x):
    cube.store(x, cube.reduce(cube.load(x + cube.arange(0, 8)), 0, plain_add))


@cube.kernel
def reduce_of_two_by_one_result(x):
    v = cube.load(x + cube.arange(0, 8))
    cube.store(x, cube.reduce((v, v), 0, returns_one_of_two)[0])


@cube.kernel
def reduce_of_two_by_a_function_of_two(x):
    v = cube.load(x + cube.arange(0, 8))
    cube.store(x, cube.reduce((v, v), 0, add)[0])


@cube.kernel
def reduce_returning_another_dtype(x):
    cube.store(x, cube.reduce(cube.load(x + cube.arange(0, 8)), 0, returns_wider))


@cube.kernel
def reduce_with_effects(x):
    cube.store(x, cube.reduce(cube.load(x + cube.arange(0, 8)), 0, stores_on_the_way))


@cube.kernel
def reduce_of_two_shapes(x):
    a, b = cube.load(x + cube.arange(0, 8)), cube.load(x + cube.arange(0, 4))
    cube.store(x, cube.reduce((a, b), 0, returns_one)[0])


@cube.kernel
def scan_past_the_axes(x):
    cube.store(x + cube.arange(0, 8), cube.associative_scan(cube.load(x + cube.arange(0, 8)),
                                                            1, add))


@pytest.mark.parametrize("kernel, message", [
    (reduce_by_a_plain_function, "cube.reduce(): combine_fn must be a @cube.func"),
    (reduce_of_two_by_one_result, "returns_one_of_two returns 1 value(s) for 2 input tile(s)"),
    (reduce_of_two_by_a_function_of_two, "add(a, b) cannot take the 4 values it combines for "
                                         "2 input tile(s)"),
    (reduce_returning_another_dtype, "returns_wider returns a float64 scalar where the input "
                                     "is float32"),
    (reduce_with_effects, "stores_on_the_way loads, stores, prints or asserts"),
    (reduce_of_two_shapes, "the input tiles have shapes (8,), (4,)"),
    (scan_past_the_axes, "cube.associative_scan(): axis 1 is not an axis of a tile of shape"),
])
def test_wrong_uses_point_at_the_line(kernel, message):
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(8, np.float32), target="cpu:debug"),
                              message, "test_combine_functions.py")
