"""``burn.Fusion``: a reduction of a pending elementwise value computes it in its own kernel.

On every cubepy backend present, against the NumPy reference with the dtype's tolerance and
against the unfused backend; ``Fusion.stats`` shows the one launch (a test that only
compared values would pass with the fusion off).
"""

from __future__ import annotations

import numpy as np
import pytest
from optest import check, check_fused_gradients, on, random_tensor, supports

import burn
from burn.fusion import reduction
from burn.fusion.graph import Lazy

OPS = ["sum", "mean", "prod", "max", "min", "var", "std", "logsumexp"]
#: ops of two passes (the mean or the max, then the deviations or exponentials around it)
CENTERED = ("var", "std", "logsumexp")
AXES = [None, (0,), (1,), (2,), (0, 2)]


@pytest.fixture
def fusion(backend: burn.Backend) -> burn.Fusion:
    return burn.Fusion(backend.wraps if isinstance(backend, burn.Fusion) else backend)


def _reduced(t: burn.Tensor, op: str, axes) -> burn.Tensor:
    if op == "std":
        return t.std(axis=axes, correction=0)  # var: torch's default correction, 1
    return getattr(t, op)(axis=axes)


def _expression(b: burn.Backend, x: np.ndarray, bias: np.ndarray) -> burn.Tensor:
    # a broadcast leaf (the bias, stride 0 along two axes), a Python number and four ops
    return ((on(b, x) - on(b, bias)) * 0.5).tanh() + 1


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_a_reduction_of_a_chain_is_one_kernel(fusion: burn.Fusion, ref: burn.Backend,
                                              rng: np.random.Generator, op: str, axes) -> None:
    x = random_tensor(rng, (3, 5, 7), "float32", -1, 1)
    bias = random_tensor(rng, (5, 1), "float32", -1, 1)
    check(lambda b: _reduced(_expression(b, x, bias), op, axes), fusion, ref)
    launches = 2 if op in CENTERED else 1  # each computes the chain: 4 ops
    assert (fusion.stats.launches, fusion.stats.reductions, fusion.stats.ops) == (
        launches, launches, 4 * launches)
    fused, unfused = (_reduced(_expression(b, x, bias), op, axes).numpy()
                      for b in (fusion, fusion.wraps))
    np.testing.assert_allclose(fused, unfused, rtol=2e-6)  # the same values, maybe reordered


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "bool"])
def test_dtypes(fusion: burn.Fusion, ref: burn.Backend, rng: np.random.Generator,
                dtype: str) -> None:
    if not supports(fusion, [dtype]):
        pytest.skip(f"{fusion.inner.name} has no {dtype} (refusal tested in test_tensor)")
    if dtype == "bool":
        x = random_tensor(rng, (6, 9), "float32", -1, 1)

        def run(b: burn.Backend) -> tuple[burn.Tensor, ...]:
            above = on(b, x) * 2 > 0.5
            return above.any(axis=1), above.all(axis=0), (above | (on(b, x) < 0)).all()

        check(run, fusion, ref)
        assert fusion.stats.reductions == 3
        return
    low, high = (-20, 20) if dtype == "int32" else (-2, 2)
    x = random_tensor(rng, (6, 9), dtype, low, high)
    y = random_tensor(rng, (9,), dtype, low, high)

    def run(b: burn.Backend) -> tuple[burn.Tensor, ...]:
        z = on(b, x) * on(b, y) - on(b, x)  # each step rounds to the dtype, fused or not
        return z.sum(axis=1), z.max(axis=0), z.min()

    check(run, fusion, ref)
    assert (fusion.stats.launches, fusion.stats.reductions) == (3, 3)


def test_long_rows_split_over_cubes(fusion: burn.Fusion, ref: burn.Backend,
                                    rng: np.random.Generator) -> None:
    # a full reduction of 200,000 values: partial results per cube, then a second launch
    pred = random_tensor(rng, (200_000,), "float32", -1, 1)
    target = random_tensor(rng, (200_000,), "float32", -1, 1)

    def loss(b: burn.Backend) -> tuple[burn.Tensor, ...]:
        diff = on(b, pred) - on(b, target)
        return ((diff * diff).mean(), (diff * diff).max(), (diff * 3).var(),
                (diff * 3).logsumexp())

    check(loss, fusion, ref)
    assert fusion.stats.reductions == 6


def test_the_reduced_value_is_never_written(fusion: burn.Fusion) -> None:
    x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], backend=fusion)
    squares = (x - 1) ** 2
    assert squares.sum(axis=0).tolist() == [4.0, 10.0]
    assert isinstance(squares.prim.storage, Lazy) and squares.prim.storage.real is None
    # read afterwards, it is computed then, by its own kernel
    assert squares.tolist() == [[0.0, 1.0], [4.0, 9.0]]
    assert (fusion.stats.launches, fusion.stats.reductions) == (2, 1)


def test_plans_are_reused(fusion: burn.Fusion, rng: np.random.Generator) -> None:
    for _ in range(3):
        x = burn.from_numpy(random_tensor(rng, (4, 10), "float32"), backend=fusion)
        (x.exp() * x).sum(axis=1).numpy()
    assert (fusion.stats.launches, fusion.stats.kernels, fusion.stats.reductions) == (3, 1, 3)


