"""Scaled dot-product attention: ``scaled_dot_product_attention``, as torch's.

``softmax(q @ k^T * scale + mask) @ v`` over the last two axes of ``q`` (..., Sq, D), ``k``
(..., Sk, D) and ``v`` (..., Sk, Dv), whose leading (batch and head) axes are equal.

- Without a mask, in float16, bfloat16 or float32, with ``Dv == D``, a head dimension the
  kernels take (``kernels.attention.supports``: 1 to 128) and a positive scale, it is one
  fused op (``Backend.attention``): on the cubepy backends a flash-attention kernel that never
  writes the (Sq, Sk) weights to memory and rounds them to the input's dtype before the
  product with ``v``, as tensor cores do. Its gradient is one fused backward kernel that
  recomputes the weights from the saved log-sum-exp of each row (``burn.autodiff.attention``).
- Otherwise (a mask, float64, ``Dv != D``, a larger head dimension, a scale <= 0) it is
  composed of ``matmul``, ``softmax`` and ``where``, and the gradients are theirs. That path
  stores the (..., Sq, Sk) weights.

``causal=True`` lets query ``i`` see keys ``0..i`` only (top-left aligned, torch's
``is_causal``; with ``Sq > Sk`` the last rows see every key). A bool mask says which keys
each query may attend to (True: attend, as torch); a float mask is added to the scores
(``-inf`` masks). A row whose every key is masked gives NaN, as ``softmax`` of ``-inf`` does.

Example:
    >>> q = burn.randn(2, 4, 8, 16)                   # (batch, heads, queries, head dim)
    >>> kv = burn.randn(2, 4, 10, 16)                 # (batch, heads, keys, head dim)
    >>> burn.scaled_dot_product_attention(q, kv, kv, causal=True).shape
    (2, 4, 8, 16)
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from kernels import attention as attention_kernels

from ..backend.base import BurnError
from .creation import full, zeros
from .elementwise import where
from .index import tril
from .linalg import _as_dtype, _floating, matmul
from .reduce import softmax
from .tensor import Tensor, same_backend
from .views import broadcast_shapes, reshape, transpose

__all__ = ["scaled_dot_product_attention"]

_OP = "scaled_dot_product_attention"
#: the dtypes of the fused op (float64 runs composed)
FUSED_DTYPES = frozenset({"float16", "bfloat16", "float32"})


def _check_operands(q: Any, k: Any, v: Any) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise BurnError(f"{_OP}: {name} must be a tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise BurnError(f"{_OP}: {name} must have at least 2 dimensions (..., sequence, "
                            f"features), got shape {t.shape}")
    shapes = f"q {q.shape}, k {k.shape}, v {v.shape}"
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise BurnError(f"{_OP}: q, k and v need equal leading (batch, head) axes, got {shapes}")
    if k.shape[-1] != q.shape[-1]:
        raise BurnError(f"{_OP}: q and k need one head dimension (last axis), got {shapes}")
    if q.shape[-1] == 0:
        raise BurnError(f"{_OP}: the head dimension is 0 ({shapes}); q and k need features")
    if k.shape[-2] != v.shape[-2]:
        raise BurnError(f"{_OP}: k and v need one number of keys (axis -2), got {shapes}")
    if k.shape[-2] == 0:
        raise BurnError(f"{_OP}: there are no keys (Sk == 0: {shapes}); each query needs at "
                        "least one key to attend to")


def _scale(scale: Any, head_dim: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, Real):
        raise BurnError(f"{_OP}: scale must be a number, got {type(scale).__name__}; leave it "
                        f"None for 1 / sqrt(head dim) = {1.0 / math.sqrt(head_dim):.6g}")
    if not math.isfinite(scale):
        raise BurnError(f"{_OP}: scale must be finite, got {scale}; leave it None for "
                        f"1 / sqrt(head dim) = {1.0 / math.sqrt(head_dim):.6g}")
    return float(scale)


def _check_mask(mask: Any, scores: tuple[int, ...]) -> None:
    if not isinstance(mask, Tensor):
        raise BurnError(f"{_OP}: mask must be a bool or float tensor, got {type(mask).__name__}")
    if not (mask.dtype.is_bool or mask.dtype.is_float):
        raise BurnError(f"{_OP}: mask must be bool (True: may attend) or float (added to the "
                        f"scores), got {mask.dtype.name}; write mask.to(burn.bool)")
    try:
        fits = broadcast_shapes(_OP, mask.shape, scores) == scores
    except BurnError:
        fits = False
    if not fits:
        raise BurnError(f"{_OP}: mask of shape {mask.shape} does not broadcast to the scores' "
                        f"shape (..., Sq, Sk) = {scores}")


def _fused(dtype_name: str, q: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> bool:
    return (mask is None and dtype_name in FUSED_DTYPES and v.shape[-1] == q.shape[-1]
            and scale > 0 and attention_kernels.supports(q.dtype, q.shape[-1]))


def _fused_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float) -> Tensor:
    """The fused op on (B, H, S, D) views: the leading axes folded into (B, H)."""
    backend = q.backend
    if q.ndim == 4:  # (B, H, S, D) already: no reshapes on the common path
        return Tensor(backend.attention(q.prim, k.prim, v.prim, causal, scale)[0], backend)
    lead, (sq, d), sk = q.shape[:-2], q.shape[-2:], k.shape[-2]
    b, h = (math.prod(lead[:-1]), lead[-1]) if lead else (1, 1)
    q4, k4, v4 = reshape(q, b, h, sq, d), reshape(k, b, h, sk, d), reshape(v, b, h, sk, d)
    out, _ = backend.attention(q4.prim, k4.prim, v4.prim, causal, scale)
    return reshape(Tensor(out, backend), *lead, sq, d)


def _composed_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool,
                        scale: float) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v`` in burn's own ops."""
    scores = matmul(q, transpose(k, -1, -2)) * scale
    if mask is not None:
        scores = where(mask, scores, -math.inf) if mask.dtype.is_bool \
            else scores + _as_dtype(mask, scores.dtype)
    if causal:
        sq, sk = scores.shape[-2:]
        seen = tril(full((sq, sk), True, dtype="bool", backend=q.backend))
        scores = where(seen, scores, -math.inf)
    return matmul(softmax(scores, -1), v)


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None = None,
                                 causal: bool = False, scale: float | None = None) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v`` (see the module docstring): ``q`` (..., Sq, D),
    ``k`` (..., Sk, D), ``v`` (..., Sk, Dv) into (..., Sq, Dv). ``scale`` defaults to
    ``1 / sqrt(D)``; ``mask`` (bool: True may attend; or float: added) broadcasts to
    (..., Sq, Sk); ``causal`` masks keys after each query. Floating tensors (promoted to one
    dtype); fused into one kernel without a mask (float16, bfloat16, float32).

    Example:
        >>> q = burn.ones((1, 1, 2, 4))                  # (batch, heads, queries, head dim)
        >>> k, v = burn.ones((1, 1, 2, 4)), burn.arange(8.0).reshape(1, 1, 2, 4)
        >>> burn.scaled_dot_product_attention(q, k, v).tolist()  # equal scores: the mean of v
        [[[[2.0, 3.0, 4.0, 5.0], [2.0, 3.0, 4.0, 5.0]]]]
        >>> burn.scaled_dot_product_attention(q, k, v, causal=True)[0, 0, 0].tolist()
        [0.0, 1.0, 2.0, 3.0]
        >>> only_last = burn.tensor([False, True])      # every query sees key 1 only
        >>> burn.scaled_dot_product_attention(q, k, v, mask=only_last)[0, 0, 0].tolist()
        [4.0, 5.0, 6.0, 7.0]
    """
    _check_operands(q, k, v)
    if mask is not None:
        _check_mask(mask, (*q.shape[:-1], k.shape[-2]))
    backend = same_backend(_OP, q, k, v, *(() if mask is None else (mask,)))
    dtype = _floating(_OP, (q, k, v))
    scale = _scale(scale, q.shape[-1])
    if not isinstance(causal, (bool, np.bool_)):
        raise BurnError(f"{_OP}: causal must be True or False, got {causal!r}; pass a mask "
                        "tensor as mask=")
    q, k, v = (_as_dtype(t, dtype) for t in (q, k, v))
    out_shape = (*q.shape[:-1], v.shape[-1])
    if math.prod(out_shape) == 0:  # no batch, no queries or no value features
        return zeros(out_shape, dtype=dtype, backend=backend)
    if _fused(dtype.name, q, v, mask, scale):
        return _fused_attention(q, k, v, bool(causal), scale)
    return _composed_attention(q, k, v, mask, bool(causal), scale)
