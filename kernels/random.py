"""Random numbers: counter-based Threefry-2x32 (20 rounds) in uint32 arithmetic.

Every random bit is a pure function of a 64-bit key (the seed) and a 64-bit counter, computed
with uint32 additions, xors and shifts only (no multiply-high: ``cube.umulhi`` costs 16-bit
halves on ``wgsl``), so ``cpu``, ``triton`` and ``wgsl`` produce the same bits, and NumPy can
reproduce them (``burn.backend.numpy.random``). The generator is Threefry-2x32-20 of Salmon
et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11), the one JAX uses by default;
it passes TestU01's BigCrush.

Counters: a launch is given a ``Stream`` (key, first counter). Draw ``j`` of element ``i`` of
an ``n``-element result uses the counter ``stream.counter + j * n + i``; one draw gives two
32-bit words, and ``draws_per_element`` says how many draws an op takes (so a caller advances
its generator by ``draws * n``).

Bits to values (the NumPy reference does the same arithmetic):

- float32 (and float16/bfloat16, computed in float32): ``u = (w0 >> 8) * 2**-24`` in
  ``[0, 1)``; float64: 53 bits from both words.
- ``uniform``: ``low + u * (high - low)``, then limited to the largest value of the dtype below
  ``high`` so rounding never reaches ``high``.
- ``normal``: Box-Muller ``sqrt(-2 log1p(-v)) * cos(2 pi u2)`` with ``v`` from ``w0`` and
  ``u2`` from ``w1`` (float64: one draw each, 53 bits).
- ``bernoulli``: ``u < p`` (float64 ``p``: ``u = w0 * 2**-32``), exact on every target.
- ``randint``: ``low + w0 % span`` for 32-bit and smaller dtypes (bias at most
  ``span / 2**32``), ``low + r % span`` with 63 random bits ``r`` for int64.
- ``dropout``: keeps ``x * scale`` when ``(w0 >> 8) >= ceil(p * 2**24)``, the same test as
  ``not (u < p)`` done in integers.

Example:
    >>> ctx = Context("cpu", lambda n, dtype: np.empty(n, dtype.numpy))  # doctest: +SKIP
    >>> stream = Stream(seed=0, counter=0)
    >>> v = uniform(ctx, (2, 3), 0.0, 1.0, cube.float32, stream)  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import cubepy as cube
from cubepy.ir.dtypes import DType

from . import mathlib
from .layout import INT32_MAX, Context, View, launch_plan, scalar
from .strided import element_offset, layout_args, operand_args

MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF
#: Threefry's key-schedule constant (Skein's C240 truncated to 32 bits)
PARITY = 0x1BD11BDA
#: Threefry-2x32's rotation distances, round r uses ROTATIONS[r % 8]
ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
ROUNDS = 20
TWO_PI = 6.283185307179586
EXP2_M24 = 2.0**-24
EXP2_M32 = 2.0**-32
EXP2_M53 = 2.0**-53


@dataclass(frozen=True)
class Stream:
    """Where a launch draws from: a 64-bit key (the seed) and its first 64-bit counter.

    With a ``state`` (a uint32 view of four words: the key's low and high word, a base
    counter's low and high word), the kernels read the key and the base counter from device
    memory, ``counter`` counts from that base, and ``seed`` is not used: a launch then takes
    the same numbers at every training step, and a replayed CUDA graph draws new values when
    the host rewrites the state (``burn.train.CapturedStep``).
    """

    seed: int
    counter: int
    state: Any = field(default=None, compare=False)

    def key_words(self) -> tuple[np.uint32, np.uint32, np.uint32]:
        """The key as two uint32 words plus Threefry's third schedule word (zeros with a
        ``state``: the kernel reads the key there)."""
        if self.state is not None:
            return np.uint32(0), np.uint32(0), np.uint32(0)
        k0, k1 = self.seed & MASK32, (self.seed >> 32) & MASK32
        return np.uint32(k0), np.uint32(k1), np.uint32(k0 ^ k1 ^ PARITY)

    def absolute(self, words: np.ndarray) -> Stream:
        """The stream without a state, given the state's four words as read back."""
        k0, k1, base_lo, base_hi = (int(w) for w in words)
        base = base_lo | (base_hi << 32)
        return Stream(k0 | (k1 << 32), (base + self.counter) & MASK64)

    def counter_words(self, skip: int) -> tuple[np.uint32, np.uint32]:
        """The counter ``skip`` past the first, as (low, high) uint32 words."""
        c = (self.counter + skip) & MASK64
        return np.uint32(c & MASK32), np.uint32(c >> 32)


