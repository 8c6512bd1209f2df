"""The Autodiff backend: every differentiable op's gradient against central differences, on
every backend present (float32; float64 where the backend has it).

Inputs stay away from kinks (``abs``, ``relu``, ``max``, ``remainder``) where a difference
quotient would straddle two pieces; ``prod`` and ``cumprod`` get exact zeros on purpose.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients

import burn


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, size=shape)


def away_from_zero(*shape):
    return lambda rng: rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.3, 1.5, size=shape)


def distinct(*shape):
    """Values at least 0.05 apart: maxima and sorts have one winner, far from a tie."""
    return lambda rng: rng.permutation(np.arange(np.prod(shape))).reshape(shape) * 0.05 - 1.0


def with_zeros(*shape):
    def make(rng):
        x = rng.uniform(0.5, 1.5, size=shape)
        x.reshape(-1)[[1, 4]] = 0.0  # one zero in some rows, two in another
        return x

    return make


UNARY = {
    "exp": normal, "exp2": normal, "expm1": normal, "log": positive, "log2": positive,
    "log10": positive, "log1p": positive, "sqrt": positive, "rsqrt": positive, "sin": normal,
    "cos": normal, "tan": normal, "tanh": normal, "atan": normal, "erf": normal,
    "sigmoid": normal, "gelu": normal, "silu": normal, "softplus": normal,
    "abs": away_from_zero, "square": normal, "relu": away_from_zero, "reciprocal": positive,
    "neg": normal, "floor": away_from_zero, "sign": away_from_zero,
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, backend, rng):
    check_gradients(lambda x: getattr(burn, op)(x), [UNARY[op](3, 4)(rng)], backend,
                    "float32", rng)


BINARY = {
    "add": (normal, normal), "sub": (normal, normal), "mul": (normal, normal),
    "div": (normal, positive), "pow": (positive, normal), "maximum": (distinct, distinct),
    "minimum": (distinct, distinct), "atan2": (normal, positive),
}


def broadcast_operands(op: str, rng: np.random.Generator) -> list[np.ndarray]:
    """``op``'s operands, (3, 1) and (1, 4), away from its kinks and ties."""
    make_x, make_y = BINARY[op]
    x, y = make_x(3, 1)(rng), make_y(1, 4)(rng)
    if op in ("maximum", "minimum"):
        y = y + 0.025  # between the x values: no ties
    return [x, y]


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcast(op, backend, rng):
    """(3, 1) against (1, 4): the broadcast operands' gradients are summed back."""
    check_gradients(lambda a, b: getattr(burn, op)(a, b), broadcast_operands(op, rng), backend,
                    "float32", rng)


def test_remainder_and_scalars(backend, rng):
    x = rng.uniform(0.1, 0.9, size=(5,)) + np.arange(5)
    check_gradients(lambda a: (a % 1.5) * 2 + 3 / (a + 1) - a ** 2, [x], backend,
                    "float32", rng)


def test_where_clamp_and_masked_fill(backend, rng):
    x, y = away_from_zero(4, 5)(rng), normal(4, 5)(rng)

    def fn(a, b):
        return burn.where(a > 0, a * b, b).clamp(-0.8, 0.8) + a.masked_fill(b > 0, 0.5)

    check_gradients(fn, [x, y], backend, "float32", rng)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_chain_of_views(backend, rng, dtype):
    if dtype not in backend.dtypes:
        pytest.skip(f"{backend.name} has no {dtype}: test_float64_is_refused_where_absent")

    def fn(x):
        t = x.reshape(4, 6).T                    # a permutation of the whole origin
        t = t[1::2, ::-1]                         # steps and a flip: a part of it
        u = t.unsqueeze(0).expand(2, 3, 4)        # broadcast: gradients add up
        v = burn.cat([u.flatten(1), x.reshape(2, 12)], axis=1)
        return v.narrow(1, 2, 15) * v.narrow(1, 5, 15)

    check_gradients(fn, [normal(2, 3, 4)(rng)], backend, dtype, rng)


def two_diagonals(x):
    """Two diagonals of ``x`` (3, 4, 5), one below the main one of swapped axes: views whose
    gradients go back to the elements they read."""
    return x.diagonal(0, 1, 2).exp() * x.diagonal(-1, 2, 1).sum(axis=1, keepdim=True)


