"""``umulhi`` and the random builtins (``philox``, ``randint``/``randint4x``, ``rand``/``rand4x``,
``randn``/``randn4x``) on every target: Random123's known answers for Philox-4x32-10, a NumPy
Philox written here, Triton's own ``tl.randint``/``tl.rand``/``tl.randn`` on its interpreter,
and errors at the user's line."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from util import assert_points_at_the_line, poison, run_or_expect_unsupported

import cubepy as cube

N, BLOCK = 300, 128
M32 = np.uint64(0xFFFFFFFF)


def umulhi_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wide = a.astype(np.uint32).astype(np.uint64) * b.astype(np.uint32).astype(np.uint64)
    return (wide >> np.uint64(32)).astype(np.uint32).astype(a.dtype)


def philox_reference(key: tuple[int, int], counter: list[np.ndarray], rounds: int = 10
                     ) -> list[np.ndarray]:
    """Philox-4x32 in NumPy uint64 arithmetic, from the paper's round function."""
    c = [np.asarray(x, np.uint64) & M32 for x in counter]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for step in range(rounds):
        if step:
            k0, k1 = (k0 + np.uint64(0x9E3779B9)) & M32, (k1 + np.uint64(0xBB67AE85)) & M32
        pa, pb = c[0] * np.uint64(0xD2511F53), c[2] * np.uint64(0xCD9E8D57)
        c = [(pb >> np.uint64(32)) ^ c[1] ^ k0, pb & M32, (pa >> np.uint64(32)) ^ c[3] ^ k1,
             pa & M32]
    return [x.astype(np.uint32) for x in c]


def unit_float_reference(word: np.ndarray) -> np.ndarray:
    signed = word.view(np.int32).astype(np.int64)
    folded = np.where(signed < 0, -signed - 1, signed).astype(np.float32)
    return folded * np.float32(4.6566127342e-10)


@cube.kernel
def umulhi_kernel(x, y, out, n, BLOCK: cube.Comptime[int], ROWS: cube.Comptime[int]):
    # ROWS > 1: a 2-D tile, which the cpu target runs in its tile form rather than lane loops
    rows = cube.arange(0, ROWS)
    offs = (cube.cube_pos(0) * ROWS + rows)[:, None] * BLOCK + cube.arange(0, BLOCK)[None, :]
    m = offs < n
    a = cube.load(x + offs, mask=m)
    hi = cube.umulhi(a, cube.load(y + offs, mask=m))
    cube.store(out + offs, hi ^ cube.umulhi(a, n), mask=m)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
@pytest.mark.parametrize("rows", [1, 2])
def test_umulhi_is_the_high_word_of_the_unsigned_product(target, rng, dtype, rows):
    info = np.iinfo(dtype)
    x, y = (rng.integers(info.min, info.max, N, np.int64, endpoint=True).astype(dtype)
            for _ in range(2))
    x[:4], y[:4] = [info.min, info.max, 0, 1], [info.max, info.max, info.min, info.min]
    out = poison(N, dtype)
    umulhi_kernel[(cube.cdiv(N, rows * BLOCK),)](x, y, out, N, BLOCK=BLOCK, ROWS=rows,
                                                  target=target)
    want = umulhi_reference(x, y) ^ umulhi_reference(x, np.full_like(x, N))
    np.testing.assert_array_equal(out, want)


@cube.kernel
def philox_words(c, key_lo, key_hi, out):
    seed = key_lo.to(cube.int64) + (key_hi.to(cube.int64) << 32)
    w0, w1, w2, w3 = cube.philox(seed, cube.load(c), cube.load(c + 1), cube.load(c + 2),
                                 cube.load(c + 3))
    cube.store(out, w0)
    cube.store(out + 1, w1)
    cube.store(out + 2, w2)
    cube.store(out + 3, w3)


# Random123's known-answer vectors for Philox-4x32-10: counter, key, result
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS)
def test_philox_gives_random123s_known_answers(target, counter, key, expected):
    out = np.zeros(4, np.uint32)
    if run_or_expect_unsupported(target, ["int64"], lambda: philox_words[(1,)](
            np.array(counter, np.uint32), np.uint32(key[0]), np.uint32(key[1]), out,
            target=target)):
        assert out.tolist() == list(expected)
        assert [int(w[()]) for w in philox_reference(key, list(counter))] == list(expected)


