"""Lowering of the counter-based random builtins, which give the bits Triton's do: ``philox``,
``randint``/``randint4x``, ``rand``/``rand4x`` and ``randn``/``randn4x``.

The generator is Philox-4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC'11), unrolled at compile time from uint32 additions, products, xors and ``umulhi``, so every
target computes the same bits. The conventions that make them Triton's bits (and that its
documentation and interpreter show): the key is the seed's low and high 32-bit words (a
negative seed by its two's complement), the counter is ``(offset, 0, 0, 0)``, 10 rounds by
default; a word ``w`` becomes a float32 in [0, 1) as ``i * 2**-31`` (about) with ``i`` the
word read as int32 and folded onto ``[0, 2**31)`` by ``i < 0 ? -i - 1 : i``; a normal pair is
Box-Muller's ``sqrt(-2 log max(u1, 1e-7)) * (cos, sin)(2 pi u2)``, in float32.

Offsets must be 32-bit integers (int32 or uint32); Triton's 64-bit counters need uint64, which
cubepy lacks."""

from __future__ import annotations

from typing import Any

from ..ir import Op, Value
from ..ir import dtypes as dt
from ..ir.rules import RuleError
from .builtins import lowering
from .semantics import binary, is_value, materialize, math, plain_int

MASK32 = 0xFFFFFFFF
# Philox-4x32's round multipliers and its key's Weyl increments (the golden ratio and
# sqrt(3) - 1 as 32-bit fractions), from the paper.
ROUND_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
KEY_INCREMENTS = (0x9E3779B9, 0xBB67AE85)
# float32(2**-31), as Triton writes it: a word folded onto [0, 2**31) times this is below 1
INT32_TO_UNIT = 4.6566127342e-10
TWO_PI = 6.283185307179586
SMALLEST_UNIFORM = 1.0e-7  # keeps log() finite in Box-Muller


def _rounds(name: str, n_rounds: Any) -> int:
    n_rounds = plain_int(n_rounds)
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, int) or n_rounds < 1:
        got = "a run-time value" if is_value(n_rounds) else repr(n_rounds)
        raise RuleError(f"cube.{name}(): n_rounds must be a positive compile-time int, got {got}",
                        "leave it out for Philox's 10 rounds, or pass a literal")
    return n_rounds


def _counter(ctx: Any, name: str, x: Any) -> Value:
    """A counter word as uint32 (an int32's bits kept: an int-to-int cast wraps)."""
    value = materialize(ctx.b, x, dt.uint32 if not is_value(x) else None)
    if value.type.is_ptr or value.type.dtype.name not in ("int32", "uint32"):
        what = "a pointer" if value.type.is_ptr else value.type.dtype.name
        raise RuleError(f"cube.{name}() takes int32 or uint32 offsets, got {what}",
                        "offsets of 2**32 elements or more need 64-bit counters, which cubepy "
                        "lacks: split the offset, or .to(cube.uint32) it")
    return ctx.b.cast(value, dt.uint32)


def _seed_words(ctx: Any, name: str, seed: Any) -> tuple[Value, Value]:
    """The key: the seed's low and high 32-bit words as uint32 scalars."""
    seed = plain_int(seed)
    if isinstance(seed, int) and not isinstance(seed, bool):
        return (materialize(ctx.b, seed & MASK32, dt.uint32),
                materialize(ctx.b, (seed >> 32) & MASK32, dt.uint32))
    if not is_value(seed) or seed.type.shape or seed.type.is_ptr or not seed.type.dtype.is_int:
        what = "a tile" if is_value(seed) and seed.type.shape else (
            "a run-time value" if is_value(seed) else repr(seed))
        raise RuleError(f"cube.{name}() needs an integer scalar seed, got {what}",
                        "pass the seed as a kernel argument or a literal")
    b = ctx.b
    low = b.cast(seed, dt.uint32)  # the low word: an int-to-int cast wraps
    if seed.type.dtype.bits == 64:
        high = b.cast(binary(b, Op.SHR, seed, 32), dt.uint32)
    elif seed.type.dtype.kind == "i":  # a negative seed's sign fills the high word
        negative = binary(b, Op.LT, seed, 0)
        high = b.emit(Op.WHERE, negative, materialize(b, MASK32, dt.uint32),
                      materialize(b, 0, dt.uint32))
    else:
        high = materialize(b, 0, dt.uint32)
    return low, high


