"""Gradients of gradients: ``backward(create_graph=True)`` on every backend present.

Each case's Hessian-vector product (the gradient of ``sum_i <grad_i, u_i>`` for random
directions ``u``) is checked against a central difference of its float64 first gradients
along ``u`` (``gradcheck.check_second_order``). The cases are the first-order suite's
(``test_autodiff.py``), made nonlinear where an op is linear (a product with an input, or
a square), so that every rule's own ops are differentiated.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_second_order
from test_autodiff import (
    BINARY,
    CONVS,
    REDUCTIONS,
    UNARY,
    broadcast_operands,
    distinct,
    gathered_and_scattered,
    normal,
    positive,
    two_diagonals,
)

import burn


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, backend, rng):
    """``op(x) * x``: ``op``'s second derivative and its first, through the product."""
    check_second_order(lambda x: getattr(burn, op)(x) * x, [UNARY[op](3, 4)(rng)], backend,
                       "float32", rng)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcast(op, backend, rng):
    check_second_order(lambda a, b: getattr(burn, op)(a, b) * (a + b),
                       broadcast_operands(op, rng), backend, "float32", rng)


def test_where_clamp_remainder_and_scalars(backend, rng):
    x = rng.uniform(0.1, 0.9, size=(5,)) + np.arange(5)

    def fn(a):
        kept = burn.where(a > 2, a * a, a.exp() * 0.1).clamp(0.2, 20.0)
        return kept * (a % 1.5) + 3 / (a + 1) - a ** 3

    check_second_order(fn, [x], backend, "float32", rng)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, backend, rng):
    fn, make = REDUCTIONS[name]
    check_second_order(lambda x: fn(x) * fn(x), [make(2, 3, 4)(rng)], backend, "float32", rng)


def test_norms(backend, rng):
    x, w, b = normal(3, 2, 4)(rng), positive(2, 4)(rng), normal(2, 4)(rng)
    check_second_order(lambda a, c, d: burn.layer_norm(a, (2, 4), c, d), [x, w, b], backend,
                       "float32", rng)
    check_second_order(lambda a, c: burn.rms_norm(a, 4, c[0]), [x, w], backend, "float32",
                       rng)
    images, scale, shift = normal(2, 4, 3)(rng), positive(4)(rng), normal(4)(rng)
    check_second_order(lambda a, c, d: burn.group_norm(a, 2, c, d), [images, scale, shift],
                       backend, "float32", rng)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_chain_of_views(backend, rng, dtype):
    """Permutes, steps, flips, broadcasts and slices: their gradients go back by gathers,
    which the second pass differentiates again."""
    if dtype not in backend.dtypes:
        pytest.skip(f"{backend.name} has no {dtype}: test_float64_is_refused_where_absent")

    def fn(x):
        t = x.reshape(4, 6).T[1::2, ::-1]
        u = t.unsqueeze(0).expand(2, 3, 4)
        v = burn.cat([u.flatten(1), x.reshape(2, 12)], axis=1)
        return v.narrow(1, 2, 15) * v.narrow(1, 5, 15)

    check_second_order(fn, [normal(2, 3, 4)(rng)], backend, dtype, rng)


def test_diagonal(backend, rng):
    check_second_order(two_diagonals, [normal(3, 4, 5)(rng)], backend, "float32", rng)


def test_gather_take_scatter(backend, rng):
    def fn(x, src):
        out = gathered_and_scattered(x, src)
        return out * out

    check_second_order(fn, [normal(2, 4)(rng), normal(2, 5)(rng)], backend, "float32", rng)


def test_pad_triangles_sort_topk(backend, rng):
    def fn(x):
        sorted_values = x.sort(axis=1, descending=True).values
        top = x.topk(2, axis=0).values
        padded = burn.pad(burn.triu(x, 1) + burn.tril(sorted_values), (1, 2, 0, 1),
                          mode="reflect")
        return padded.sum(axis=0)[:4] * top.sum(axis=0)

    check_second_order(fn, [distinct(4, 4)(rng)], backend, "float32", rng)


