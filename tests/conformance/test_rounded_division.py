"""``div_rn``, ``sqrt_rn`` and ``fdiv``, as Triton's: a correctly rounded quotient and square
root (bit for bit against NumPy's, which IEEE arithmetic rounds correctly) on every target
that promises them, subnormals included; an explicit error on wgsl, which does not."""

from __future__ import annotations

import numpy as np
import pytest
from util import assert_points_at_the_line, np_dtype, same_bits

import cubepy as cube

N = 1024


@cube.kernel
def rounded(x, y, quotient, root, by_fdiv, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    inside = offs < n
    a, b = cube.load(x + offs, mask=inside), cube.load(y + offs, mask=inside)
    cube.store(quotient + offs, cube.div_rn(a, b), mask=inside)
    cube.store(root + offs, cube.sqrt_rn(cube.abs(a)), mask=inside)
    cube.store(by_fdiv + offs, cube.fdiv(a, b, ieee_rounding=True), mask=inside)


def rounding_case(rng: np.random.Generator, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Quotients of every size: wide random magnitudes, subnormal results, signed zeros,
    infinities and NaN."""
    info = np.finfo(np_dtype(dtype))
    span = 6 if dtype == "float16" else 20  # binary exponents within the dtype's range

    def magnitudes() -> np.ndarray:
        return rng.standard_normal(N) * np.exp2(rng.integers(-span, span, N))

    x, y = magnitudes().astype(np_dtype(dtype)), magnitudes().astype(np_dtype(dtype))
    x[:8] = [info.tiny, -info.tiny * 3, 0.0, -0.0, np.inf, 1.0, np.nan, info.max]
    y[:8] = [3.0, 7.0, 5.0, 2.0, 2.0, 0.0, 1.0, 0.5]
    return x, y


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_div_rn_and_sqrt_rn_round_correctly(target, rng, dtype):
    x, y = rounding_case(rng, dtype)
    outs = [np.zeros(N, x.dtype) for _ in range(3)]
    launch = lambda: rounded[(4,)](x, y, *outs, N, BLOCK=256, target=target)  # noqa: E731
    if not cube.target_info(target).features >= {"correct_rounding"}:
        with pytest.raises(cube.UnsupportedError, match="does not promise a correctly rounded"):
            launch()
        return
    launch()
    assert_rounded(x, y, outs)


def assert_rounded(x: np.ndarray, y: np.ndarray, outs: list[np.ndarray]) -> None:
    """``rounded``'s outputs (quotient, root, fdiv's quotient), bit for bit with NumPy's
    (float16's quotient through float64, rounded once)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        quotient = x / y if x.dtype != np.float16 else \
            (x.astype(np.float64) / y.astype(np.float64)).astype(x.dtype)
        root = np.sqrt(np.abs(x))
    assert same_bits(outs[0], quotient)
    assert same_bits(outs[1], root)
    assert same_bits(outs[2], quotient)


@cube.kernel
def rounded_on_wgsl(x):
    offs = cube.arange(0, 8)
    cube.store(x + offs, cube.sqrt_rn(cube.load(x + offs)))


def test_wgsl_refuses_at_the_line():
    if "wgsl" not in cube.available_targets():
        pytest.skip("no wgsl target here")
    assert_points_at_the_line(lambda: rounded_on_wgsl[(1,)](np.ones(8, np.float32),
                                                            target="wgsl"),
                              "does not promise a correctly rounded square root",
                              "test_rounded_division.py")