@cube.kernel
def random_streams(seed, words, uniform, normal, uniform4, normal4, n,
                   BLOCK: cube.Comptime[int], ROUNDS: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    w0, w1, w2, w3 = cube.randint4x(seed, offs, ROUNDS)
    cube.store(words + offs, cube.randint(seed, offs, ROUNDS) ^ w1 ^ w2 ^ w3, mask=m)
    cube.store(uniform + offs, cube.rand(seed, offs, ROUNDS), mask=m)
    cube.store(normal + offs, cube.randn(seed, offs, ROUNDS), mask=m)
    u0, u1, u2, u3 = cube.rand4x(seed, offs, ROUNDS)
    cube.store(uniform4 + offs, u0 + u1 + u2 + u3, mask=m)
    n0, n1, n2, n3 = cube.randn4x(seed, offs, ROUNDS)
    cube.store(normal4 + offs, n0 + n1 + n2 + n3, mask=m)


def run_streams(target: str, seed, rounds: int = 10) -> dict[str, np.ndarray]:
    outs = {"words": poison(N, "uint32"), **{k: poison(N, "float32") for k in (
        "uniform", "normal", "uniform4", "normal4")}}
    random_streams[(cube.cdiv(N, BLOCK),)](seed, *outs.values(), N, BLOCK=BLOCK, ROUNDS=rounds,
                                           target=target)
    return outs


def normal_pair_reference(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u1 = np.maximum(u1, np.float32(1e-7)).astype(np.float64)
    radius = np.sqrt(-2.0 * np.log(u1))
    angle = u2.astype(np.float64) * np.float32(6.283185307179586)
    return radius * np.cos(angle), radius * np.sin(angle)


@pytest.mark.parametrize("seed,key", [
    (np.int32(1234), (1234, 0)),
    (np.int32(-5), (0xFFFFFFFB, 0xFFFFFFFF)),  # a negative seed's sign fills the high word
    (np.uint32(4_000_000_000), (4_000_000_000, 0)),
    (np.int64(2**40 + 77), (77, 256)),
])
@pytest.mark.parametrize("rounds", [10, 7])
def test_random_streams_follow_the_reference(target, seed, key, rounds):
    dtypes = [np.dtype(type(seed)).name]
    got: dict[str, np.ndarray] = {}
    if not run_or_expect_unsupported(target, dtypes,
                                     lambda: got.update(run_streams(target, seed, rounds))):
        return
    words = philox_reference(key, [np.arange(N), 0, 0, 0], rounds)
    np.testing.assert_array_equal(got["words"], words[0] ^ words[1] ^ words[2] ^ words[3])
    units = [unit_float_reference(w) for w in words]
    np.testing.assert_array_equal(got["uniform"], units[0])
    np.testing.assert_allclose(got["uniform4"], sum(u.astype(np.float64) for u in units),
                               rtol=1e-6)
    pair_a, pair_b = normal_pair_reference(*units[:2]), normal_pair_reference(*units[2:])
    # float32 log, sqrt and cos of the targets: within a few ulp of values up to about 5.7
    np.testing.assert_allclose(got["normal"], pair_a[0], rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(got["normal4"], sum(pair_a) + sum(pair_b), rtol=1e-5, atol=1e-5)


def test_uniform_and_normal_look_like_their_distributions(target):
    n = 1 << 16
    uniform, normal = poison(n, "float32"), poison(n, "float32")

    @cube.kernel
    def draw(seed, uniform, normal, BLOCK: cube.Comptime[int]):
        offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
        cube.store(uniform + offs, cube.rand(seed, offs))
        cube.store(normal + offs, cube.randn(seed, offs + 1_000_000))

    draw[(n // 1024,)](np.int32(7), uniform, normal, BLOCK=1024, target=target)
    assert 0.0 <= uniform.min() and uniform.max() < 1.0
    assert abs(uniform.mean() - 0.5) < 0.005 and abs(uniform.var() - 1 / 12) < 0.002
    assert abs(normal.mean()) < 0.02 and abs(normal.std() - 1.0) < 0.02
    assert len(np.unique(uniform)) > 0.99 * n


TRITON_REFERENCE = """
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, triton, triton.language as tl
from cubepy.backends.triton.adapter import NumpyTensor

@triton.jit
def streams(seed, words, uniform, normal, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    w0, w1, w2, w3 = tl.randint4x(seed, offs, 7)
    tl.store(words + offs, tl.randint(seed, offs) ^ w1 ^ w2 ^ w3, mask=m)
    tl.store(uniform + offs, tl.rand(seed, offs), mask=m)
    tl.store(normal + offs, tl.randn(seed, offs), mask=m)

n, seed = int(sys.argv[1]), int(sys.argv[2])
out = [np.zeros(n, np.uint32), np.zeros(n, np.float32), np.zeros(n, np.float32)]
streams[(triton.cdiv(n, 128),)](seed, *map(NumpyTensor, out), n, BLOCK=128)
np.save(sys.argv[3], np.stack([out[0].view(np.float32), out[1], out[2]]))
"""


@cube.kernel
def like_triton(seed, words, uniform, normal, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    w0, w1, w2, w3 = cube.randint4x(seed, offs, 7)
    cube.store(words + offs, cube.randint(seed, offs) ^ w1 ^ w2 ^ w3, mask=m)
    cube.store(uniform + offs, cube.rand(seed, offs), mask=m)
    cube.store(normal + offs, cube.randn(seed, offs), mask=m)


@functools.cache
def tritons_streams(seed: int) -> np.ndarray:
    """Triton's own tl.randint4x, tl.randint, tl.rand and tl.randn, run on its interpreter in a
    child process (the interpreter is chosen when Triton is imported); once per process."""
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "triton.npy"
        env = {**os.environ, "PYTHONPATH": str(Path(cube.__file__).parents[1])}
        subprocess.run([sys.executable, "-c", textwrap.dedent(TRITON_REFERENCE), str(N),
                        str(seed), str(saved)], check=True, env=env, timeout=300)
        return np.load(saved)


def test_the_bits_are_tritons(target):
    pytest.importorskip("triton")
    seed = -987654
    words, uniform, normal = tritons_streams(seed)
    got = [poison(N, "uint32"), poison(N, "float32"), poison(N, "float32")]
    like_triton[(cube.cdiv(N, BLOCK),)](np.int32(seed), *got, N, BLOCK=BLOCK, target=target)
    np.testing.assert_array_equal(got[0], words.view(np.uint32))
    np.testing.assert_array_equal(got[1], uniform)
    np.testing.assert_allclose(got[2], normal, rtol=2e-6, atol=2e-6)


@cube.kernel
def float_offsets(out, seed):
    cube.store(out + cube.arange(0, 16), cube.rand(seed, cube.arange(0, 16).to(cube.float32)))


@cube.kernel
def wide_offsets(out, seed):
    cube.store(out + cube.arange(0, 16), cube.rand(seed, cube.arange(0, 16).to(cube.int64)))


@cube.kernel
def tile_seed(out, seed):
    offs = cube.arange(0, 16)
    cube.store(out + offs, cube.rand(offs, offs))


@cube.kernel
def no_rounds(out, seed):
    cube.store(out + cube.arange(0, 16), cube.rand(seed, cube.arange(0, 16), 0))


@cube.kernel
def umulhi_of_int64(out, seed):
    offs = cube.arange(0, 16)
    cube.store(out + offs, cube.umulhi(offs.to(cube.int64), seed).to(cube.float32))


@cube.kernel
def umulhi_of_literals(out, seed):
    cube.store(out + cube.arange(0, 16), cube.umulhi(3, 5) + 0.0)


@pytest.mark.parametrize("kernel,message", [
    (float_offsets, "cube.rand() takes int32 or uint32 offsets, got float32"),
    (wide_offsets, "cube.rand() takes int32 or uint32 offsets, got int64"),
    (tile_seed, "cube.rand() needs an integer scalar seed, got a tile"),
    (no_rounds, "cube.rand(): n_rounds must be a positive compile-time int, got 0"),
    (umulhi_of_int64, "umulhi takes int32 or uint32 operands, got int64"),
    (umulhi_of_literals, "cube.umulhi() needs a run-time operand"),
])
def test_wrong_uses_point_at_the_line(kernel, message):
    assert_points_at_the_line(
        lambda: kernel[(1,)](np.zeros(16, np.float32), np.int32(1), target="cpu"), message,
        "test_random_builtins.py")
