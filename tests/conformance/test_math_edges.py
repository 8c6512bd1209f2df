"""Math at the edges of its domain, the same on every target as NumPy: found by differential
review (the cpu target's fastmath turned rsqrt(0) and rsqrt(inf) into NaN)."""

from __future__ import annotations

import numpy as np
import pytest
from util import poison, run_or_expect_unsupported

import cubepy as cube

SPECIAL = [0.0, -0.0, np.inf, 4.0, np.nan, 7.0, 1e-30, 0.25]


@cube.kernel
def rsqrt_lanes_kernel(x, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)
    cube.store(out + offs, cube.rsqrt(cube.load(x + offs)))


@cube.kernel
def rsqrt_tile_kernel(x, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)[:, None] * B + cube.arange(0, B)[None, :]
    cube.store(out + offs, cube.rsqrt(cube.load(x + offs)))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # NumPy under Triton's
@pytest.mark.parametrize(("kernel", "dtype"),  # interpreter
                         [(rsqrt_lanes_kernel, "float16"), (rsqrt_lanes_kernel, "float32"),
                          (rsqrt_lanes_kernel, "float64"), (rsqrt_tile_kernel, "float32")])
def test_rsqrt_of_zero_and_infinity(target, dtype, kernel):
    # 1-D tiles run as scalar lane loops on cpu, 2-D ones as array expressions: both paths
    # (one dtype for the second: a 2-D float16 kernel costs ~10 s of Numba compile in CI)
    x = np.tile(np.array(SPECIAL, dtype), 8)
    out = poison(x.shape, dtype)
    block = 64 if kernel is rsqrt_lanes_kernel else 8
    if run_or_expect_unsupported(target, [dtype],
                                 lambda: kernel[(1,)](x, out, B=block, target=target)):
        with np.errstate(divide="ignore", invalid="ignore"):
            want = (1 / np.sqrt(x.astype(np.float64))).astype(dtype)
        special = ~np.isfinite(want) | (want == 0)
        np.testing.assert_array_equal(out[special], want[special])  # signs of inf too
        np.testing.assert_allclose(out[~special], want[~special], rtol=2e-3 if dtype ==
                                   "float16" else 1e-6)


@cube.kernel
def tanh_kernel(x, out, B: cube.Comptime[int]):
    offs = cube.arange(0, B)
    cube.store(out + offs, cube.tanh(cube.load(x + offs)))


TANH_ARGUMENTS = [1e-30, 5.3e-14, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 0.2999, 0.3001,
                  0.5, 1.0, 2.0, 5.0, 9.0, 20.0, 100.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tanh_within_a_few_ulp_for_small_arguments(target, dtype):
    """tanh(x) of small |x| is x to within an ulp or so: computed as (1 - e^-2x) / (1 + e^-2x)
    it cancelled (tanh(1e-8) gave 0 on Triton's interpreter and 3e-8 on lavapipe)."""
    x = np.array(TANH_ARGUMENTS + [-v for v in TANH_ARGUMENTS] + [0.0] * 28, dtype)
    out = poison(64, dtype)
    if run_or_expect_unsupported(target, [dtype], lambda: tanh_kernel[(1,)](
            x, out, B=64, target=target)):
        want = np.tanh(x.astype(np.float64))
        ulp = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
        # 4 ulp: the exp of the large-argument form and its division, a couple each
        assert np.all(np.abs(out - want) <= 4 * ulp), np.abs(out - want) / ulp
