"""Helpers of the burn op suite: random tensors, views, dtype support and comparisons.

Example:
    x = random_tensor(rng, (3, 4), "float32")                 # a NumPy array
    check(lambda b: burn.exp(on(b, x)), backend, ref)          # same op on both, compared
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pytest
from util import assert_close, np_dtype, random_array

import burn


def supports(backend: burn.Backend, dtypes: Iterable[str]) -> bool:
    """True when ``backend`` can hold every one of ``dtypes``."""
    return all(np_dtype(d).name in backend.dtypes or d in backend.dtypes for d in dtypes)


def random_tensor(rng: np.random.Generator, shape: Any, dtype: str, low: Any = None,
                  high: Any = None) -> np.ndarray:
    """Fresh random data of ``dtype`` (never all zeros)."""
    return random_array(rng, shape, dtype, low, high)


def on(backend: burn.Backend, array: np.ndarray) -> burn.Tensor:
    return burn.from_numpy(array, backend=backend)


def strided(backend: burn.Backend, array: np.ndarray, kind: str) -> burn.Tensor:
    """``array`` on ``backend`` through a non-contiguous view with the same values:
    ``"transposed"`` (stored transposed), ``"sliced"`` (every other element of a larger
    tensor), ``"flipped"`` (stored reversed) or ``"contiguous"``."""
    if kind == "contiguous" or array.ndim == 0:
        return on(backend, array)
    if kind == "transposed":
        return on(backend, np.ascontiguousarray(array.T)).T
    if kind == "sliced":
        big = np.repeat(array, 2, axis=-1)
        return on(backend, big)[..., ::2]
    if kind == "flipped":
        return on(backend, np.ascontiguousarray(array[..., ::-1])).flip(-1)
    raise ValueError(kind)


VIEW_KINDS = ("contiguous", "transposed", "sliced", "flipped")


def check(op: Callable[[burn.Backend], Any], backend: burn.Backend, ref: burn.Backend,
          rtol: float | None = None, atol: float | None = None) -> None:
    """Run ``op`` on ``backend`` and on the NumPy reference; compare every tensor result
    (shape, dtype and values within the dtype's tolerance)."""
    got, expected = op(backend), op(ref)
    _compare(got, expected, rtol, atol)


def check_fused_gradients(fusion: burn.Fusion, w: np.ndarray,
                          loss: Callable[[burn.Tensor, burn.Backend], burn.Tensor]) -> None:
    """``loss(weight, backend)`` and its gradient in ``weight`` (``w`` on the backend) under
    ``burn.Autodiff`` of ``fusion`` and of the backend it wraps: the same values."""
    grads, losses = [], []
    for b in (fusion.wraps, fusion):
        ad = burn.Autodiff(b)
        weight = burn.from_numpy(w, backend=ad).require_grad()
        value = loss(weight, ad)
        losses.append(value.item())
        grads.append(weight.grad(value.backward()).numpy())
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-6)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-7)


def _compare(got: Any, expected: Any, rtol: float | None, atol: float | None) -> None:
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _compare(g, e, rtol, atol)
        return
    if isinstance(expected, burn.Tensor):
        assert isinstance(got, burn.Tensor), type(got)
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
        assert got.shape == expected.shape, (got.shape, expected.shape)
        assert_close(got.numpy(), expected.numpy(), rtol, atol)
        return
    assert got == expected, (got, expected)


def expect_unsupported(backend: burn.Backend, dtype: str, fn: Callable[[], Any]) -> None:
    """``fn`` must fail with an error naming ``dtype`` (a backend lacking a dtype)."""
    with pytest.raises((burn.BurnError, Exception)) as info:
        fn()
    assert re.search(rf"\b{np_dtype(dtype).name}\b", str(info.value)), str(info.value)
