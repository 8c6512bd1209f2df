"""Random draws from a device state, as a captured training step makes them
(``Generator.begin_step``): on every backend and the NumPy reference, each random op gives
the bits it gives from the plain stream, also where the base counter plus the step's own
counter carries into the high word or wraps past 2**64. Then the generator's step mode:
counting, reseeding through the state, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from optest import expect_unsupported, supports

import burn

OPS = {
    "uniform": lambda b, g: burn.uniform((37, 41), -1.0, 2.0, backend=b, generator=g),
    "normal": lambda b, g: burn.normal((3000,), 1.0, 2.0, backend=b, generator=g),
    "normal_float64": lambda b, g: burn.randn(700, dtype=burn.float64, backend=b, generator=g),
    "randint": lambda b, g: burn.randint(0, 2**32, (1000,), dtype=burn.uint32, backend=b,
                                         generator=g),
    "randint_int64": lambda b, g: burn.randint(-(2**40), 2**41, (500,), dtype=burn.int64,
                                               backend=b, generator=g),
    "bernoulli": lambda b, g: burn.bernoulli(0.3, (45, 30), dtype=burn.bool, backend=b,
                                             generator=g),
    "dropout": lambda b, g: burn.dropout(
        burn.arange(1, 1351, dtype=burn.float32, backend=b).reshape(30, 45).T, 0.3,
        generator=g),
}
NEEDS = {"normal_float64": ["float64"], "randint_int64": ["int64"]}
# a first draw of 800 counters: the op's relative counter is 800, so from these offsets the
# base plus it carries into the high word, or wraps past 2**64
OFFSETS = {"small": 5, "carry": 2**32 - 500, "wrap": 2**64 - 500}


def _state(backend: burn.Backend, generator: burn.Generator):  # noqa: ANN202
    return backend.from_numpy(generator.state_words())


def _draws_in_a_step(backend: burn.Backend, op: str, seed: int, offset: int) -> np.ndarray:
    g = burn.Generator(seed, offset)
    g.begin_step(_state(backend, g))
    burn.rand(800, backend=backend, generator=g)
    values = OPS[op](backend, g).numpy()
    assert g.end_step() == (g.offset - offset) % 2**64
    return values


def _plain_draws(backend: burn.Backend, op: str, seed: int, offset: int) -> np.ndarray:
    g = burn.Generator(seed, offset)
    burn.rand(800, backend=backend, generator=g)
    return OPS[op](backend, g).numpy()


@pytest.mark.parametrize("offset", OFFSETS.values(), ids=OFFSETS.keys())
@pytest.mark.parametrize("op", OPS)
def test_draws_from_a_state_equal_plain_draws(backend, ref, op, offset):
    seed = 0x1234_5678_9ABC_DEF0
    if not supports(backend, NEEDS.get(op, [])):
        # a backend without the dtype refuses the draw inside a step as it does outside one
        expect_unsupported(backend, NEEDS[op][0],
                           lambda: _draws_in_a_step(backend, op, seed, offset))
        return
    for b in (backend, ref):
        np.testing.assert_array_equal(_draws_in_a_step(b, op, seed, offset),
                                      _plain_draws(b, op, seed, offset))


def test_a_step_reads_the_seed_and_offset_from_its_state(backend):
    """The seed and base offset come from the state, not the launch's numbers: a step of
    generator 1 drawing from a state that holds another generator's words draws that
    generator's values (as a replayed graph does once the host rewrites the state)."""
    g, other = burn.Generator(1), burn.Generator(77, 1000)
    g.begin_step(_state(backend, other))
    drawn = burn.rand(64, backend=backend, generator=g).numpy()
    assert g.end_step() == 64 and g.offset == 64
    np.testing.assert_array_equal(drawn, burn.rand(64, backend=backend, generator=other).numpy())
    assert not np.array_equal(drawn, burn.rand(64, backend=backend,
                                               generator=burn.Generator(1)).numpy())


def test_state_words_are_the_seed_and_offset_low_word_first():
    words = burn.Generator(0x1_0000_0002, 0x3_0000_0004).state_words()
    assert words.dtype == np.uint32 and words.tolist() == [2, 1, 4, 3]


def test_step_mode_errors(backend):
    g = burn.Generator(1)
    with pytest.raises(burn.BurnError, match="end_step.*begin_step\\(\\) was not called"):
        g.end_step()
    with pytest.raises(burn.BurnError, match="4 uint32 words, got float32\\[4\\]"):
        g.begin_step(backend.from_numpy(np.zeros(4, np.float32)))
    with pytest.raises(burn.BurnError, match="must be a device buffer, got ndarray"):
        g.begin_step(np.zeros(4, np.uint32))
    g.begin_step(_state(backend, g))
    with pytest.raises(burn.BurnError, match="already draws from a step's state"):
        g.begin_step(_state(backend, g))
    assert g.end_step() == 0
