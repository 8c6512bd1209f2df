"""Helpers for the conformance suite: dtypes, random inputs, poisoned outputs, checks.

Example:
    x = random_array(rng, 100, "float32")
    out = poison(100, "float32")                       # NaN everywhere: unwritten elements show
    if run_or_expect_unsupported(target, ["float32"], lambda: kern[(1,)](x, out, target=target)):
        assert_close(out, expected)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

import ml_dtypes
import numpy as np
import pytest

import cubepy as cube

BF16 = np.dtype(ml_dtypes.bfloat16)

try:
    from scipy.special import erf as erf_ref
except ImportError:  # the GPU test machine has no SciPy; math.erf is correctly rounded enough
    erf_ref = np.vectorize(math.erf, otypes=[np.float64])

SIGNED_INT_DTYPES = ("int8", "int16", "int32", "int64")
UNSIGNED_INT_DTYPES = ("uint8", "uint32")
INT_DTYPES = SIGNED_INT_DTYPES + UNSIGNED_INT_DTYPES
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES
ALL_DTYPES = ("bool",) + NUMERIC_DTYPES

# (rtol, atol) for one rounding step or a few: the spec's per-dtype tolerances.
_TOLERANCE = {
    "float64": (1e-12, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (1e-2, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}


def np_dtype(dtype: str | np.dtype | type) -> np.dtype:
    """The NumPy dtype for a cubepy dtype name ("bfloat16" is ml_dtypes' bfloat16)."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        return BF16
    return np.dtype(dtype)


def dtype_name(dtype: str | np.dtype | type) -> str:
    """ "float32", "bfloat16", "bool", ... for a name, a NumPy dtype or a scalar type."""
    return np_dtype(dtype).name


def tolerance(dtype: str | np.dtype) -> tuple[float, float]:
    """(rtol, atol) that fit a floating dtype."""
    return _TOLERANCE[dtype_name(dtype)]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def random_array(rng: np.random.Generator, shape, dtype, low=None, high=None) -> np.ndarray:
    """Fresh random data of a dtype; integer ranges default to values whose sums stay in range."""
    name = dtype_name(dtype)
    if name == "bool":
        return rng.random(shape) < 0.5
    if name in INT_DTYPES:
        default = {
            "int8": (-50, 50),
            "int16": (-1000, 1000),
            "int32": (-100000, 100000),
            "int64": (-(10**12), 10**12),
            "uint8": (0, 120),
            "uint32": (0, 10**9),
        }[name]
        lo = default[0] if low is None else low
        hi = default[1] if high is None else high
        return rng.integers(lo, hi, size=shape, dtype=np.int64).astype(np_dtype(name))
    lo = -2.0 if low is None else low
    hi = 2.0 if high is None else high
    return rng.uniform(lo, hi, size=shape).astype(np_dtype(name))


def dyadic_array(rng: np.random.Generator, shape, dtype, k: int = 8) -> np.ndarray:
    """Random multiples of 1/8 in [-k/8, k/8]: sums and products of a few are exact in any float."""
    return (rng.integers(-k, k + 1, size=shape) / 8.0).astype(np_dtype(dtype))


def sentinel(dtype):
    """The poison value of a dtype: NaN for floats, -12345 (or the minimum) for signed ints, the
    maximum for unsigned ints."""
    name = dtype_name(dtype)
    if name in FLOAT_DTYPES:
        return np.nan
    if name in UNSIGNED_INT_DTYPES:
        return np.iinfo(np_dtype(name)).max
    if name in SIGNED_INT_DTYPES:
        return max(-12345, int(np.iinfo(np_dtype(name)).min))
    raise ValueError("bool has no sentinel: use poison_for(expected)")


def poison(shape, dtype) -> np.ndarray:
    """An output array full of the dtype's sentinel, so elements a kernel forgot to write show."""
    return np.full(shape, sentinel(dtype), dtype=np_dtype(dtype))


def poison_for(expected: np.ndarray) -> np.ndarray:
    """A poisoned output for an expected result; for bool, the negation of the expected values."""
    if expected.dtype == np.bool_:
        return ~expected
    return poison(expected.shape, expected.dtype)


def assert_close(
    actual: np.ndarray, expected, rtol: float | None = None, atol: float | None = None
) -> None:
    """Floats: within the tolerance of `actual`'s dtype (compared in float64). Others: equal."""
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    name = dtype_name(actual.dtype)
    if name in FLOAT_DTYPES:
        default_rtol, default_atol = tolerance(name)
        np.testing.assert_allclose(
            np.asarray(actual, dtype=np.float64),
            np.asarray(expected, dtype=np.float64),
            rtol=default_rtol if rtol is None else rtol,
            atol=default_atol if atol is None else atol,
        )
    else:
        np.testing.assert_array_equal(actual, expected.astype(actual.dtype))


def _supported_names(target: str, atomic: bool = False) -> set[str]:
    info = cube.target_info(target)
    dtypes = getattr(info, "atomic_dtypes", info.dtypes) if atomic else info.dtypes
    names = {str(getattr(d, "name", d)) for d in dtypes}
    if "int1" in names:
        names.add("bool")
    return names


def target_supports(target: str, dtypes: Iterable) -> bool:
    return all(dtype_name(d) in _supported_names(target) for d in dtypes)


def run_or_expect_unsupported(
    target: str, dtypes: Iterable, launch: Callable[[], object], atomic_dtypes: Iterable = ()
) -> bool:
    """Run `launch` when `target` supports every dtype (and atomics on every one of
    `atomic_dtypes`) and return True. Otherwise assert that the launch raises
    cubepy.UnsupportedError naming the target and an unsupported dtype, and return False (the
    caller then checks nothing more)."""
    names = [dtype_name(d) for d in dtypes]
    missing = [n for n in names if n not in _supported_names(target)]
    missing += [
        dtype_name(d)
        for d in atomic_dtypes
        if dtype_name(d) not in _supported_names(target, atomic=True)
    ]
    if not missing:
        launch()
        return True
    with pytest.raises(cube.UnsupportedError) as info:
        launch()
    message = str(info.value)
    target_name = cube.target_info(target).name
    assert target_name in message or target in message, message
    assert any(re.search(rf"\b{m}\b", message) for m in missing), (missing, message)
    return False


def assert_points_at_the_line(launch: Callable[[], object], message: str, test_file: str
                              ) -> None:
    """``launch`` raises a ``cube.CompileError`` that says ``message``, names ``test_file``
    (where the kernel is written) and shows the line with a caret."""
    with pytest.raises(cube.CompileError) as info:
        launch()
    text = str(info.value)
    assert message in text and test_file in text and "^" in text, text


def allows_flushed_subnormals(target: str) -> bool:
    """Whether ``target`` may read subnormal inputs, and give subnormal results, as zero: WGSL
    lets drivers do so (lavapipe and NVIDIA's do; docs/language.md, "Where targets differ").
    The other targets keep subnormals."""
    return target == "wgsl"


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit (-0.0 included), but a NaN only as a NaN: storing a float16 NaN through a
    float32 register may change its payload (NVIDIA's Vulkan gives the canonical one)."""
    width = np.dtype(f"uint{want.itemsize * 8}")
    floats = want.dtype.kind == "f"
    nan = np.isnan(want.astype(np.float64)) if floats else np.zeros(want.shape, bool)
    return np.array_equal(got.view(width)[~nan], want.view(width)[~nan]) and \
        bool(np.isnan(got.astype(np.float64)[nan]).all())
