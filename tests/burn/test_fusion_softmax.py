"""``burn.Fusion``: a softmax of a pending elementwise value computes it in its own kernel.

On every cubepy backend present, against the NumPy reference with the dtype's tolerance and
against the unfused backend; ``Fusion.stats`` shows the one launch (a test that only
compared values would pass with the fusion off).
"""

from __future__ import annotations

import numpy as np
import pytest
from optest import check, check_fused_gradients, on, random_tensor, supports

import burn
from burn.fusion.graph import Lazy
from burn.fusion.softmax import tile_rows
from kernels.softmax import single_pass_limit


@pytest.fixture
def fusion(backend: burn.Backend) -> burn.Fusion:
    return burn.Fusion(backend.wraps if isinstance(backend, burn.Fusion) else backend)


def _softmax(t: burn.Tensor, log: bool, axis: int = -1) -> burn.Tensor:
    return t.log_softmax(axis) if log else t.softmax(axis)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(3, 5, 7), (6, 1), (2, 3, 40, 1), (130,)], ids=str)
def test_a_softmax_of_a_chain_is_one_kernel(fusion: burn.Fusion, ref: burn.Backend,
                                            rng: np.random.Generator, log: bool,
                                            shape: tuple[int, ...]) -> None:
    x = random_tensor(rng, shape, "float32", -3, 3)
    # a leaf broadcast along the rows (stride 0 over the leading axes), a number, three ops
    bias = random_tensor(rng, shape[-2:] if len(shape) > 1 else shape, "float32", -1, 1)

    def run(b: burn.Backend) -> burn.Tensor:
        return _softmax((on(b, x) * 0.5 + on(b, bias)).tanh() * 4, log)

    check(run, fusion, ref)
    assert (fusion.stats.launches, fusion.stats.softmaxes, fusion.stats.ops) == (1, 1, 4)
    fused, unfused = (run(b).numpy() for b in (fusion, fusion.wraps))
    np.testing.assert_allclose(fused, unfused, rtol=2e-6, atol=1e-7)


