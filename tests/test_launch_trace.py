"""cubepy.runtime.trace: recording launches and telling two recordings apart, on every target.

A replay (a CUDA graph) repeats the numbers a kernel was launched with, so the recording keeps
numbers as they were (NumPy scalars too) and arrays only by dtype, and the comparison names
the kernel, the argument and the line outside the library that launched it.
"""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cube
from cubepy.runtime.trace import first_difference, record_launches


@cube.kernel
def scaled(x, out, n, scale, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=mask) * scale, mask=mask)


def run(target, scale, n=8, block=8, grid=None):
    x, out = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    with record_launches() as launches:
        scaled[grid or (cube.cdiv(n, block),)](x, out, n, scale, BLOCK=block, target=target)
    np.testing.assert_array_equal(out, x * np.float32(scale))
    return launches


def test_a_recording_holds_numbers_and_dtypes(target):
    (launch,) = run(target, np.float32(2.0))
    assert launch.kernel == "scaled" and launch.grid == (1,)
    assert dict(launch.arguments) == {"x": ("array", "float32"), "out": ("array", "float32"),
                                      "n": ("int", "8"), "scale": ("float32", "2.0")}
    assert launch.origin.startswith(__file__) and dict(launch.comptime)["BLOCK"] == "8"


def test_same_launches_have_no_difference(target):
    assert first_difference(run(target, 2.0), run(target, 2.0)) is None


def test_a_changed_number_is_named_with_its_line(target):
    difference = first_difference(run(target, 2.0), run(target, 3.0))
    assert difference is not None
    assert difference.startswith("launch 1 (scaled, from ")
    assert "test_launch_trace.py:" in difference
    assert difference.endswith("passed scale=2.0, then scale=3.0")


def test_negative_zero_is_not_zero(target):
    assert "scale=0.0, then scale=-0.0" in first_difference(run(target, 0.0),
                                                            run(target, -0.0))


def test_grids_comptime_values_and_counts_differ(target):
    assert "ran on grid (1,), then on (2,)" in first_difference(
        run(target, 2.0), run(target, 2.0, grid=(2,)))
    assert "had comptime values" in first_difference(run(target, 2.0),
                                                      run(target, 2.0, block=16))
    twice = run(target, 2.0) + run(target, 2.0)
    assert first_difference(run(target, 2.0), twice) == "one run made 1 launches, the next 2"


def test_recordings_do_not_nest(target):
    with record_launches():
        with pytest.raises(RuntimeError, match="already recording"):
            with record_launches():
                pass
    assert run(target, 1.0)  # the outer recording closed cleanly
