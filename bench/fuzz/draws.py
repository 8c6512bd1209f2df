"""Random input values per dtype, mixed with that dtype's edge values."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .dtypes import PREC, int_range, is_i, npd


def float_specials(name: str) -> list[float]:
    info = ml_dtypes.finfo(npd(name))
    tiny, smallest = float(info.tiny), float(info.smallest_subnormal)
    big = float(info.max)
    return [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, big, -big, tiny,
            -tiny, smallest, -smallest, 3 * smallest, tiny / 2, 1.5, -2.5, 3.0, 7.0, 0.1, 100.0,
            65.0, -65.0, 1e4, 2.0 ** 24, 2.0 ** 24 + 2, 1.0 + 2.0 ** -(PREC[name] - 1),
            1.0 - 2.0 ** -PREC[name]]


def draw_values(rng: np.random.Generator, name: str, size: int, scalar: bool = False
                ) -> np.ndarray:
    """Random values of a dtype, mixed with that dtype's edge values."""
    if name == "bool":
        return rng.random(size) < 0.5
    if is_i(name):
        lo, hi = int_range(name)
        style = rng.integers(0, 3)
        if style == 0:
            v = rng.integers(-10, 11, size)
        elif style == 1:
            v = rng.integers(max(lo, -1000), min(hi, 1000) + 1, size)
        else:
            v = rng.integers(lo, hi, size, dtype=np.int64, endpoint=True) if name != "uint32" \
                else rng.integers(0, 2**32, size)
        edges = np.array([0, 1, -1, 2, lo, hi, lo + 1, hi - 1, 7, -8, 31, 32, 33, 64],
                         dtype=object)
        pick = rng.random(size) < (0.3 if not scalar else 0.5)
        e = rng.choice(edges, size)
        v = np.where(pick, e, v.astype(object))
        v = np.array([int(t) for t in v], dtype=object)
        v = np.where((v < lo) | (v > hi), 0, v)
        return v.astype(np.int64).astype(npd(name)) if name != "uint32" else \
            v.astype(np.int64).astype(np.uint32)
    style = rng.integers(0, 4)
    if style == 0:
        v = rng.uniform(-10, 10, size)
    elif style == 1:
        v = rng.integers(-8, 9, size) / 4.0
    elif style == 2:
        span = {"float16": 5, "bfloat16": 38, "float32": 38, "float64": 300}[name]
        v = np.sign(rng.uniform(-1, 1, size)) * 10.0 ** rng.uniform(-span, span, size)
    else:
        v = rng.normal(0, 3, size)
    pick = rng.random(size) < (0.3 if not scalar else 0.5)
    specials = np.array(float_specials(name) + [0.0, -0.0, np.inf, -np.inf, np.nan] * 3)
    v = np.where(pick, rng.choice(specials, size), v)
    near = rng.random(size) < 0.05
    w = rng.integers(-5, 6, size).astype(np.float64)
    v = np.where(near, np.nextafter(w, w + rng.choice([-1.0, 1.0], size)), v)
    with np.errstate(all="ignore"):
        return v.astype(npd(name))