def draws_per_element(op: str, dtype: DType) -> int:
    """How many counters (two 32-bit words each) ``op`` uses per element of ``dtype``."""
    return 2 if op == "normal" and dtype == cube.float64 else 1


def register(dtype: DType) -> DType:
    """The float dtype values are computed in (16-bit floats in float32)."""
    return cube.float64 if dtype == cube.float64 else cube.float32


def largest_below(value: float, dtype: DType) -> float:
    """The largest value of float ``dtype`` strictly below ``value``."""
    x = np.asarray(value, np.float64).astype(dtype.numpy)
    down = np.asarray(-np.inf, dtype.numpy)
    while float(x) >= value:
        x = np.nextafter(x, down)
    return float(x)


def dropout_threshold(p: float) -> int:
    """Elements whose top 24 bits are at least this are kept: probability ``1 - p``."""
    return math.ceil(p * 2**24)


# ---------------------------------------------------------------- bits (inlined helpers)


@cube.func
def wrap32(x):
    # A no-op in uint32, yet needed: the cpu target's tile (NumPy array) code path evaluates a
    # fused uint32 expression in 64 bits, so a sum or left shift keeps its carry bits until
    # the next store (a cubepy bug). Compilers drop the mask everywhere else.
    return x & MASK32


@cube.func
def rotl(x, distance):
    return wrap32(x << distance) | (x >> (32 - distance))