def test_diagonal(backend, rng):
    check_gradients(two_diagonals, [normal(3, 4, 5)(rng)], backend, "float32", rng)


def test_views_of_a_broadcast_view(backend, rng):
    """A slice of an expanded view: both are views of one origin."""
    check_gradients(lambda x: x.expand(3, 4)[1:, ::2].T * x.sum(), [normal(4)(rng)],
                    backend, "float32", rng)


def test_repeat_split_chunk_stack(backend, rng):
    def fn(x):
        a, b = x.repeat(2, 1).split(3, axis=0)
        c, d = x.chunk(2, axis=1)
        return burn.stack([a * b, burn.cat([d, c], axis=1) ** 2], axis=0)

    check_gradients(fn, [normal(3, 4)(rng)], backend, "float32", rng)


REDUCTIONS = {
    "sum": (lambda x: x.sum(axis=(0, 2)), normal),
    "mean": (lambda x: x.mean(axis=1, keepdim=True), normal),
    "prod": (lambda x: x.prod(axis=(1, 2)), with_zeros),
    "prod_all": (lambda x: x.prod().reshape(1) * x[0, 0, 0], positive),
    "max": (lambda x: x.max(axis=2), distinct),
    "min": (lambda x: x.min(axis=(0, 1)), distinct),
    "var": (lambda x: x.var(axis=1), normal),
    "std": (lambda x: x.std(axis=(0, 2), correction=0), normal),
    "logsumexp": (lambda x: x.logsumexp(axis=2), normal),
    "cumsum": (lambda x: x.cumsum(1), normal),
    "cumprod": (lambda x: x.cumprod(2), with_zeros),
    "softmax": (lambda x: x.softmax(axis=1), normal),
    "log_softmax": (lambda x: x.log_softmax(axis=-1), normal),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, backend, rng):
    fn, make = REDUCTIONS[name]
    check_gradients(fn, [make(2, 3, 4)(rng)], backend, "float32", rng)


def test_max_shares_a_tie(backend):
    ad = burn.Autodiff(backend)
    x = burn.tensor([1.0, 3.0, 3.0, 2.0], backend=ad).require_grad()
    assert x.max().backward()[x].tolist() == [0.0, 0.5, 0.5, 0.0]


def test_norms(backend, rng):
    x, w, b = normal(3, 2, 4)(rng), positive(2, 4)(rng), normal(2, 4)(rng)
    check_gradients(lambda a, c, d: burn.layer_norm(a, (2, 4), c, d), [x, w, b], backend,
                    "float32", rng)
    check_gradients(lambda a, c: burn.rms_norm(a, 4, c[0]), [x, w], backend, "float32", rng)
    images, scale, shift = normal(2, 4, 3)(rng), positive(4)(rng), normal(4)(rng)
    check_gradients(lambda a, c, d: burn.group_norm(a, 2, c, d), [images, scale, shift],
                    backend, "float32", rng)

    def batch_norm(a, c, d):
        layer = burn.nn.BatchNorm(4, backend=a.backend)  # fresh statistics on each call
        layer.weight, layer.bias = c, d
        return layer(a)

    check_gradients(batch_norm, [images, scale, shift], backend, "float32", rng)


def gathered_and_scattered(x, src):
    """Reads of ``x`` (2, 4) by index (gather, index_select, embedding) and ``src`` (2, 5)
    added into it by index, side by side (linear in both)."""
    ad = x.backend
    idx = burn.from_numpy(np.array([[2, 0, 2], [1, 1, 0]]), backend=ad)
    picked = x.gather(1, idx) + x.index_select(1, burn.tensor([3, 3, 0], backend=ad))
    grown = x.scatter_add(1, idx, src)
    rows = burn.embedding(x.T, idx).reshape(2, 6)  # rows of the (4, 2) transpose
    return burn.cat([picked, grown, rows], axis=1)


def test_gather_take_scatter(backend, rng):
    check_gradients(gathered_and_scattered, [normal(2, 4)(rng), normal(2, 5)(rng)], backend,
                    "float32", rng)


