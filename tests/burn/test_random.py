"""Random ops on every backend: the same bits as the NumPy reference (Threefry-2x32 known
answers, exact integers, floats within one rounding), statistics on 1e5 draws, generator
semantics, the dtype matrix and bad input. A uint32 conformance kernel checks the wraparound
arithmetic the generator relies on, on every target."""

from __future__ import annotations

import numpy as np
import pytest
from optest import VIEW_KINDS, check, expect_unsupported, on, random_tensor, strided, supports

import burn
import cubepy as cube
from burn.backend.numpy.random import threefry2x32
from kernels.random import wrap32

SHAPES = [(0,), (1,), (3, 5), (2, 3, 4), (5000,)]  # 5000 spans several cubes on every target
SAMPLES = 100_000
# Threefry-2x32-20 known answers (Random123's kat_vectors): counter, key, output
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0)),
]


def gen(seed: int = 2024, offset: int = 0) -> burn.Generator:
    return burn.Generator(seed, offset)


def assert_one_rounding(got: burn.Tensor, expected: burn.Tensor, span: float) -> None:
    """Same dtype and shape, and values one rounding apart at most: a target may fuse
    ``low + u * span`` into a multiply-add, which skips rounding the product (at most
    ``span``), so each value may differ by one ulp of ``span`` plus one of its own."""
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
    g, e = got.numpy(), expected.numpy()
    ulps = np.spacing(np.abs(e)).astype(np.float64) + float(np.spacing(e.dtype.type(span)))
    np.testing.assert_array_less(np.abs(g.astype(np.float64) - e.astype(np.float64)),
                                 ulps * 1.0001)


# ---------------------------------------------------------------- uint32 arithmetic


