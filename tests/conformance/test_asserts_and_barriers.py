"""``device_assert`` (and Python's ``assert`` on run-time values), ``debug_barrier`` and
``assume``, spelled as Triton's. An assert stops the launch with the kernel's file, line and
message where the target can check it (cpu, cpu:debug, Triton's interpreter) and is an
announced no-op on wgsl; a barrier orders a cube's stores before its loads of what other
lanes stored; a promise changes no result."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from util import assert_points_at_the_line

import cubepy as cube

CHECKED = ("cpu", "cpu:debug", "triton")


def gather_checking_indices(x, index, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    inside = offs < n
    i = cube.load(index + offs, mask=inside, other=0)
    cube.device_assert((i >= 0) & (i < n), "index out of range", mask=inside)
    cube.store(out + offs, cube.load(x + i, mask=inside), mask=inside)


checked_gather = cube.kernel(gather_checking_indices)


@cube.kernel
def checked_with_python_assert(x, out, n, BLOCK: cube.Comptime[int]):
    assert n <= BLOCK, "n past the block"
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n, other=0) * 2, mask=offs < n)


def _run_checked(target, launch):
    """``launch()`` on ``target``; on wgsl, with the warning that says the asserts go
    unchecked (and no error)."""
    if target in CHECKED:
        return launch()
    with pytest.warns(cube.UncheckedAssertWarning, match="not checked on target 'wgsl'"):
        return launch()


def test_device_assert_passes_quietly_when_it_holds(target, rng):
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    index = rng.integers(0, n, n).astype(np.int32)
    out = np.zeros(n, np.float32)
    _run_checked(target, lambda: checked_gather[(4,)](x, index, out, n, BLOCK=32,
                                                      target=target))
    np.testing.assert_array_equal(out, x[index])


def test_device_assert_stops_the_launch_naming_the_line(target, rng):
    n = 100
    x = np.zeros(n, np.float32)
    index = rng.integers(0, n, n).astype(np.int32)
    index[57] = n + 5  # one lane out of range
    out = np.zeros(n, np.float32)
    if target not in CHECKED:  # wgsl warns (once per compile: a fresh kernel) and runs on
        fresh = cube.kernel(gather_checking_indices)
        _run_checked(target, lambda: fresh[(4,)](x, index, out, n, BLOCK=32, target=target))
        return
    with pytest.raises(AssertionError) as info:
        checked_gather[(4,)](x, index, out, n, BLOCK=32, target=target)
    message = str(info.value)
    assert "test_asserts_and_barriers.py:24: device_assert failed: index out of range" in \
        message, message


def test_python_assert_on_run_time_values_is_a_device_assert(target):
    x, out = np.ones(64, np.float32), np.zeros(64, np.float32)
    _run_checked(target, lambda: checked_with_python_assert[(1,)](x, out, 40, BLOCK=64,
                                                                   target=target))
    np.testing.assert_array_equal(out[:40], 2.0)
    if target in CHECKED:
        with pytest.raises(AssertionError, match="n past the block"):
            checked_with_python_assert[(1,)](x, out, 80, BLOCK=64, target=target)


@cube.kernel
def reversed_through_memory(x, scratch, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(scratch + offs, cube.load(x + offs) + 1.0)
    cube.debug_barrier()  # each lane reads what another lane stored
    cube.store(out + offs, cube.load(scratch + (BLOCK - 1 - offs)))


def test_debug_barrier_orders_stores_before_loads(target, rng):
    x = rng.standard_normal(256).astype(np.float32)
    scratch, out = np.zeros(256, np.float32), np.zeros(256, np.float32)
    reversed_through_memory[(1,)](x, scratch, out, BLOCK=256, target=target)
    np.testing.assert_array_equal(out, (x + 1.0)[::-1])


@cube.kernel
def promised(x, out, n, stride, BLOCK: cube.Comptime[int]):
    cube.assume(stride > 0)
    cube.assume(n % 4 == 0)
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs * stride, mask=offs < n, other=0.0), mask=offs < n)


def test_assume_changes_no_result(target, rng):
    x = rng.standard_normal(128).astype(np.float32)
    out = np.zeros(64, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no target warns about a promise
        promised[(1,)](x, out, 64, 2, BLOCK=64, target=target)
    np.testing.assert_array_equal(out, x[::2])


@cube.kernel
def assert_false_at_compile_time(x, N: cube.Comptime[int]):
    cube.device_assert(N > 4, "N must pass 4")
    cube.store(x, 1.0)


@cube.kernel
def assert_with_a_number_message(x, n):
    assert n > 0, 42
    cube.store(x, 1.0)


@cube.kernel
def assert_of_pointers(x):
    cube.device_assert(x + cube.arange(0, 4))


@cube.kernel
def assume_of_a_tile(x):
    cube.assume(cube.arange(0, 4) < 8)
    cube.store(x, 1.0)


@pytest.mark.parametrize("kernel, message", [
    (assert_false_at_compile_time, "device_assert() of a condition false at compile time: "
                                   "N must pass 4"),
    (assert_with_a_number_message, "the message of an `assert` on run-time values must be a "
                                   "string"),
    (assert_of_pointers, "cube.device_assert() of a pointer tile"),
    (assume_of_a_tile, "cube.assume() takes a scalar condition, got a bool tile"),
])
def test_wrong_uses_point_at_the_line(kernel, message):
    x = np.zeros(4, np.float32)
    args = {assert_false_at_compile_time: {"N": 2}}.get(kernel, {})
    extra = (3,) if kernel is assert_with_a_number_message else ()
    assert_points_at_the_line(lambda: kernel[(1,)](x, *extra, **args, target="cpu:debug"),
                              message, "test_asserts_and_barriers.py")