def test_matmul(backend, rng):
    """Bilinear: the Hessian is the cross terms, each a product of the other operand."""
    check_second_order(lambda a, b: burn.matmul(a, b).tanh(),
                       [normal(2, 3, 4)(rng), normal(4, 2)(rng)], backend, "float32", rng)


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv2d(name, backend, rng):
    """The input's gradient is a transposed convolution and the weight's a product with the
    unfolded input: both are differentiated again, in the weight and in the input."""
    options = CONVS[name]
    groups = options["groups"]
    x, w, b = normal(1, 2, 5, 4)(rng), normal(2, 2 // groups, 3, 2)(rng), normal(2)(rng)

    def fn(a, c, d):
        out = burn.conv2d(a, c, d, **options)
        return out * out

    check_second_order(fn, [x, w, b], backend, "float32", rng)


@pytest.mark.parametrize("kind", ["max", "avg", "adaptive"])
def test_pooling(kind, backend, rng):
    def fn(x):
        if kind == "adaptive":
            pooled = burn.adaptive_avg_pool2d(x, (3, 2))
        else:
            pool = burn.max_pool2d if kind == "max" else burn.avg_pool2d
            pooled = pool(x, 3, stride=2, padding=1)
        return pooled * pooled

    check_second_order(fn, [distinct(1, 2, 7, 5)(rng)], backend, "float32", rng)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_fused_attention(causal, backend, rng):
    """Fused in float32 on the cubepy backends; a graph-building pass composes its
    gradient instead of running the fused backward kernel."""
    q, k, v = normal(1, 2, 3, 4)(rng), normal(1, 2, 5, 4)(rng), normal(1, 2, 5, 4)(rng)
    check_second_order(lambda a, b, c: burn.scaled_dot_product_attention(a, b, c,
                                                                         causal=causal),
                       [q, k, v], backend, "float32", rng)


def test_dropout_keeps_its_draws(backend, rng):
    """``dropout(x) ** 2``: the Hessian is ``2 * scale ** 2`` on the kept elements, with the
    mask of the forward pass."""
    ad = burn.Autodiff(backend)
    x = burn.from_numpy(positive(64)(rng).astype(np.float32), backend=ad).require_grad()
    out = burn.dropout(x, 0.25)
    kept_scale = out.detach().numpy() / x.detach().numpy()  # 0 or 1 / 0.75
    u = rng.uniform(-1.0, 1.0, size=64).astype(np.float32)
    first = (out * out).sum().backward(create_graph=True)[x]
    second = (first * burn.from_numpy(u, backend=ad)).sum().backward()[x].numpy()
    np.testing.assert_allclose(second, 2 * kept_scale ** 2 * u, rtol=1e-5, atol=1e-6)
    assert 0 < np.count_nonzero(kept_scale) < 64


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_penalty_of_a_network(backend, rng, dtype):
    """A critic's gradient penalty (WGAN-GP): the gradient of ``||d critic / d input||``
    with respect to the critic's weights, through linear layers, gelu, layer norm and a
    log-softmax."""
    if dtype not in backend.dtypes:
        pytest.skip(f"{backend.name} has no {dtype}: test_float64_is_refused_where_absent")

    def critic(x, w1, b1, w2):
        h = burn.gelu(burn.layer_norm(x @ w1 + b1, 5))
        return (h @ w2).log_softmax(axis=-1)[:, :1]

    arrays = [normal(3, 4)(rng), normal(4, 5)(rng), normal(5)(rng), normal(5, 2)(rng)]
    check_second_order(critic, arrays, backend, dtype, rng)


def test_meta_learning_through_an_sgd_step(backend, rng):
    """MAML on a linear regression: the outer loss after one inner SGD step, differentiated
    through that step, against its closed form in float64."""
    xs, ys = rng.normal(size=(6, 3)), rng.normal(size=(6, 1))
    xq, yq = rng.normal(size=(5, 3)), rng.normal(size=(5, 1))
    w0, lr = rng.normal(size=(3, 1)), 0.1
    ad = burn.Autodiff(backend)

    def tensor(a):
        return burn.from_numpy(a.astype(np.float32), backend=ad)

    w = tensor(w0).require_grad()
    inner = ((tensor(xs) @ w - tensor(ys)) ** 2).mean()
    adapted = w - inner.backward(create_graph=True)[w] * lr
    outer = ((tensor(xq) @ adapted - tensor(yq)) ** 2).mean()
    got = outer.backward()[w].numpy()
    step = np.eye(3) - lr * 2 / 6 * xs.T @ xs  # d adapted / d w
    w1 = w0 - lr * 2 / 6 * xs.T @ (xs @ w0 - ys)
    expected = step @ (2 / 5 * xq.T @ (xq @ w1 - yq))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_under_fusion(backend, rng):
    """``Autodiff(Fusion(...))``: the rules' ops are recorded and fused like any others."""
    fused = backend if isinstance(backend, burn.Fusion) else burn.Fusion(backend)

    def fn(a, b):
        return (a @ b).sigmoid() * a.sum(axis=1, keepdim=True).exp()

    check_second_order(fn, [normal(3, 4)(rng) * 0.5, normal(4, 2)(rng)], fused, "float32", rng)


@pytest.mark.parametrize("leaf", ["row_major", "transposed"])
def test_third_order(backend, leaf):
    """``x ** 4`` three times, read through a flipped slice: ``4 x^3``, ``12 x^2``,
    ``24 x``, and 0 where the slice does not reach. A transposed leaf is not row-major, so
    the views' adjoints there are takes of the flat gradient."""
    ad = burn.Autodiff(backend)
    values = np.array([[0.5, -1.0, 2.0], [1.5, 3.0, -0.5]], np.float32)
    start = burn.from_numpy(values if leaf == "row_major" else values.T.copy(), backend=ad)
    x = (start if leaf == "row_major" else start.T).require_grad()
    read = np.zeros_like(values)
    read[:, ::2] = 1.0  # the columns the slice reads
    first = (x[:, ::-2] ** 4).sum().backward(create_graph=True)[x]
    second = first.sum().backward(create_graph=True)[x]
    third = second.sum().backward()[x]
    np.testing.assert_allclose(first.numpy(), 4 * values ** 3 * read, rtol=1e-6)
    np.testing.assert_allclose(second.numpy(), 12 * values ** 2 * read, rtol=1e-6)
    np.testing.assert_allclose(third.numpy(), 24 * values * read, rtol=1e-6)
    assert first.backend == ad and second.requires_grad and third.backend == backend


def test_user_errors(backend):
    ad = burn.Autodiff(backend)
    x = burn.ones(3, backend=ad).require_grad()
    with pytest.raises(burn.BurnError, match="create_graph must be True or False, got 'yes'"):
        (x * x).sum().backward(create_graph="yes")
    constant = (x * 2).sum().backward(create_graph=True)[x]  # 2 everywhere: no graph
    assert not constant.requires_grad
    with pytest.raises(burn.BurnError, match="constant in the leaves, as that of a linear "
                                             "loss, has no gradient of its own"):
        constant.sum().backward()