@cube.func
def threefry2x32(c0, c1, k0, k1, k2):
    # Five blocks of four add-rotate-xor rounds, each block followed by a key injection;
    # unrolled, so rotation distances and key words are compile-time picks, and the kernel has
    # no control flow (the cpu target then compiles it as one fast scalar loop).
    keys = (k0, k1, k2)
    x0 = wrap32(c0 + k0)
    x1 = wrap32(c1 + k1)
    for block in cube.static_range(ROUNDS // 4):
        for r in cube.static_range(4):
            x0 = wrap32(x0 + x1)
            x1 = rotl(x1, ROTATIONS[4 * (block % 2) + r]) ^ x0
        x0 = wrap32(x0 + keys[(block + 1) % 3])
        x1 = wrap32(x1 + keys[(block + 2) % 3] + (block + 1))
    return x0, x1


@cube.func
def random_words(idx, start_lo, start_hi, k0, k1, k2):
    # the 64-bit counter start + idx, carried into the high word by hand
    c0 = wrap32(start_lo + idx.to(cube.uint32))
    c1 = wrap32(start_hi + (c0 < start_lo).to(cube.uint32))
    return threefry2x32(c0, c1, k0, k1, k2)


@cube.func
def stream_start(state, k0, k1, k2, lo, hi, STATE):
    # with a state, the key and a base counter come from device memory, and the counter the
    # host passed (lo, hi) counts from that base: a 64-bit addition with the carry by hand
    if STATE:
        k0 = cube.load(state)
        k1 = cube.load(state + 1)
        k2 = k0 ^ k1 ^ PARITY
        base_lo = cube.load(state + 2)
        start_lo = wrap32(base_lo + lo)
        hi = wrap32(cube.load(state + 3) + hi + (start_lo < base_lo).to(cube.uint32))
        lo = start_lo
    return k0, k1, k2, lo, hi


@cube.func
def unit_float32(w):
    # [0, 1) on a grid of 2**-24: every value exact in float32
    return (w >> 8).to(cube.float32) * EXP2_M24


@cube.func
def unit_float64(w0, w1):
    # [0, 1) on a grid of 2**-53: 27 bits of w0 above 26 bits of w1, exact in float64
    return ((w0 >> 5).to(cube.float64) * 67108864.0 + (w1 >> 6).to(cube.float64)) * EXP2_M53


@cube.func
def unit(w0, w1, CT):
    if CT == cube.float64:
        u = unit_float64(w0, w1)
    else:
        u = unit_float32(w0)
    return u


# ---------------------------------------------------------------- kernels


@cube.kernel
def uniform_kernel(out, n, state, k0, k1, k2, lo0, hi0, low, span, top,
                   CT: cube.Comptime[object], DT: cube.Comptime[object],
                   STATE: cube.Comptime[bool], BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    k0, k1, k2, lo0, hi0 = stream_start(state, k0, k1, k2, lo0, hi0, STATE)
    w0, w1 = random_words(idx, lo0, hi0, k0, k1, k2)
    v = cube.minimum(low + unit(w0, w1, CT) * span, top)
    cube.store(out + idx, v.to(DT), mask=idx < n)


@cube.kernel
def normal_kernel(out, n, state, k0, k1, k2, lo0, hi0, lo1, hi1, mean, std,
                  CT: cube.Comptime[object], DT: cube.Comptime[object],
                  STATE: cube.Comptime[bool], BLOCK: cube.Comptime[int]):
    # Box-Muller with u1 = 1 - v in (0, 1]: log1p(-v) keeps its relative accuracy when u1 is
    # near 1 (a plain log there has only absolute accuracy on some GPUs: WGSL allows 2**-21).
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    _, _, _, lo1, hi1 = stream_start(state, k0, k1, k2, lo1, hi1, STATE)
    k0, k1, k2, lo0, hi0 = stream_start(state, k0, k1, k2, lo0, hi0, STATE)
    w0, w1 = random_words(idx, lo0, hi0, k0, k1, k2)
    if CT == cube.float64:
        v0, v1 = random_words(idx, lo1, hi1, k0, k1, k2)
        v = unit_float64(w0, w1)
        u2 = unit_float64(v0, v1)
    else:
        v = unit_float32(w0)
        u2 = unit_float32(w1)
    z = cube.sqrt(-2.0 * mathlib.log1p(-v)) * cube.cos(TWO_PI * u2)
    cube.store(out + idx, (mean + std * z).to(DT), mask=idx < n)


@cube.kernel
def randint_kernel(out, n, state, k0, k1, k2, lo0, hi0, low, span, FULL: cube.Comptime[bool],
                   DT: cube.Comptime[object], STATE: cube.Comptime[bool],
                   BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    k0, k1, k2, lo0, hi0 = stream_start(state, k0, k1, k2, lo0, hi0, STATE)
    w0, w1 = random_words(idx, lo0, hi0, k0, k1, k2)
    if DT == cube.int64:
        bits = ((w0 >> 1).to(cube.int64) << 32) | w1.to(cube.int64)  # 63 bits, non-negative
        v = low + bits % span
    else:
        # uint32 arithmetic wraps: low + offset modulo 2**32 is the result's bit pattern
        if FULL:
            offset = w0
        else:
            offset = w0 % span
        v = wrap32(offset + low).to(DT)
    cube.store(out + idx, v, mask=idx < n)


@cube.kernel
def bernoulli_kernel(p, po, ps0, ps1, ps2, ps3, out, oo, n, d1, d2, d3, state, k0, k1, k2,
                     lo0, hi0, CT: cube.Comptime[object], DT: cube.Comptime[object],
                     RANK: cube.Comptime[int], STATE: cube.Comptime[bool],
                     BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    k0, k1, k2, lo0, hi0 = stream_start(state, k0, k1, k2, lo0, hi0, STATE)
    m = idx < n
    prob = cube.load(p + po + element_offset(idx, RANK, d1, d2, d3, ps0, ps1, ps2, ps3), mask=m,
                     other=0).to(CT)
    w0, w1 = random_words(idx, lo0, hi0, k0, k1, k2)
    if CT == cube.float64:
        u = w0.to(cube.float64) * EXP2_M32
    else:
        u = unit_float32(w0)
    cube.store(out + oo + idx, (u < prob).to(DT), mask=m)


@cube.kernel
def dropout_kernel(x, xo, xs0, xs1, xs2, xs3, out, oo, n, d1, d2, d3, state, k0, k1, k2, lo0,
                   hi0, threshold, scale, CT: cube.Comptime[object], DT: cube.Comptime[object],
                   RANK: cube.Comptime[int], STATE: cube.Comptime[bool],
                   BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    k0, k1, k2, lo0, hi0 = stream_start(state, k0, k1, k2, lo0, hi0, STATE)
    m = idx < n
    v = cube.load(x + xo + element_offset(idx, RANK, d1, d2, d3, xs0, xs1, xs2, xs3), mask=m,
                  other=0).to(CT)
    w0, w1 = random_words(idx, lo0, hi0, k0, k1, k2)
    keep = (w0 >> 8) >= threshold
    cube.store(out + oo + idx, cube.where(keep, v * scale, 0.0).to(DT), mask=m)


# ---------------------------------------------------------------- host launchers


def _block(ctx: Context) -> int:
    # One tile size per target whatever the size: each new BLOCK is a new compiled
    # specialization, and these kernels are compute-bound, so a full tile costs nothing.
    return ctx.block(INT32_MAX)


def _grid(n: int, block: int) -> tuple[int]:
    return (cube.cdiv(n, block),)


def _state(stream: Stream, out: View) -> tuple[Any]:
    """The ``state`` argument: the stream's state words, or ``out`` where there are none (a
    pointer the kernel then never reads)."""
    if stream.state is None:
        return (out.storage,)
    problem = state_problem(stream.state)
    if problem is not None:
        raise ValueError(problem)
    return (stream.state.storage,)


def state_problem(state: Any) -> str | None:
    """What is wrong with ``state`` as a stream's device state (None when nothing is)."""
    if not isinstance(state, View):
        return f"a random stream's state must be a device buffer, got {type(state).__name__}"
    if state.dtype != cube.uint32 or state.shape != (4,) or state.strides != (1,) or \
            state.offset != 0:
        return (f"a random stream's state must be a buffer of its own holding 4 uint32 "
                f"words, got {state.dtype.name}{list(state.shape)} at offset {state.offset}")
    return None


def uniform(ctx: Context, shape: Sequence[int], low: float, high: float, dtype: DType,
            stream: Stream) -> View:
    """Uniform floats in ``[low, high)`` (``low < high``) of float ``dtype``."""
    out = ctx.new(shape, dtype)
    n, block, ct = out.numel, _block(ctx), register(dtype)
    uniform_kernel[_grid(n, block)](
        out.storage, n, *_state(stream, out), *stream.key_words(), *stream.counter_words(0),
        scalar(low, ct), scalar(high - low, ct), scalar(largest_below(high, dtype), ct), CT=ct,
        DT=dtype,
        STATE=stream.state is not None, BLOCK=block, target=ctx.target)
    return out


def normal(ctx: Context, shape: Sequence[int], mean: float, std: float, dtype: DType,
           stream: Stream) -> View:
    """Normal floats with ``mean`` and ``std`` (Box-Muller) of float ``dtype``."""
    out = ctx.new(shape, dtype)
    n, block, ct = out.numel, _block(ctx), register(dtype)
    normal_kernel[_grid(n, block)](
        out.storage, n, *_state(stream, out), *stream.key_words(), *stream.counter_words(0),
        *stream.counter_words(n), scalar(mean, ct), scalar(std, ct), CT=ct, DT=dtype,
        STATE=stream.state is not None, BLOCK=block, target=ctx.target)
    return out


def randint(ctx: Context, shape: Sequence[int], low: int, high: int, dtype: DType,
            stream: Stream) -> View:
    """Integers in ``[low, high)`` of integer ``dtype``; ``high - low`` at most ``2**32``
    (``2**63 - 1`` for int64)."""
    out = ctx.new(shape, dtype)
    n, block = out.numel, _block(ctx)
    span = high - low
    if dtype == cube.int64:
        low_arg, span_arg, full = np.int64(low), np.int64(span), False
    else:
        full = span == 2**32
        low_arg, span_arg = np.uint32(low & MASK32), np.uint32(span & MASK32)
    randint_kernel[_grid(n, block)](
        out.storage, n, *_state(stream, out), *stream.key_words(), *stream.counter_words(0),
        low_arg, span_arg, FULL=full, DT=dtype, STATE=stream.state is not None, BLOCK=block,
        target=ctx.target)
    return out


def bernoulli(ctx: Context, p: View, dtype: DType, stream: Stream) -> View:
    """1 with probability ``p`` (a float view of any layout), else 0, as ``dtype``."""
    out = ctx.new(p.shape, dtype)
    block, ct = _block(ctx), register(p.dtype)
    for part in launch_plan(p.shape, [p]):
        bernoulli_kernel[_grid(part.numel, block)](
            p.storage, *operand_args(part, 0), out.storage, part.out_offset, *layout_args(part),
            *_state(stream, out), *stream.key_words(), *stream.counter_words(part.out_offset),
            CT=ct, DT=dtype, RANK=part.layout.rank, STATE=stream.state is not None,
            BLOCK=block, target=ctx.target)
    return out


def dropout(ctx: Context, x: View, p: float, stream: Stream) -> View:
    """``x`` with each element zeroed with probability ``p``, the rest scaled by
    ``1 / (1 - p)`` (``x`` a float view of any layout)."""
    out = ctx.new(x.shape, x.dtype)
    block, ct = _block(ctx), register(x.dtype)
    scale = scalar(1.0 / (1.0 - p) if p < 1 else 0.0, ct)
    for part in launch_plan(x.shape, [x]):
        dropout_kernel[_grid(part.numel, block)](
            x.storage, *operand_args(part, 0), out.storage, part.out_offset, *layout_args(part),
            *_state(stream, out), *stream.key_words(), *stream.counter_words(part.out_offset),
            np.uint32(dropout_threshold(p)), scale, CT=ct, DT=x.dtype, RANK=part.layout.rank,
            STATE=stream.state is not None, BLOCK=block, target=ctx.target)
    return out
