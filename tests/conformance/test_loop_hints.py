"""``cube.range``: a loop with Triton's scheduling hints (flatten, warp_specialize,
num_stages). Every target runs its iterations as ``range``'s; Triton's GPU code passes the
hints to ``tl.range``; wrong hints are compile errors at the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from util import assert_close, assert_points_at_the_line, poison, random_array

import cubepy as cube
from cubepy.errors import CompileError

BLOCK = 32


@cube.kernel
def grid_stride_sum(x, out, rows, cols, BLOCK: cube.Comptime[int],
                    FLATTEN: cube.Comptime[bool]):
    """out[r] = sum of row r, each cube taking every cube_count-th row (a persistent loop
    around a loop over the row's blocks, as a persistent matmul has)."""
    for r in cube.range(cube.cube_pos(0), rows, cube.cube_count(0), flatten=FLATTEN):
        acc = cube.zeros((BLOCK,), cube.float32)
        for c0 in cube.range(0, cols, BLOCK, num_stages=2):
            offs = c0 + cube.arange(0, BLOCK)
            acc += cube.load(x + r * cols + offs, mask=offs < cols, other=0.0)
        cube.store(out + r, cube.sum(acc, axis=0))


@pytest.mark.parametrize("flatten", [False, True])
def test_hinted_loops_iterate_as_range(target, rng, flatten):
    rows, cols = 37, 100
    x = random_array(rng, (rows, cols), "float32")
    out = poison(rows, "float32")
    grid_stride_sum[(5,)](x, out, rows, cols, BLOCK=BLOCK, FLATTEN=flatten, target=target)
    assert_close(out, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_range_runs_on_the_host():
    assert list(cube.range(3)) == [0, 1, 2]
    assert list(cube.range(1, 9, 3, flatten=True, num_stages=2)) == [1, 4, 7]
    assert cube.range(0, 4, warp_specialize=True).hints == {"warp_specialize": True}


def test_triton_gpu_code_passes_the_hints_to_tl_range():
    pytest.importorskip("triton")
    from cubepy.backends.triton.codegen import generate

    x = np.zeros((4, 64), np.float32)
    compiled, _, _ = grid_stride_sum.compiled(
        (x, np.zeros(4, np.float32), 4, 64), {"BLOCK": BLOCK, "FLATTEN": True,
                                              "target": "triton"})
    gpu = generate(compiled.fn, interpret=False).text
    assert gpu.count("tl.range(") == 2
    assert ", flatten=True)" in gpu and ", num_stages=2)" in gpu
    interpreted = generate(compiled.fn, interpret=True).text
    assert "tl.range(" not in interpreted  # the interpreter has no pipelines to hint


@cube.kernel
def unknown_hint(x, n):
    for i in cube.range(0, n, unroll=4):
        cube.store(x + i, 1.0)


@cube.kernel
def runtime_hint(x, n):
    for i in cube.range(0, n, num_stages=n):
        cube.store(x + i, 1.0)


@cube.kernel
def wrong_hint_type(x, n):
    for i in cube.range(0, n, flatten=1):
        cube.store(x + i, 1.0)


@pytest.mark.parametrize("kernel,message", [
    (unknown_hint, "cube.range() has no hint 'unroll'"),
    (runtime_hint, "num_stages must be known at compile time"),
    (wrong_hint_type, "flatten must be True or False, got 1"),
])
def test_hint_errors_point_at_the_line(kernel, message):
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(4, np.float32), 4, target="cpu"),
                              message, "test_loop_hints.py")


def test_plain_range_still_takes_no_keywords():
    @cube.kernel
    def keyword_range(x, n):
        for i in range(0, n, step=1):
            cube.store(x + i, 1.0)

    with pytest.raises(CompileError, match=r"range\(\) takes 1 to 3 positional arguments"):
        keyword_range[(1,)](np.zeros(4, np.float32), 4, target="cpu")


def test_aot_flattened_loops_compile_for_sm90(monkeypatch):
    """The hints reach Triton's compiler (this Triton's, and 3.6 on the H200 in its GPU run)."""
    pytest.importorskip("triton")
    monkeypatch.setenv("CUBEPY_TRITON_AOT", "cuda:90")
    from cubepy import config

    config.reload()
    try:
        fresh = cube.kernel(grid_stride_sum.fn)  # nothing cached from other tests
        x = np.zeros((4, 64), np.float32)
        compiled, _, _ = fresh.compiled((x, np.zeros(4, np.float32), 4, 64),
                                        {"BLOCK": BLOCK, "FLATTEN": True, "target": "triton"})
        assert ".entry" in compiled.aot["cuda:90"].asm["ptx"]
    finally:
        monkeypatch.undo()
        config.reload()