def test_pad_triangles_sort_topk(backend, rng):
    def fn(x):
        sorted_values = x.sort(axis=1, descending=True).values
        top = x.topk(2, axis=0).values
        return burn.pad(burn.triu(x, 1) + burn.tril(sorted_values), (1, 2, 0, 1)).sum(
            axis=0)[:4] * top.sum(axis=0)

    check_gradients(fn, [distinct(4, 4)(rng)], backend, "float32", rng)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes(backend, rng, mode):
    """An element read by several padded positions sums their gradients."""
    check_gradients(lambda x: burn.pad(x, (2, 1, 1, 0), mode=mode), [normal(3, 4)(rng)],
                    backend, "float32", rng)


def test_matmul(backend, rng):
    check_gradients(lambda a, b: a @ b, [normal(3, 5)(rng), normal(5, 2)(rng)], backend,
                    "float32", rng)
    # batched with broadcasting: b is shared by both batches
    check_gradients(lambda a, b: burn.matmul(a, b), [normal(2, 3, 4)(rng), normal(4, 2)(rng)],
                    backend, "float32", rng)


CONVS = {
    "plain": dict(stride=1, padding=0, dilation=1, groups=1),
    "strided_padded": dict(stride=2, padding=1, dilation=1, groups=1),
    "dilated_grouped": dict(stride=1, padding=2, dilation=2, groups=2),
    "uneven": dict(stride=(2, 1), padding=(0, 1), dilation=(1, 2), groups=1),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv2d(name, backend, rng):
    options = CONVS[name]
    groups = options["groups"]
    x, w, b = normal(2, 4, 6, 5)(rng), normal(4, 4 // groups, 3, 2)(rng), normal(4)(rng)
    check_gradients(lambda a, c, d: burn.conv2d(a, c, d, **options), [x, w, b], backend,
                    "float32", rng)


def test_conv1d(backend, rng):
    check_gradients(lambda a, c: burn.conv1d(a, c, stride=2, padding=1),
                    [normal(2, 3, 9)(rng), normal(2, 3, 3)(rng)], backend, "float32", rng)


@pytest.mark.parametrize("kind, options", [
    ("max", {}), ("avg", {}), ("max", {"ceil_mode": True}),
    ("avg", {"ceil_mode": True, "count_include_pad": False})], ids=str)
def test_pool2d(kind, options, backend, rng):
    """ceil_mode adds a last window at the width of 6 (a partial one): its gradient reaches
    only the input it covers."""
    pool = burn.max_pool2d if kind == "max" else burn.avg_pool2d
    check_gradients(lambda x: pool(x, 3, stride=2, padding=1, **options),
                    [distinct(2, 2, 7, 6)(rng)], backend, "float32", rng)


def test_max_pool_gives_a_tie_to_the_first(backend):
    ad = burn.Autodiff(backend)
    x = burn.ones((1, 1, 2, 2), backend=ad).require_grad()
    assert burn.max_pool2d(x, 2).sum().backward()[x].tolist() == [[[[1.0, 0.0], [0.0, 0.0]]]]


def test_adaptive_avg_pool2d(backend, rng):
    check_gradients(lambda x: burn.adaptive_avg_pool2d(x, (3, 2)), [normal(1, 2, 7, 5)(rng)],
                    backend, "float32", rng)


def test_dropout_uses_the_same_draws(backend, rng):
    ad = burn.Autodiff(backend)
    x = burn.from_numpy(positive(50)(rng).astype(np.float32), backend=ad)
    burn.manual_seed(7)
    plain_out = burn.dropout(x.inner(), 0.3).numpy()
    burn.manual_seed(7)
    leaf = x.require_grad()
    out = burn.dropout(leaf, 0.3)
    np.testing.assert_allclose(out.numpy(), plain_out, rtol=1e-6)
    grad = out.sum().backward()[leaf].numpy()
    np.testing.assert_allclose(grad, plain_out / x.numpy(), rtol=1e-5)
    assert 0 < np.count_nonzero(grad) < 50


def test_conv2d_weight_gradient_in_parts(backend, rng, monkeypatch):
    """A batch whose unfolded input passes the limit is summed one part at a time."""
    from burn.autodiff import linalg

    monkeypatch.setattr(linalg, "UNFOLD_LIMIT", 1)  # one image per part
    check_gradients(lambda a, c: burn.conv2d(a, c, stride=2, padding=1),
                    [normal(3, 2, 5, 5)(rng), normal(4, 2, 3, 3)(rng)], backend, "float32", rng)
