"""Gradient checks for the Autodiff backend: analytic gradients against central differences.

``check_gradients(fn, arrays, backend, dtype)`` computes the gradients of
``sum(fn(*inputs) * weights)`` (random weights, so every output element counts with its own
factor) on ``burn.Autodiff(backend)`` in ``dtype``, and compares them with central
differences of the same function computed in float64 on the NumPy backend.

Example:
    check_gradients(lambda x: x.exp(), [rng.normal(size=(3, 4))], backend, "float32")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import burn

#: relative and absolute tolerance of a gradient computed in each dtype (against float64
#: differences, whose own error is ~1e-9 at step 1e-6)
TOLERANCE = {"float32": 2e-4, "float64": 1e-6}
STEP = 1e-6


def _loss(fn: Callable[..., burn.Tensor], arrays: Sequence[np.ndarray], weights: np.ndarray,
          backend: burn.Backend) -> burn.Tensor:
    inputs = [burn.from_numpy(a, backend=backend) for a in arrays]
    return (fn(*inputs) * burn.from_numpy(weights, backend=backend)).sum()


def central_differences(loss: Callable[[list[np.ndarray]], float],
                        arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Central differences of ``loss(arrays)`` (a number) with respect to each array, the
    arrays taken in float64."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    grads = []
    for a in arrays:
        grad = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            saved = a[i]
            a[i] = saved + STEP
            up = loss(arrays)
            a[i] = saved - STEP
            down = loss(arrays)
            a[i] = saved
            grad[i] = (up - down) / (2 * STEP)
        grads.append(grad)
    return grads


def numeric_gradients(fn: Callable[..., burn.Tensor], arrays: Sequence[np.ndarray],
                      weights: np.ndarray) -> list[np.ndarray]:
    """Central differences of the weighted sum, in float64 on the NumPy backend."""
    reference = burn.NumPy()
    return central_differences(lambda a: _loss(fn, a, weights, reference).item(), arrays)


def analytic_gradients(fn: Callable[..., burn.Tensor], arrays: Sequence[np.ndarray],
                       weights: np.ndarray, backend: burn.Backend, dtype: str
                       ) -> list[np.ndarray | None]:
    """The Autodiff backend's gradients of the weighted sum, inputs and weights in ``dtype``."""
    ad = burn.Autodiff(backend)
    inputs = [burn.from_numpy(a.astype(dtype), backend=ad).require_grad() for a in arrays]
    out = fn(*inputs)
    assert out.requires_grad, "the result does not depend on the inputs"
    grads = (out * burn.from_numpy(weights.astype(dtype), backend=ad)).sum().backward()
    results = []
    for x in inputs:
        g = x.grad(grads)
        assert g is None or g.backend == backend, "gradients live on the inner backend"
        results.append(None if g is None else g.numpy())
    return results


def check_gradients(fn: Callable[..., burn.Tensor], arrays: Sequence[np.ndarray],
                    backend: burn.Backend, dtype: str, rng: np.random.Generator) -> None:
    """``fn``'s gradients on ``burn.Autodiff(backend)`` in ``dtype`` match the differences."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    shape = fn(*[burn.from_numpy(a, backend=burn.NumPy()) for a in arrays]).shape
    weights = rng.uniform(0.5, 1.5, size=shape)
    expected = numeric_gradients(fn, arrays, weights)
    got = analytic_gradients(fn, arrays, weights, backend, dtype)
    tol = TOLERANCE[dtype]
    for i, (g, e) in enumerate(zip(got, expected)):
        if g is None:
            assert not np.any(e), f"input {i}: no gradient, but the differences say {e}"
            continue
        assert g.shape == e.shape and g.dtype == np.dtype(dtype), (i, g.shape, g.dtype)
        scale = max(1.0, float(np.max(np.abs(e))))
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol * scale,
                                   err_msg=f"gradient of input {i}")
