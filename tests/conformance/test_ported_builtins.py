"""Builtins spelled as Triton's, so that Triton kernels port by renaming ``tl.`` to ``cube.``:
the compiler hints ``multiple_of``, ``max_contiguous`` and ``max_constancy`` (Triton's GPU
code carries them; every target computes the same values with or without them), ``clamp``
(NumPy's ``clip``, NaN included) and ``zeros_like``. Wrong uses are compile errors at the
user's line."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    NUMERIC_DTYPES,
    assert_close,
    assert_points_at_the_line,
    np_dtype,
    poison,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube

ROWS, COLS = 5, 48
BLOCK_R, BLOCK_C = 8, 16


@cube.kernel
def hinted_copy(x, out, rows, cols, BLOCK_R: cube.Comptime[int], BLOCK_C: cube.Comptime[int]):
    """out = 2 * x over a 2-D array, every offset annotated as a Triton kernel would be."""
    r0 = cube.multiple_of(cube.cube_pos(0) * BLOCK_R, BLOCK_R)
    c0 = cube.multiple_of(cube.cube_pos(1) * BLOCK_C, BLOCK_C)
    rs = cube.max_constancy(r0 + cube.arange(0, BLOCK_R), 1)
    cs = cube.max_contiguous(cube.multiple_of(c0 + cube.arange(0, BLOCK_C), BLOCK_C), BLOCK_C)
    offs = cube.multiple_of(rs[:, None] * cols + cs[None, :], (1, BLOCK_C))
    mask = (rs[:, None] < rows) & (cs[None, :] < cols)
    ptrs = cube.max_contiguous(x + offs, (1, BLOCK_C))
    cube.store(out + offs, cube.load(ptrs, mask=mask, other=0.0) * 2.0, mask=mask)


def _hinted_copy_args(rng):
    x = random_array(rng, (ROWS, COLS), "float32")
    grid = (cube.cdiv(ROWS, BLOCK_R), cube.cdiv(COLS, BLOCK_C))
    return x, grid


def test_hints_leave_the_values_unchanged(target, rng):
    x, grid = _hinted_copy_args(rng)
    out = poison(x.shape, "float32")
    hinted_copy[grid](x, out, ROWS, COLS, BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, target=target)
    np.testing.assert_array_equal(out, x * 2.0)


def test_triton_gpu_code_carries_the_hints_and_the_others_drop_them(rng):
    pytest.importorskip("triton")
    from cubepy.backends.triton.codegen import generate

    x, _ = _hinted_copy_args(rng)
    args = (x, np.empty_like(x), ROWS, COLS)
    compiled, _, _ = hinted_copy.compiled(args, {"BLOCK_R": BLOCK_R, "BLOCK_C": BLOCK_C,
                                                 "target": "triton"})
    gpu = generate(compiled.fn, interpret=False).text
    assert gpu.count("tl.multiple_of(") == 4 and gpu.count("tl.max_contiguous(") == 2
    assert f", [1, {BLOCK_C}])" in gpu
    assert "tl.max_constancy(" in gpu
    cpu = hinted_copy.source("cpu", *args, BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C)
    assert "multiple_of" not in cpu and "max_contiguous" not in cpu


def test_hints_compile_ahead_of_time_for_sm90(monkeypatch, rng):
    """Triton's compiler takes the hints as cubepy writes them (3.6 on the H200 too)."""
    pytest.importorskip("triton")
    monkeypatch.setenv("CUBEPY_TRITON_AOT", "cuda:90")
    from cubepy import config

    config.reload()
    try:
        fresh = cube.kernel(hinted_copy.fn)  # nothing cached from other tests
        x, _ = _hinted_copy_args(rng)
        compiled, _, _ = fresh.compiled((x, np.empty_like(x), ROWS, COLS),
                                        {"BLOCK_R": BLOCK_R, "BLOCK_C": BLOCK_C,
                                         "target": "triton"})
        assert ".entry" in compiled.aot["cuda:90"].asm["ptx"]
    finally:
        monkeypatch.undo()
        config.reload()


@cube.kernel
def hint_of_zero(x, n):
    cube.store(x + cube.multiple_of(cube.arange(0, 16), 0), 1.0, mask=cube.arange(0, 16) < n)


@cube.kernel
def hint_of_wrong_rank(x, n):
    offs = cube.max_contiguous(cube.arange(0, 16), (16, 16))
    cube.store(x + offs, 1.0, mask=offs < n)


@cube.kernel
def hint_at_run_time(x, n):
    offs = cube.multiple_of(cube.arange(0, 16), n)
    cube.store(x + offs, 1.0, mask=offs < n)


@cube.kernel
def hint_of_floats(x, n):
    v = cube.max_constancy(cube.load(x + cube.arange(0, 16)), 16)
    cube.store(x + cube.arange(0, 16), v)


@cube.kernel
def zeros_like_a_pointer(x, n):
    cube.store(x + cube.arange(0, 16), cube.zeros_like(x + cube.arange(0, 16)))


@pytest.mark.parametrize("kernel,message", [
    (hint_of_zero, "cube.multiple_of() needs positive compile-time ints, got 0"),
    (hint_of_wrong_rank, "max_contiguous needs 1 value (one per axis of the (16,) tile), got 2"),
    (hint_at_run_time, "cube.multiple_of() needs positive compile-time ints, got a run-time"),
    (hint_of_floats, "max_constancy applies to integers and pointers, not float32"),
    (zeros_like_a_pointer, "cube.zeros_like() needs a tile or a run-time scalar, got a pointer"),
])
def test_wrong_uses_point_at_the_line(kernel, message):
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(16, np.float32), 16, target="cpu"),
                              message, "test_ported_builtins.py")


@cube.kernel
def clamp_kernel(x, lo, hi, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    low = cube.load(lo + offs, mask=mask)
    cube.store(out + offs, cube.clamp(v, low, cube.load(hi)), mask=mask)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_clamp_is_numpys_clip(target, rng, dtype):
    n = 300
    x = random_array(rng, n, dtype)
    bounds = np.sort(random_array(rng, 2, dtype))
    low = np.minimum(random_array(rng, n, dtype), bounds[1])  # every low bound <= the high one
    if np.dtype(np_dtype(dtype)).kind == "f":
        x[::7] = np.nan  # NaN stays NaN, as in np.clip
    high = bounds[1:2].copy()
    out = poison(n, dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: clamp_kernel[(cube.cdiv(n, 64),)](
            x, low, high, out, n, BLOCK=64, target=target)):
        expected = np.clip(x.astype(np.float64), low.astype(np.float64), high[0])
        np.testing.assert_array_equal(out.astype(np.float64), expected)


@cube.kernel
def clamp_literals(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    v = cube.load(x + offs, mask=offs < n)
    zero = cube.zeros_like(v)
    scalar_zero = cube.zeros_like(n)
    cube.store(out + offs, cube.clamp(v, -0.5, 0.5) + zero + scalar_zero, mask=offs < n)


def test_clamp_by_literals_and_zeros_like(target, rng):
    n = 200
    x = random_array(rng, n, "float32", -2.0, 2.0)
    out = poison(n, "float32")
    clamp_literals[(cube.cdiv(n, 64),)](x, out, n, BLOCK=64, target=target)
    assert_close(out, np.clip(x, -0.5, 0.5), rtol=0, atol=0)