def test_masked_attention_scores(fusion: burn.Fusion, ref: burn.Backend,
                                 rng: np.random.Generator) -> None:
    # softmax(q @ k^T * scale + causal mask): the mask's -inf entries give exact zeros
    q = random_tensor(rng, (2, 3, 6, 8), "float32")
    k = random_tensor(rng, (2, 3, 6, 8), "float32")
    mask = np.triu(np.full((6, 6), -np.inf, np.float32), 1)

    def run(b: burn.Backend) -> burn.Tensor:
        scores = on(b, q) @ on(b, k).transpose(2, 3)
        return (scores * 8 ** -0.5 + on(b, mask)).softmax(-1)

    check(run, fusion, ref)
    assert fusion.stats.softmaxes == 1
    assert np.all(np.triu(run(fusion).numpy(), 1) == 0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_dtypes(fusion: burn.Fusion, ref: burn.Backend, rng: np.random.Generator,
                dtype: str) -> None:
    if not supports(fusion, [dtype]):
        pytest.skip(f"{fusion.inner.name} has no {dtype} (refusal tested in test_tensor)")
    x = random_tensor(rng, (6, 33), dtype, -2, 2)
    y = random_tensor(rng, (33,), dtype, -2, 2)

    def run(b: burn.Backend) -> tuple[burn.Tensor, ...]:
        z = on(b, x) * on(b, y) - on(b, x)  # each step rounds to the dtype, fused or not
        return z.softmax(1), z.log_softmax(1)

    check(run, fusion, ref)
    assert (fusion.stats.launches, fusion.stats.softmaxes) == (2, 2)


def test_integer_chains_are_cast_first(fusion: burn.Fusion, ref: burn.Backend,
                                       rng: np.random.Generator) -> None:
    x = random_tensor(rng, (4, 9), "int32", -5, 5)
    check(lambda b: (on(b, x) * 2 - 1).softmax(1), fusion, ref)
    assert fusion.stats.softmaxes == 1


def test_the_scores_are_never_written(fusion: burn.Fusion) -> None:
    x = burn.tensor([[0.0, 1.0], [2.0, 2.0]], backend=fusion)
    scores = x * 2 - 1
    np.testing.assert_allclose(scores.softmax(1).numpy(),
                               [[0.11920292, 0.88079708], [0.5, 0.5]], rtol=1e-6)
    assert isinstance(scores.prim.storage, Lazy) and scores.prim.storage.real is None
    assert scores.tolist() == [[-1.0, 1.0], [3.0, 3.0]]  # read afterwards: its own kernel
    assert (fusion.stats.launches, fusion.stats.softmaxes) == (2, 1)


def test_plans_are_reused(fusion: burn.Fusion, rng: np.random.Generator) -> None:
    for _ in range(3):
        x = burn.from_numpy(random_tensor(rng, (4, 10), "float32"), backend=fusion)
        (x * 3).softmax(1).numpy()
    assert (fusion.stats.launches, fusion.stats.kernels, fusion.stats.softmaxes) == (3, 1, 3)


def test_reshaped_logits(fusion: burn.Fusion, ref: burn.Backend,
                         rng: np.random.Generator) -> None:
    # a language model's (batch, tokens, vocab) logits with a bias, flattened to rows
    x = random_tensor(rng, (2, 3, 7), "float32")
    bias = random_tensor(rng, (7,), "float32")
    check(lambda b: (on(b, x) * 0.5 + on(b, bias)).reshape(-1, 7).log_softmax(1), fusion, ref)
    assert fusion.stats.softmaxes == 1


@pytest.mark.parametrize("kind", ["strided axis", "long rows", "transposed view"])
def test_what_the_fused_kernel_does_not_take_is_computed_first(
        fusion: burn.Fusion, ref: burn.Backend, rng: np.random.Generator, kind: str) -> None:
    if kind == "strided axis":  # rows not contiguous in the result: tall tiles read them
        x, axis = random_tensor(rng, (9, 4), "float32"), 0
    elif kind == "long rows":  # longer than a tile: two passes
        x, axis = random_tensor(rng, (2, 2 * single_pass_limit(fusion.ctx)), "float32"), 1
    else:
        x, axis = random_tensor(rng, (4, 6), "float32"), 1

    def run(b: burn.Backend) -> burn.Tensor:
        value = on(b, x).exp()
        return (value.T if kind == "transposed view" else value).softmax(axis)

    check(run, fusion, ref)
    assert (fusion.stats.launches, fusion.stats.softmaxes) == (1, 0)


def test_gradients_through_a_fused_softmax(fusion: burn.Fusion,
                                           rng: np.random.Generator) -> None:
    x = random_tensor(rng, (8, 5), "float32")
    t = random_tensor(rng, (8, 6), "float32")
    check_fused_gradients(fusion, random_tensor(rng, (5, 6), "float32"), lambda w, ad: (
        ((burn.from_numpy(x, backend=ad) @ w) * 0.7 + 0.1).softmax(1)
        * burn.from_numpy(t, backend=ad)).sum())
    assert fusion.stats.softmaxes == 1


@pytest.mark.parametrize("n_cols", [8, 1000])
def test_many_leaves(fusion: burn.Fusion, ref: burn.Backend, rng: np.random.Generator,
                     n_cols: int) -> None:
    # as many loads as an elementwise kernel may take: the result is the one more buffer
    xs = [random_tensor(rng, (5, n_cols), "float32") for _ in range(fusion.max_leaves)]

    def total(b: burn.Backend) -> burn.Tensor:
        value = on(b, xs[0])
        for x in xs[1:]:
            value = value + on(b, x)
        return value.softmax(1)

    check(total, fusion, ref)
    # WGSL's row reductions read every loaded tile through workgroup memory: a row of 1000
    # (a tile of 1024) from 16 leaves needs 64 KiB of it, more than lavapipe's and most
    # adapters' 32 KiB, so the chain is computed first there
    fits = fusion.ctx.target != "wgsl" or n_cols == 8
    assert (tile_rows(fusion.ctx, n_cols, fusion.max_leaves) > 0) == fits
    assert (fusion.stats.launches, fusion.stats.softmaxes) == (1, 1 if fits else 0)
