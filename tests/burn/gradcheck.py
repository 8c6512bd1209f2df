"""Gradient checks for the Autodiff backend: analytic gradients against central differences.

``check_gradients(fn, arrays, backend, dtype)`` computes the gradients of
``sum(fn(*inputs) * weights)`` (random weights, so every output element counts with its own
factor) on ``burn.Autodiff(backend)`` in ``dtype``, and compares them with central
differences of the same function computed in float64 on the NumPy backend.

``check_second_order(fn, arrays, backend, dtype, rng)`` checks gradients of gradients: with
``backward(create_graph=True)`` the first gradients are tracked, and the gradient of
``sum_i <grad_i, u_i>`` (random directions ``u``) is the Hessian times ``u``. It is compared
with a central difference of the float64 first gradients along ``u``.

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


#: the step of the directional difference of the gradients (its error is ~STEP**2 times the
#: third derivative, plus ~1e-16 / STEP of rounding)
SECOND_ORDER_STEP = 1e-5


def hessian_products(fn: Callable[..., burn.Tensor], arrays: Sequence[np.ndarray],
                     weights: np.ndarray, directions: Sequence[np.ndarray], backend: burn.Backend,
                     dtype: str) -> list[np.ndarray | None]:
    """The Hessian of the weighted sum times ``directions``, by differentiating its tracked
    first gradients (``backward(create_graph=True)``) on ``burn.Autodiff(backend)``."""
    ad = burn.Autodiff(backend)
    inputs = [burn.from_numpy(a.astype(dtype), backend=ad).require_grad() for a in arrays]
    loss = (fn(*inputs) * burn.from_numpy(weights.astype(dtype), backend=ad)).sum()
    first = loss.backward(create_graph=True)
    total = None
    for x, u in zip(inputs, directions):
        g = x.grad(first)
        if g is None:
            continue
        assert g.backend == ad, "create_graph gives gradients of the Autodiff backend"
        term = (g * burn.from_numpy(u.astype(dtype), backend=ad)).sum()
        total = term if total is None else total + term
    assert total is not None and total.requires_grad, "the first gradients are constant"
    second = total.backward()
    return [None if x.grad(second) is None else x.grad(second).numpy() for x in inputs]


def numeric_hessian_products(fn: Callable[..., burn.Tensor], arrays: Sequence[np.ndarray],
                             weights: np.ndarray, directions: Sequence[np.ndarray]
                             ) -> list[np.ndarray]:
    """``(grad(x + h u) - grad(x - h u)) / 2h``: the float64 first gradients on the NumPy
    backend, differenced along the directions."""
    def gradients(sign: float) -> list[np.ndarray]:
        moved = [a + sign * SECOND_ORDER_STEP * u for a, u in zip(arrays, directions)]
        grads = analytic_gradients(fn, moved, weights, burn.NumPy(), "float64")
        return [np.zeros_like(a) if g is None else g for a, g in zip(arrays, grads)]

    return [(up - down) / (2 * SECOND_ORDER_STEP)
            for up, down in zip(gradients(1.0), gradients(-1.0))]


def check_second_order(fn: Callable[..., burn.Tensor], arrays: Sequence[np.ndarray],
                       backend: burn.Backend, dtype: str, rng: np.random.Generator) -> None:
    """``fn``'s Hessian-vector products on ``burn.Autodiff(backend)`` in ``dtype`` match the
    directional differences of its float64 gradients."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    shape = fn(*[burn.from_numpy(a, backend=burn.NumPy()) for a in arrays]).shape
    weights = rng.uniform(0.5, 1.5, size=shape)
    directions = [rng.uniform(-1.0, 1.0, size=a.shape) for a in arrays]
    expected = numeric_hessian_products(fn, arrays, weights, directions)
    got = hessian_products(fn, arrays, weights, directions, backend, dtype)
    tol = TOLERANCE[dtype]
    for i, (g, e) in enumerate(zip(got, expected)):
        if g is None:
            np.testing.assert_allclose(e, 0.0, atol=1e-6,
                                       err_msg=f"input {i}: no second gradient")
            continue
        assert g.shape == e.shape and g.dtype == np.dtype(dtype), (i, g.shape, g.dtype)
        scale = max(1.0, float(np.max(np.abs(e))))
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol * scale,
                                   err_msg=f"Hessian-vector product of input {i}")