def philox_rounds(ctx: Any, key: tuple[Value, Value], counter: list[Any], n_rounds: int
                  ) -> list[Value]:
    """Philox-4x32's rounds on ``counter`` (four uint32 values) under ``key``."""
    b = ctx.b
    c0, c1, c2, c3 = counter
    k0, k1 = key
    mul_a, mul_b = ROUND_MULTIPLIERS
    for step in range(n_rounds):
        if step:
            k0 = binary(b, Op.ADD, k0, KEY_INCREMENTS[0])
            k1 = binary(b, Op.ADD, k1, KEY_INCREMENTS[1])
        high_a = binary(b, Op.UMULHI, c0, mul_a)
        high_b = binary(b, Op.UMULHI, c2, mul_b)
        c0, c1, c2, c3 = (
            binary(b, Op.XOR, binary(b, Op.XOR, high_b, c1), k0),
            binary(b, Op.MUL, c2, mul_b),
            binary(b, Op.XOR, binary(b, Op.XOR, high_a, c3), k1),
            binary(b, Op.MUL, c0, mul_a),
        )
    return [c0, c1, c2, c3]


def _philox_of_offset(ctx: Any, name: str, seed: Any, offset: Any, n_rounds: Any
                      ) -> list[Value]:
    words = _counter(ctx, name, offset)
    zero = materialize(ctx.b, 0, dt.uint32, words.type.shape)
    return philox_rounds(ctx, _seed_words(ctx, name, seed), [words, zero, zero, zero],
                         _rounds(name, n_rounds))


def _unit_float(ctx: Any, word: Value) -> Value:
    """A uint32 word as a float32 in [0, 1), as Triton's ``uint_to_uniform_float``."""
    b = ctx.b
    signed = b.cast(word, dt.int32)
    folded = b.emit(Op.WHERE, binary(b, Op.LT, signed, 0),
                    binary(b, Op.SUB, b.emit(Op.NEG, signed), 1), signed)
    return binary(b, Op.MUL, b.cast(folded, dt.float32), INT32_TO_UNIT)


def _normal_pair(ctx: Any, u1: Value, u2: Value) -> tuple[Value, Value]:
    b = ctx.b
    u1 = binary(b, Op.MAXIMUM, u1, SMALLEST_UNIFORM)
    angle = binary(b, Op.MUL, u2, TWO_PI)
    radius = math(b, Op.SQRT, binary(b, Op.MUL, math(b, Op.LOG, u1), -2.0))
    return (binary(b, Op.MUL, radius, math(b, Op.COS, angle)),
            binary(b, Op.MUL, radius, math(b, Op.SIN, angle)))


@lowering("philox")
def _philox(ctx: Any, seed: Any, c0: Any, c1: Any, c2: Any, c3: Any, n_rounds: Any
            ) -> tuple[Value, ...]:
    words = [_counter(ctx, "philox", c) for c in (c0, c1, c2, c3)]
    shape: tuple[int, ...] = ()
    for w in words:
        shape = w.type.shape or shape
    words = [materialize(ctx.b, w, None, shape) for w in words]
    return tuple(philox_rounds(ctx, _seed_words(ctx, "philox", seed), words,
                               _rounds("philox", n_rounds)))


@lowering("randint4x")
def _randint4x(ctx: Any, seed: Any, offset: Any, n_rounds: Any) -> tuple[Value, ...]:
    return tuple(_philox_of_offset(ctx, "randint4x", seed, offset, n_rounds))


@lowering("randint")
def _randint(ctx: Any, seed: Any, offset: Any, n_rounds: Any) -> Value:
    return _philox_of_offset(ctx, "randint", seed, offset, n_rounds)[0]


@lowering("rand")
def _rand(ctx: Any, seed: Any, offset: Any, n_rounds: Any) -> Value:
    return _unit_float(ctx, _philox_of_offset(ctx, "rand", seed, offset, n_rounds)[0])


@lowering("rand4x")
def _rand4x(ctx: Any, seed: Any, offset: Any, n_rounds: Any) -> tuple[Value, ...]:
    words = _philox_of_offset(ctx, "rand4x", seed, offset, n_rounds)
    return tuple(_unit_float(ctx, w) for w in words)


@lowering("randn")
def _randn(ctx: Any, seed: Any, offset: Any, n_rounds: Any) -> Value:
    words = _philox_of_offset(ctx, "randn", seed, offset, n_rounds)
    return _normal_pair(ctx, _unit_float(ctx, words[0]), _unit_float(ctx, words[1]))[0]


@lowering("randn4x")
def _randn4x(ctx: Any, seed: Any, offset: Any, n_rounds: Any) -> tuple[Value, ...]:
    u = [_unit_float(ctx, w) for w in _philox_of_offset(ctx, "randn4x", seed, offset, n_rounds)]
    return (*_normal_pair(ctx, u[0], u[1]), *_normal_pair(ctx, u[2], u[3]))