def test_each_leafs_step_along_a_row_is_known_at_compile_time_on_the_cpu(
        fusion: burn.Fusion, ref: burn.Backend, rng: np.random.Generator) -> None:
    """A leaf read in order along the reduced axis (step 1: a vector load on the cpu) or
    broadcast along it (step 0: one load a row) tells the kernel so; a transposed leaf, and
    every leaf on a GPU target, reads through its strides (-1)."""
    x, w = random_tensor(rng, (4, 6), "float32", -1, 1), random_tensor(rng, (6, 4), "float32")
    peak = x.max(axis=1, keepdims=True)

    def run(b: burn.Backend) -> burn.Tensor:
        return ((on(b, x) - on(b, peak)).exp() * on(b, w).T).sum(axis=1)

    value = (on(fusion, x) - on(fusion, peak)).exp() * on(fusion, w).T
    rows = reduction.value_rows(fusion.inner.ctx, value.prim.storage, (4, 6), (1,), 8)
    cpu = fusion.inner.ctx.target.startswith("cpu")
    assert rows.layout.col_steps == ((1, 0, -1) if cpu else (-1, -1, -1))
    check(run, fusion, ref)
    assert (fusion.stats.launches, fusion.stats.reductions) == (1, 1)


@pytest.mark.parametrize("kind", ["transposed view", "seven axes"])
def test_layouts_a_kernel_cannot_address_are_computed_first(
        fusion: burn.Fusion, ref: burn.Backend, rng: np.random.Generator, kind: str) -> None:
    if kind == "transposed view":  # a view of the pending value other than the whole, in order
        x = random_tensor(rng, (4, 6), "float32")

        def run(b: burn.Backend) -> burn.Tensor:
            return on(b, x).exp().T.sum(axis=1)
    else:  # a leaf stored with its axes reversed: its six kept axes do not collapse to four
        x = random_tensor(rng, (2, 3, 2, 3, 2, 3, 2), "float32")

        def run(b: burn.Backend) -> burn.Tensor:
            t = on(b, np.ascontiguousarray(x.transpose(*range(6, -1, -1))))
            return (t.permute(*range(6, -1, -1)) + 1).sum(axis=1)

    check(run, fusion, ref)
    assert fusion.stats.reductions == 0 and fusion.stats.launches == 1


def test_reshaped_values(fusion: burn.Fusion, ref: burn.Backend,
                         rng: np.random.Generator) -> None:
    # a cross-entropy's logsumexp over (batch * tokens, vocab) logits with a bias: the
    # leaves, the broadcast bias too, are read through the reshape
    x = random_tensor(rng, (2, 3, 7), "float32")
    bias = random_tensor(rng, (7,), "float32")

    def logits(b: burn.Backend) -> burn.Tensor:
        return on(b, x) * 0.5 + on(b, bias)

    check(lambda b: (logits(b).reshape(-1, 7).logsumexp(1), logits(b).reshape(6, 7).max(0),
                     (on(b, x) * 2).flatten().sum()), fusion, ref)
    assert fusion.stats.reductions == 4  # two for the logsumexp
    # flattened, the bias (strides 0, 0, 1) has no strides over 42 elements; and a leaf
    # stored transposed does not take a reshape: both values are computed first
    check(lambda b: (logits(b).flatten().sum(),
                     (on(b, np.ascontiguousarray(x.transpose(0, 2, 1))).permute(0, 2, 1) + 1)
                     .reshape(6, 7).sum(1)), fusion, ref)
    assert fusion.stats.reductions == 4


def test_gradients_of_a_fused_loss(fusion: burn.Fusion, rng: np.random.Generator) -> None:
    x = random_tensor(rng, (16, 4), "float32")
    t = random_tensor(rng, (16, 3), "float32")
    check_fused_gradients(fusion, random_tensor(rng, (4, 3), "float32"), lambda w, ad: (
        (burn.from_numpy(x, backend=ad) @ w - burn.from_numpy(t, backend=ad)) ** 2).mean())
    assert fusion.stats.reductions >= 1


def test_many_leaves(fusion: burn.Fusion, ref: burn.Backend, rng: np.random.Generator) -> None:
    # as many distinct loads as a kernel may take (fewer where WebGPU binds fewer buffers)
    xs = [random_tensor(rng, (5, 8), "float32") for _ in range(fusion.max_leaves)]

    def total(b: burn.Backend) -> burn.Tensor:
        value = on(b, xs[0])
        for x in xs[1:]:
            value = value + on(b, x)
        return value

    check(lambda b: total(b).sum(axis=0), fusion, ref)
    assert (fusion.stats.launches, fusion.stats.reductions) == (1, 1)
    # a variance's second pass also binds the means, one buffer more than the kernel may
    # take: the chain is computed first (one launch), then the plain variance
    check(lambda b: total(b).var(axis=0), fusion, ref)
    assert (fusion.stats.launches, fusion.stats.reductions) == (2, 1)


def test_unknown_reductions_are_refused(fusion: burn.Fusion) -> None:
    x = burn.tensor([1.0, 2.0], backend=fusion).exp()
    with pytest.raises(ValueError, match="unknown reduction 'median'"):
        fusion.reduce("median", x.prim, (0,), burn.float32, burn.float32)
