"""Activation checkpointing (``burn.checkpoint``) on every backend present: the same
gradients as without it (first and second order, dropout included), the call's graph
dropped, and clear errors."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from gradcheck import check_gradients, check_second_order

import burn
from burn.autodiff.graph import _reverse_topological, node_of


def weights(backend, rng, width=6):
    ad = burn.Autodiff(backend)
    shapes = ((width, width), (width,), (width, width))
    return [burn.from_numpy(rng.normal(size=shape).astype(np.float32) / 2, backend=ad
                            ).require_grad() for shape in shapes]


def block(h, params, generator=None):
    w1, b1, w2 = params
    h = burn.gelu(burn.layer_norm(h @ w1 + b1, w1.shape[1]))
    return burn.dropout(h, 0.25, generator=generator) @ w2 + h


def network(x, params, checkpointed, generator=None):
    h = x
    for _ in range(3):
        if checkpointed:
            h = burn.checkpoint(lambda a: block(a, params, generator), h,
                                generators=() if generator is None else (generator,))
        else:
            h = block(h, params, generator)
    return (h * h).mean()


@pytest.mark.parametrize("explicit_generator", [False, True], ids=["default", "explicit"])
def test_the_gradients_of_a_network_with_dropout(backend, rng, explicit_generator):
    """Three blocks sharing weights, with dropout: the recomputation draws the same masks,
    and the generator is where it would be without the replay."""
    params = weights(backend, rng)
    x = burn.from_numpy(rng.normal(size=(4, 6)).astype(np.float32),
                        backend=params[0].backend).require_grad()
    results = []
    for checkpointed in (False, True):
        generator = burn.Generator(11) if explicit_generator else None
        burn.manual_seed(5)
        loss = network(x, params, checkpointed, generator)
        drawn = (generator or burn.default_generator()).get_state()
        grads = loss.backward()
        assert (generator or burn.default_generator()).get_state() == drawn
        results.append([grads[t].numpy() for t in (x, *params)])
    for plain, recomputed in zip(*results):
        np.testing.assert_allclose(recomputed, plain, rtol=1e-5, atol=1e-6)


def test_the_call_graph_is_dropped(backend, rng):
    params = weights(backend, rng)
    x = burn.from_numpy(rng.normal(size=(4, 6)).astype(np.float32), backend=params[0].backend)
    inside = []

    def recorded_block(a):
        out = block(a, params)
        inside.append(weakref.ref(node_of(out.prim)))
        return out

    loss = (burn.checkpoint(recorded_block, x) ** 2).sum()
    gc.collect()
    assert inside[0]() is None, "the call's own nodes outlive it"
    reached = {node.op for node in _reverse_topological([node_of(loss.prim)])}
    assert reached == {"checkpoint", "leaf", "square", "sum"}, reached
    assert loss.backward()[params[0]] is not None
    call = weakref.ref(node_of(loss.prim).parents[0].parents[0])  # sum <- pow <- checkpoint
    assert call().op == "checkpoint"
    gc.disable()  # freed by reference counts alone, as the step's other nodes: no cycle
    try:
        del loss
        assert call() is None, "the checkpoint's node outlives its graph"
    finally:
        gc.enable()


def test_first_and_second_order_against_differences(backend, rng):
    def fn(x, w):
        return burn.checkpoint(lambda a: (a @ w).tanh() * a.sum(axis=1, keepdim=True), x)

    arrays = [rng.normal(size=(3, 4)), rng.normal(size=(4, 2))]
    check_gradients(fn, arrays, backend, "float32", rng)
    check_second_order(fn, arrays, backend, "float32", rng)


def two_outputs(a, w):
    h = (a @ w).tanh()
    return h, (h * a[:, :2]).sum(axis=1)


@pytest.mark.parametrize("used", ["both", "first", "second"])
def test_several_outputs_recompute_once(backend, rng, used):
    """A call returning a tuple: the gradients of a loss on any of its outputs equal the
    plain call's, and the backward pass runs fn once for all of them."""
    ad = burn.Autodiff(backend)
    x = burn.from_numpy(rng.normal(size=(3, 4)).astype(np.float32), backend=ad).require_grad()
    w = burn.from_numpy(rng.normal(size=(4, 2)).astype(np.float32), backend=ad).require_grad()
    calls = []

    def counted(a):
        calls.append(1)
        return two_outputs(a, w)

    def loss_of(h, total):
        parts = {"both": (h * h).sum() + total.sum() * 3, "first": (h * h).sum(),
                 "second": total.sum() * 3}
        return parts[used]

    want = loss_of(*two_outputs(x, w)).backward()
    out = burn.checkpoint(counted, x)
    assert isinstance(out, tuple) and len(out) == 2
    got = loss_of(*out).backward()
    assert len(calls) == 2, "the backward pass recomputes the call once"
    for t in (x, w):
        np.testing.assert_allclose(got[t].numpy(), want[t].numpy(), rtol=1e-5, atol=1e-6)


def test_several_outputs_against_differences(backend, rng):
    def fn(x, w):
        h, total = burn.checkpoint(lambda a: list(two_outputs(a, w)), x)
        return h * total.reshape(3, 1) + h

    arrays = [rng.normal(size=(3, 4)), rng.normal(size=(4, 2))]
    check_gradients(fn, arrays, backend, "float32", rng)
    check_second_order(fn, arrays, backend, "float32", rng)


def test_outputs_made_before_the_call_pass_through(backend, rng):
    ad = burn.Autodiff(backend)
    x = burn.from_numpy(rng.normal(size=(2, 3)).astype(np.float32), backend=ad).require_grad()
    same, doubled = burn.checkpoint(lambda a: [a, a * 2], x)
    assert same is x  # its own node: the gradient flows as without the checkpoint
    grads = (same.sum() + (doubled * doubled).sum()).backward()
    np.testing.assert_allclose(grads[x].numpy(), 1 + 8 * x.numpy(), rtol=1e-6)


def test_untracked_calls_run_as_they_are(backend):
    x = burn.ones(3, backend=backend)
    assert burn.checkpoint(lambda a: a * 2, x).tolist() == [2.0, 2.0, 2.0]
    ad = burn.Autodiff(backend)
    leaf = burn.ones(3, backend=ad).require_grad()
    assert burn.checkpoint(lambda a: a, leaf) is leaf  # made before the call: nothing to drop


def test_user_errors(backend):
    ad = burn.Autodiff(backend)
    x = burn.ones(3, backend=ad).require_grad()
    with pytest.raises(burn.BurnError, match="checkpoint: fn must be callable, got Tensor"):
        burn.checkpoint(x, x)
    with pytest.raises(burn.BurnError, match=r"checkpoint: fn must return a tensor, or a tuple "
                                             r"or list of tensors, got a tuple of Tensor, int"):
        burn.checkpoint(lambda a: (a * 2, 3), x)
    with pytest.raises(burn.BurnError, match="generators must be burn.Generator objects"):
        burn.checkpoint(lambda a: a * 2, x, generators=(7,))
    calls = []

    def growing(a):  # a different result on each call
        calls.append(1)
        return (a * 2)[:len(calls) + 1]

    out = burn.checkpoint(growing, x)
    with pytest.raises(burn.BurnError, match=r"recomputation in the backward pass gave \(3,\) "
                                             r"for output 0, the first call a tracked tensor of "
                                             r"shape \(2,\)"):
        out.sum().backward()