@cube.kernel
def uint32_ops_kernel(x, y, out, n, BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = idx < n
    a = cube.load(x + idx, mask=m, other=0)
    b = cube.load(y + idx, mask=m, other=0)
    cube.store(out + idx, a * b, mask=m)
    cube.store(out + n + idx, a * 0x9E3779B9, mask=m)
    cube.store(out + 2 * n + idx, wrap32(a + b) >> 8, mask=m)
    cube.store(out + 3 * n + idx, wrap32(a - b) >> 3, mask=m)
    cube.store(out + 4 * n + idx, wrap32(a << 13) | (a >> 19), mask=m)
    cube.store(out + 5 * n + idx, wrap32(a * b) >> 16, mask=m)


def test_uint32_wraparound(backend, rng):
    """Products, sums, differences and shifts of uint32 wrap modulo 2**32 on every target,
    exactly as NumPy's uint32 arrays do (what Threefry and the NumPy reference rely on)."""
    n = 1000
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    a[:4] = [0xFFFFFFFF, 0x80000000, 1, 0]  # the edges of wraparound
    b[:4] = [0xFFFFFFFF, 0x80000000, 0xFFFFFFFF, 1]
    xs, ys = backend.from_numpy(a), backend.from_numpy(b)
    out = backend.new((6 * n,), burn.uint32)
    uint32_ops_kernel[(cube.cdiv(n, 256),)](xs.storage, ys.storage, out.storage, n, BLOCK=256,
                                            target=backend.ctx.target)
    u = np.uint32
    expected = [a * b, a * u(0x9E3779B9), (a + b) >> u(8), (a - b) >> u(3),
                (a << u(13)) | (a >> u(19)), (a * b) >> u(16)]
    for row, want in zip(backend.to_numpy(out).reshape(6, n), expected):
        np.testing.assert_array_equal(row, want)


# ---------------------------------------------------------------- the bits


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_threefry_known_answers_reference(counter, key, expected):
    words = threefry2x32(np.array([counter[0]], np.uint32), np.array([counter[1]], np.uint32),
                         *key)
    assert (int(words[0][0]), int(words[1][0])) == expected


def test_threefry_known_answers(backend):
    """The first word of each known answer, drawn as raw uint32 bits by ``randint``: the
    generator's seed is the key and its offset the counter (both as low, high words)."""
    for counter, key, expected in KNOWN_ANSWERS:
        g = gen(key[0] | key[1] << 32, counter[0] | counter[1] << 32)
        bits = burn.randint(0, 2**32, (1,), dtype=burn.uint32, backend=backend, generator=g)
        assert int(bits.numpy()[0]) == expected[0]


@pytest.mark.parametrize("offset", [2**32 - 700, 2**64 - 300], ids=["carry", "wrap"])
def test_raw_bits_across_counter_carry(backend, ref, offset):
    """Counters crossing into the high word (and past 2**64) match the reference."""
    check(lambda b: burn.randint(0, 2**32, (1000,), dtype=burn.uint32, backend=b,
                                 generator=gen(7, offset)), backend, ref)


# ---------------------------------------------------------------- values against the reference


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_uniform_matches_reference(backend, ref, shape):
    def op(b):
        return burn.uniform(shape, -2.0, 3.0, backend=b, generator=gen())
    assert_one_rounding(op(backend), op(ref), 5.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_uniform_dtypes(backend, ref, dtype):
    def op(b):
        return burn.uniform((40, 50), 0.5, 1.0, dtype=dtype, backend=b, generator=gen())
    if not supports(backend, [dtype]):
        expect_unsupported(backend, dtype, lambda: op(backend))
        return
    got = op(backend)
    assert_one_rounding(got, op(ref), 0.5)
    values = got.numpy().astype(np.float64)
    assert values.min() >= 0.5 and values.max() < 1.0  # rounding to dtype never reaches high


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_normal_matches_reference(backend, ref, shape):
    # log1p and cos differ by a few ulp between targets: |z| <= 5.8, so 4 ulp of the
    # largest value (2e-6) bounds the absolute difference; std 2 doubles it
    check(lambda b: burn.normal(shape, 1.0, 2.0, backend=b, generator=gen()), backend, ref,
          rtol=1e-6, atol=4e-6)


def test_normal_float64(backend, ref):
    check(lambda b: burn.randn(3000, dtype=burn.float64, backend=b, generator=gen()), backend,
          ref)


@pytest.mark.parametrize("dtype, low, high", [
    ("int32", -5, 1000), ("int64", -(2**40), 2**41), ("uint32", 0, 2**32),
    ("int32", -(2**31), 2**31), ("int8", -128, 128)])
def test_randint_matches_reference(backend, ref, dtype, low, high):
    def op(b):
        return burn.randint(low, high, (37, 41), dtype=dtype, backend=b, generator=gen())
    if not supports(backend, [dtype]):
        expect_unsupported(backend, dtype, lambda: op(backend))
        return
    check(op, backend, ref)
    values = op(backend).numpy().astype(np.int64)
    assert values.min() >= low and values.max() < high


@pytest.mark.parametrize("kind", ["contiguous", "transposed"])
def test_bernoulli_tensor_matches_reference(backend, ref, rng, kind):
    p = random_tensor(rng, (33, 40), "float32", 0.0, 1.0)
    check(lambda b: burn.bernoulli(strided(b, p, kind), generator=gen()), backend, ref)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bernoulli_number_matches_reference(backend, ref, shape):
    check(lambda b: burn.bernoulli(0.3, shape, dtype=burn.bool, backend=b, generator=gen()),
          backend, ref)


@pytest.mark.parametrize("kind", VIEW_KINDS)
def test_dropout_matches_reference(backend, ref, rng, kind):
    x = random_tensor(rng, (45, 30), "float32")
    check(lambda b: burn.dropout(strided(b, x, kind), 0.3, generator=gen()), backend, ref)


# ---------------------------------------------------------------- statistics


def test_uniform_statistics(backend):
    low, high = -2.0, 3.0
    u = burn.uniform(SAMPLES, low, high, backend=backend, generator=gen(1)).numpy()
    u = u.astype(np.float64)
    width = high - low
    assert low <= u.min() and u.max() < high
    assert abs(u.mean() - (low + high) / 2) < 5 * width / np.sqrt(12 * SAMPLES)
    var_se = width**2 * np.sqrt(1 / 80 - 1 / 144) / np.sqrt(SAMPLES)
    assert abs(u.var() - width**2 / 12) < 5 * var_se


def test_normal_statistics(backend):
    z = burn.normal(SAMPLES, 1.0, 2.0, backend=backend, generator=gen(2)).numpy()
    z = z.astype(np.float64)
    assert abs(z.mean() - 1.0) < 5 * 2.0 / np.sqrt(SAMPLES)
    assert abs(z.var() - 4.0) < 5 * 4.0 * np.sqrt(2 / SAMPLES)
    within = np.mean(np.abs(z - 1.0) < 2.0)  # one standard deviation: 68.27%
    assert abs(within - 0.682689) < 5 * np.sqrt(0.682689 * 0.317311 / SAMPLES)


def test_bernoulli_statistics(backend):
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0], np.float32)
    probs = on(backend, p).expand(SAMPLES // 5, 5)
    hits = burn.bernoulli(probs, generator=gen(3)).numpy().mean(axis=0)
    se = np.sqrt(p * (1 - p) / (SAMPLES // 5))
    assert hits[0] == 0.0 and hits[4] == 1.0
    assert np.all(np.abs(hits - p) <= 5 * se)


def test_randint_statistics(backend):
    draws = burn.randint(3, 13, (SAMPLES,), backend=backend, generator=gen(4)).numpy()
    counts = np.bincount(draws - 3, minlength=10)
    assert counts.size == 10 and draws.min() == 3 and draws.max() == 12
    se = np.sqrt(SAMPLES * 0.1 * 0.9)
    assert np.all(np.abs(counts - SAMPLES / 10) < 5 * se)


def test_dropout_statistics(backend):
    x = burn.from_numpy(np.full(SAMPLES, 2.0, np.float32), backend=backend)
    y = burn.dropout(x, 0.25, generator=gen(5)).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, np.float32(2.0 / 0.75)}
    dropped = np.mean(y == 0)
    assert abs(dropped - 0.25) < 5 * np.sqrt(0.25 * 0.75 / SAMPLES)


# ---------------------------------------------------------------- generator semantics


def test_generator_advances_and_reproduces(backend):
    g = gen(11)
    a = burn.rand(100, backend=backend, generator=g).numpy()
    assert g.offset == 100
    b = burn.rand(100, backend=backend, generator=g).numpy()
    assert not np.array_equal(a, b)
    burn.randn(10, dtype=burn.float64, backend=backend, generator=g)
    assert g.offset == 220  # float64 normal takes two counters an element
    again = gen(11)
    np.testing.assert_array_equal(burn.rand(100, backend=backend, generator=again).numpy(), a)
    np.testing.assert_array_equal(burn.rand(100, backend=backend, generator=again).numpy(), b)
    other = burn.rand(100, backend=backend, generator=gen(12)).numpy()
    assert not np.array_equal(a, other)


def test_manual_seed_restarts_global_generator(backend):
    g = burn.manual_seed(99)
    assert g is burn.default_generator() and g.initial_seed() == 99 and g.offset == 0
    a = burn.rand(2, 3, backend=backend).numpy()
    b = burn.rand((2, 3), backend=backend).numpy()
    burn.manual_seed(99)
    np.testing.assert_array_equal(burn.rand(2, 3, backend=backend).numpy(), a)
    np.testing.assert_array_equal(burn.rand(2, 3, backend=backend).numpy(), b)
    assert burn.randn(2, 3, backend=backend).shape == (2, 3)


def test_conveniences(backend):
    assert burn.rand(backend=backend).shape == ()
    assert burn.randint(5, (3,), backend=backend, generator=gen()).numpy().max() < 5
    assert burn.randint(5, backend=backend, generator=gen()).shape == ()
    assert burn.randint(5, shape=(2, 2), backend=backend, generator=gen()).shape == (2, 2)
    x = on(backend, np.ones((4, 4), np.float32))
    assert burn.dropout(x, 0.5, training=False) is x and burn.dropout(x, 0.0) is x
    np.testing.assert_array_equal(burn.dropout(x, 1.0, generator=gen()).numpy(), 0.0)
    half = on(backend, np.full(8, 0.5, np.float32))
    assert half.bernoulli(generator=gen()).dtype == burn.float32
    assert burn.bernoulli(half, (3, 8), generator=gen()).shape == (3, 8)


# ---------------------------------------------------------------- bad input


BAD_INPUT = [
    (lambda b: burn.uniform(3, dtype=burn.int32, backend=b), r"uniform: dtype must be a float"),
    (lambda b: burn.uniform(3, 1.0, 1.0, backend=b), r"uniform: low must be less than high"),
    (lambda b: burn.uniform(3, 0.0, float("inf"), backend=b),
     r"uniform: high must be a finite number, got inf"),
    (lambda b: burn.uniform(3, -3e38, 3e38, backend=b),
     r"uniform: \[-3e\+38, 3e\+38\) does not fit float32"),
    (lambda b: burn.normal(3, 0.0, -1.0, backend=b), r"normal: std must be >= 0"),
    (lambda b: burn.rand(2, -1, backend=b), r"rand: negative size in shape \(2, -1\)"),
    (lambda b: burn.randn(2.5, backend=b), r"randn: shape must be ints"),
    (lambda b: burn.randint(0, 10, 3, dtype=burn.float32, backend=b),
     r"randint: dtype must be an integer dtype, got float32"),
    (lambda b: burn.randint(5, 5, 3, backend=b), r"randint: \[5, 5\) is not a non-empty range"),
    (lambda b: burn.randint(-(2**62), 2**62, 3, dtype=burn.int64, backend=b),
     r"randint: high - low = \d+ is more than"),
    (lambda b: burn.bernoulli(1.5, 3, backend=b), r"bernoulli: p must be in \[0, 1\], got 1.5"),
    (lambda b: burn.bernoulli(on(b, np.ones(3, np.int32))),
     r"bernoulli: p must be a float tensor of probabilities, got int32 of shape \(3,\)"),
    (lambda b: burn.bernoulli(on(b, np.ones(3, np.float32)), (2, 4)),
     r"bernoulli: shapes \(3,\) and \(2, 4\) do not broadcast"),
    (lambda b: burn.bernoulli(on(b, np.ones(3, np.float32)), (1,)),
     r"bernoulli: p of shape \(3,\) does not broadcast to shape \(1,\)"),
    (lambda b: burn.bernoulli(on(b, np.ones(3, np.float32)), backend="numpy"),
     r"bernoulli: p is on .* but backend='numpy' was given"),
    (lambda b: burn.dropout(on(b, np.ones(3, np.int32)), 0.5),
     r"dropout: x must be a float tensor, got int32 of shape \(3,\)"),
    (lambda b: burn.dropout(on(b, np.ones(3, np.float32)), 1.5), r"dropout: p must be in"),
    (lambda b: burn.rand(3, backend=b, generator=5), r"rand: generator must be a burn\."),
    (lambda b: burn.Generator(1.5), r"manual_seed: seed must be an int, got 1.5"),
]


@pytest.mark.parametrize("call, message", BAD_INPUT,
                         ids=[f"{m.split(':')[0]}-{i}" for i, (_, m) in enumerate(BAD_INPUT)])
def test_bad_input(backend, call, message):
    with pytest.raises(burn.BurnError, match=message):
        call(backend)

