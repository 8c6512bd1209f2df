"""The NumPy reference for random ops: Threefry-2x32-20 in NumPy uint32 arithmetic.

The same bits and the same arithmetic as ``kernels/random.py`` (see its docstring), so the
cubepy backends match this one exactly (up to one rounding where a target fuses a multiply
and an add, and a few ulp where ``normal`` calls ``log1p``/``cos``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cubepy.ir.dtypes import DType
from kernels.layout import View
from kernels.random import (
    EXP2_M24,
    EXP2_M32,
    EXP2_M53,
    MASK32,
    MASK64,
    PARITY,
    ROTATIONS,
    ROUNDS,
    TWO_PI,
    Stream,
    dropout_threshold,
    largest_below,
    register,
)

from ..ops.random import RandomOps
from .core import NumpyCore


def threefry2x32(c0: np.ndarray, c1: np.ndarray, k0: int, k1: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds of the uint32 counter words ``c0, c1`` under the key
    ``(k0, k1)``.

    Example:
        >>> [hex(w[0]) for w in threefry2x32(np.zeros(1, np.uint32), np.zeros(1, np.uint32),
        ...                                  0, 0)]
        ['0x6b200159', '0x99ba4efe']
    """
    keys = [np.uint32(k0), np.uint32(k1), np.uint32(k0 ^ k1 ^ PARITY)]
    x0 = c0.astype(np.uint32) + keys[0]  # uint32 arrays wrap around, as the kernels do
    x1 = c1.astype(np.uint32) + keys[1]
    for r in range(ROUNDS):
        distance = ROTATIONS[r % 8]
        x0 = x0 + x1
        x1 = ((x1 << np.uint32(distance)) | (x1 >> np.uint32(32 - distance))) ^ x0
        if r % 4 == 3:
            block = r // 4
            x0 = x0 + keys[(block + 1) % 3]
            x1 = x1 + keys[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def random_words(stream: Stream, n: int, skip: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The two words of counters ``stream.counter + skip + i`` for ``i < n``."""
    start = np.uint64((stream.counter + skip) & MASK64)
    counters = start + np.arange(n, dtype=np.uint64)  # wraps modulo 2**64
    seed = stream.seed & MASK64
    return threefry2x32((counters & np.uint64(MASK32)).astype(np.uint32),
                        (counters >> np.uint64(32)).astype(np.uint32),
                        seed & MASK32, seed >> 32)


def unit_float32(w: np.ndarray) -> np.ndarray:
    return (w >> np.uint32(8)).astype(np.float32) * np.float32(EXP2_M24)


def unit_float64(w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    high = (w0 >> np.uint32(5)).astype(np.float64) * 67108864.0
    return (high + (w1 >> np.uint32(6)).astype(np.float64)) * EXP2_M53


class NumpyRandom(NumpyCore, RandomOps):
    def _absolute(self, stream: Stream) -> Stream:
        """``stream`` with a device state read back (the kernels read it on the device)."""
        return stream if stream.state is None else stream.absolute(self.array(stream.state))

    def random_uniform(self, shape: Sequence[int], low: float, high: float, dtype: DType,
                       stream: Stream) -> View:
        stream = self._absolute(stream)
        n = int(np.prod(shape, dtype=np.int64))
        w0, w1 = random_words(stream, n)
        ct = register(dtype).numpy.type
        u = unit_float64(w0, w1) if ct is np.float64 else unit_float32(w0)
        v = np.minimum(ct(low) + u * ct(high - low), ct(largest_below(high, dtype)))
        return self.result(v.reshape(shape), dtype)

    def random_normal(self, shape: Sequence[int], mean: float, std: float, dtype: DType,
                      stream: Stream) -> View:
        stream = self._absolute(stream)
        n = int(np.prod(shape, dtype=np.int64))
        w0, w1 = random_words(stream, n)
        ct = register(dtype).numpy.type
        if ct is np.float64:
            v0, v1 = random_words(stream, n, skip=n)
            v, u2 = unit_float64(w0, w1), unit_float64(v0, v1)
        else:
            v, u2 = unit_float32(w0), unit_float32(w1)
        z = np.sqrt(ct(-2.0) * np.log1p(-v)) * np.cos(ct(TWO_PI) * u2)
        return self.result((ct(mean) + ct(std) * z).reshape(shape), dtype)

    def random_randint(self, shape: Sequence[int], low: int, high: int, dtype: DType,
                       stream: Stream) -> View:
        stream = self._absolute(stream)
        n = int(np.prod(shape, dtype=np.int64))
        w0, w1 = random_words(stream, n)
        span = high - low
        if dtype.name == "int64":
            bits = ((w0 >> np.uint32(1)).astype(np.int64) << 32) | w1.astype(np.int64)
            v = np.int64(low) + bits % np.int64(span)
        else:
            offset = w0 if span == 2**32 else w0 % np.uint32(span)
            v = (offset + np.uint32(low & MASK32)).astype(dtype.numpy)  # wraps, then truncates
        return self.result(v.reshape(shape), dtype)

    def random_bernoulli(self, p: View, dtype: DType, stream: Stream) -> View:
        stream = self._absolute(stream)
        ct = register(p.dtype).numpy.type
        prob = self.array(p).astype(ct).reshape(-1)
        w0, _ = random_words(stream, prob.size)
        u = w0.astype(np.float64) * EXP2_M32 if ct is np.float64 else unit_float32(w0)
        return self.result((u < prob).reshape(p.shape), dtype)

    def random_dropout(self, x: View, p: float, stream: Stream) -> View:
        stream = self._absolute(stream)
        ct = register(x.dtype).numpy.type
        values = self.array(x).astype(ct).reshape(-1)
        w0, _ = random_words(stream, values.size)
        keep = (w0 >> np.uint32(8)) >= np.uint32(dropout_threshold(p))
        scale = ct(1.0 / (1.0 - p) if p < 1 else 0.0)
        out = np.where(keep, values * scale, ct(0))
        return self.result(out.reshape(x.shape), x.dtype)
