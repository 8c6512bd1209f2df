"""The Autodiff backend's API: leaves, ``backward``, ``Gradients``, detaching, moving in and
out, and the errors a user can cause; on every backend present."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import burn
from burn.autodiff.graph import node_of


def test_gradients_live_on_the_inner_backend(backend):
    ad = burn.Autodiff(backend)
    x = burn.tensor([1.0, -2.0, 3.0], backend=ad).require_grad()
    y = (x * x * x).sum()
    assert y.backend == ad and y.requires_grad
    grad = y.backward()[x]
    assert grad.backend == backend
    assert grad.tolist() == [3.0, 12.0, 27.0]


def test_a_graph_differentiates_twice_and_leaves_accumulate(backend):
    ad = burn.Autodiff(backend)
    x = burn.tensor([2.0], backend=ad).require_grad()
    y = x * x + x * 3  # x reaches the loss by two paths
    first, second = y.backward(), y.backward()
    assert first[x].tolist() == second[x].tolist() == [7.0]


def test_unused_leaves_and_detached_paths(backend):
    ad = burn.Autodiff(backend)
    x = burn.tensor([1.0, 2.0], backend=ad).require_grad()
    unused = burn.ones(2, backend=ad).require_grad()
    grads = (x.detach() * x).sum().backward()
    assert grads[x].tolist() == [1.0, 2.0]  # the detached factor is a constant
    assert grads[unused] is None and len(grads) == 1
    assert not x.detach().requires_grad and x.inner().backend == backend
    inner = x.to(backend)  # out of the Autodiff backend and back: no copy, untracked
    assert inner.backend == backend and inner.prim.storage is x.prim.storage
    back = inner.to(ad)
    assert back.backend == ad and not back.requires_grad and back.tolist() == [1.0, 2.0]


def test_a_weighted_backward(backend):
    ad = burn.Autodiff(backend)
    x = burn.tensor([1.0, 2.0], backend=ad).require_grad()
    grads = (x * 2).backward(burn.tensor([10.0, 1.0], backend=backend))
    assert grads[x].tolist() == [20.0, 2.0]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_a_leaf_gets_its_own_dtype(backend, dtype):
    if dtype not in backend.dtypes:
        with pytest.raises(burn.BurnError, match=f"dtype {dtype} is not supported"):
            burn.ones(2, dtype=dtype, backend=burn.Autodiff(backend))
        return
    ad = burn.Autodiff(backend)
    x = burn.tensor([0.5, 1.5], dtype=dtype, backend=ad).require_grad()
    grad = (x.exp() * x.to(burn.float32)).sum().backward()[x]
    assert grad.dtype.name == dtype
    expected = np.exp([0.5, 1.5]) * np.array([1.5, 2.5])
    np.testing.assert_allclose(grad.numpy().astype(np.float64), expected, rtol=1e-2)


def test_a_long_chain_needs_no_recursion():
    ad = burn.Autodiff(burn.NumPy())
    x = burn.tensor([1.0], dtype=burn.float64, backend=ad).require_grad()
    y = x
    for _ in range(5000):
        y = y * 1.0001
    np.testing.assert_allclose(y.backward()[x].numpy(), [1.0001 ** 5000], rtol=1e-9)


def test_backward_in_another_thread(backend):
    ad = burn.Autodiff(backend)
    w = burn.tensor([[1.0, 2.0], [3.0, 4.0]], backend=ad).require_grad()
    loss = (w @ w).sum()
    results = {}
    worker = threading.Thread(target=lambda: results.update(g=loss.backward()[w].tolist()))
    worker.start()
    worker.join()
    assert results["g"] == loss.backward()[w].tolist() == [[7.0, 11.0], [9.0, 13.0]]


def test_user_errors(backend):
    ad = burn.Autodiff(backend)
    with pytest.raises(burn.BurnError, match=r"records no gradients; create it on burn.Autodiff"):
        burn.ones(2, backend=backend).require_grad()
    with pytest.raises(burn.BurnError, match="only float tensors have gradients, got int32"):
        burn.tensor([1, 2], backend=ad).require_grad()
    x = burn.ones(3, backend=ad).require_grad()
    with pytest.raises(burn.BurnError, match=r"has shape \(3,\); reduce it to one element"):
        (x * 2).backward()
    with pytest.raises(burn.BurnError, match=r"grad must be a tensor of shape \(3,\), got \(2,\)"):
        (x * 2).backward(burn.ones(2, backend=backend))
    with pytest.raises(burn.BurnError, match="depends on no tensor that requires a gradient"):
        burn.ones(1, backend=ad).backward()
    grads = (x * 2).sum().backward()
    with pytest.raises(burn.BurnError, match="is the result of mul, not a leaf"):
        grads[x * 2]
    with pytest.raises(burn.BurnError, match="does not track gradients"):
        grads[burn.ones(3, backend=ad)]
    with pytest.raises(burn.BurnError, match="expected the Gradients that backward"):
        x.grad({})
    with pytest.raises(burn.BurnError, match=r"wrap the plain backend once; for gradients of "
                                             r"gradients call loss.backward\(create_graph=True\)"):
        burn.Autodiff(ad)
    with pytest.raises(burn.BurnError, match=r"different backends \(Autodiff\(.*\) and .*\) of "
                                             r"one device.*\.detach\(\) / \.inner\(\)"):
        x + burn.ones(3, backend=backend)


def test_sums_and_linear_ops_keep_no_tensor_alive():
    """The rules of add, sub, sum and mean read no values, and exp's reads its output: their
    nodes keep nothing else, so an intermediate result only they read is freed."""
    ad = burn.Autodiff(burn.NumPy())
    w = burn.ones((3, 3), backend=ad).require_grad()
    product = w @ w
    watched = weakref.ref(product.prim.storage)
    loss = ((product + 1.0) - w).mean(axis=0).sum()
    del product
    gc.collect()
    assert watched() is None, "a node keeps the matmul's output alive"
    scaled = w * 0.5
    watched = weakref.ref(scaled.prim.storage)
    loss = loss + (-scaled).exp().sum()  # exp's derivative is its output
    del scaled
    gc.collect()
    assert watched() is None, "exp's node keeps its input alive"
    squared, powered = w ** 2, w ** w  # the output serves only the exponent's gradient
    assert node_of(squared.prim).output is None and node_of(powered.prim).output is not None
    expected = 5 / 3 - 0.5 * np.exp(-0.5)  # (6 - 1) / 3, and exp(-w / 2)'s slope
    np.testing.assert_allclose(loss.backward()[w].numpy(), np.full((3, 3), expected),
                               rtol=1e-6)
