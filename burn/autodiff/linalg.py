"""Backward rules of matmul, convolution and pooling.

- ``matmul``: ``ga = g @ b^T``, ``gb = a^T @ g`` per batch (broadcast batches are summed by
  the views that broadcast them).
- ``conv2d``: the input's gradient is a convolution of the output gradient, dilated by the
  stride, with the weight flipped and its channel axes swapped per group (a transposed
  convolution), on the backend's own convolution kernel. The weight's is one matrix product
  of the output gradient with the unfolded input (every window as a row: a strided view of
  the padded input per kernel tap), batched over groups.
- ``avg`` pooling is a convolution with a constant weight per channel; ``max`` pooling sends
  each window's gradient to the first element equal to its maximum (torch's choice), one
  kernel tap at a time; adaptive average pooling is two matrix products with the windows'
  weights.

Example:
    >>> ad = burn.Autodiff(burn.Cpu())
    >>> w = burn.ones((2, 2), backend=ad).require_grad()
    >>> (burn.ones((3, 2), backend=ad) @ w).sum().backward()[w].tolist()
    [[3.0, 3.0], [3.0, 3.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backend.base import Backend
from ..tensor import Tensor
from ..tensor.conv_transpose import spread_by_stride, transposed_convolution
from .functions import bt
from .graph import Rule, Saved


def _mT(t: Tensor) -> Tensor:  # noqa: N802 - torch's name for the matrix transpose
    return t.transpose(-1, -2)


def matmul_rule(a: Tensor, b: Tensor) -> Rule:
    """The rule of ``a @ b`` (one batch shape)."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, Any]:
        return (grad @ _mT(b) if needs[0] else None), (_mT(a) @ grad if needs[1] else None)

    return rule


def conv2d_rule(x: Tensor, weight: Tensor, stride: Sequence[int], padding: Sequence[int],
                dilation: Sequence[int], groups: int) -> Rule:
    """The rule of ``conv2d(x, weight, bias)`` (inputs ``x``, weight, bias)."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Any, Any, Any]:
        gx = transposed_convolution(grad, weight, None, stride, padding, dilation, groups,
                                    x.shape[2:]) if needs[0] else None
        gw = _weight_grad(grad, x, weight.shape, stride, padding, dilation, groups) \
            if needs[1] else None
        gb = grad.sum(axis=(0, 2, 3)) if needs[2] else None
        return gx, gw, gb

    return rule


#: elements of the unfolded input (``_unfolded``) one product of the weight gradient reads;
#: larger batches are cut into parts
UNFOLD_LIMIT = 1 << 26


def _unfolded(x: Tensor, kernel: Sequence[int], stride: Sequence[int],
              padding: Sequence[int], dilation: Sequence[int], out: Sequence[int]) -> Tensor:
    """(N, OH, OW, C, KH * KW): every input element each output pixel's window reads, one
    strided view of the padded input per kernel tap, joined in one copy."""
    (ph, pw), (sh, sw), (dh, dw) = padding, stride, dilation
    padded = bt.pad(x, (pw, pw, ph, ph), 0.0) if ph or pw else x
    view = padded.prim
    n, c = x.shape[:2]
    taps = []
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            offset = view.offset + a * dh * view.strides[2] + b * dw * view.strides[3]
            tap = view.with_layout(offset, (n, out[0], out[1], c, 1),
                                   (view.strides[0], sh * view.strides[2],
                                    sw * view.strides[3], view.strides[1], 1))
            taps.append(Tensor(tap, padded.backend))
    return bt.cat(taps, axis=4)


def _weight_grad(grad: Tensor, x: Tensor, shape: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], groups: int) -> Tensor:
    """``grad_w[o, c, a, b] = sum over n, oh, ow of grad[n, o, oh, ow] * window[...]``: one
    (batched over groups) matrix product of the output gradient and the unfolded input."""
    n = x.shape[0]
    out_ch, per_group, kh, kw = shape
    oh, ow = grad.shape[2:]
    rows = max(1, UNFOLD_LIMIT // max(1, oh * ow * x.shape[1] * kh * kw))
    total = None
    for start in range(0, n, rows):
        count = min(rows, n - start)
        cols = _unfolded(x.narrow(0, start, count), (kh, kw), stride, padding, dilation,
                         (oh, ow)).reshape((count * oh * ow, groups, per_group * kh * kw))
        taps = grad.narrow(0, start, count).reshape(
            (count, groups, out_ch // groups, oh * ow)).permute(1, 2, 0, 3).reshape(
            (groups, out_ch // groups, count * oh * ow))
        part = taps @ cols.permute(1, 0, 2)
        total = part if total is None else total + part
    return total.reshape((out_ch, per_group, kh, kw))


def pool2d_rule(op: str, x: Tensor, out: Tensor | None, kernel: Sequence[int],
                stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int]) -> Rule:
    """The rule of ``max`` or ``avg`` pooling of ``x`` (N, C, H, W); ``out`` is the max
    pooling's result (None for ``avg``)."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        if op == "avg":
            c = x.shape[1]
            weight = bt.full((c, 1, *kernel), 1.0 / (kernel[0] * kernel[1]), dtype=grad.dtype,
                             backend=grad.backend)
            return (transposed_convolution(grad, weight, None, stride, padding, dilation, c,
                                           x.shape[2:]),)
        return (_max_pool_grad(grad, x, out, kernel, stride, padding, dilation),)

    return rule


def _max_pool_grad(grad: Tensor, x: Tensor, out: Tensor, kernel: Sequence[int],
                   stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
                   ) -> Tensor:
    (ph, pw), (sh, sw), (dh, dw) = padding, stride, dilation
    n, c, h, w = x.shape
    oh, ow = out.shape[2:]
    padded = bt.pad(x, (pw, pw, ph, ph), -float("inf"))
    view = padded.prim
    spread = spread_by_stride(grad, stride)
    total = bt.zeros(padded.shape, dtype=grad.dtype, backend=grad.backend)
    taken = None
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            # the element each window reads at tap (a, b): a strided view of the padding
            tap = Tensor(view.with_layout(
                view.offset + a * dh * view.strides[2] + b * dw * view.strides[3],
                (n, c, oh, ow),
                (view.strides[0], view.strides[1], sh * view.strides[2], sw * view.strides[3])),
                padded.backend)
            first = tap == out if taken is None else (tap == out) & ~taken
            taken = first if taken is None else taken | first
            share = spread_by_stride(bt.where(first, grad, 0.0), stride)
            rows = min(spread.shape[2], padded.shape[2] - a * dh)
            cols = min(spread.shape[3], padded.shape[3] - b * dw)
            placed = bt.pad(share.narrow(2, 0, rows).narrow(3, 0, cols),
                            (b * dw, padded.shape[3] - b * dw - cols,
                             a * dh, padded.shape[2] - a * dh - rows), 0.0)
            total = total + placed
    return total.narrow(2, ph, h).narrow(3, pw, w)


def _window_matrix(size: int, out: int) -> np.ndarray:
    """(out, size): row ``i`` averages the window ``[floor(i*size/out), ceil((i+1)*size/out))``."""
    matrix = np.zeros((out, size))
    for i in range(out):
        lo, hi = (i * size) // out, -((-(i + 1) * size) // out)
        matrix[i, lo:hi] = 1.0 / (hi - lo)
    return matrix


#: window matrices by (backend, size, out, dtype): a training step pools the same sizes at
#: every step, and an upload each time would wait for the GPU (and cannot be captured)
_WINDOWS: dict[tuple, Tensor] = {}


def _window_tensor(inner: Backend, size: int, out: int, like: Tensor) -> Tensor:
    key = (id(inner), size, out, like.dtype.name)
    matrix = _WINDOWS.get(key)
    if matrix is None or matrix.backend is not inner:
        if len(_WINDOWS) >= 64:
            _WINDOWS.clear()
        matrix = _WINDOWS[key] = bt.from_numpy(
            _window_matrix(size, out).astype(like.dtype.numpy), backend=inner)
    return matrix


def adaptive_avg_pool2d_rule(saved: Saved, shape: Sequence[int]) -> Rule:
    """The rule of adaptive average pooling of an input of ``shape``: ``out = A_h @ x @
    A_w^T`` per image."""
    def rule(grad: Tensor, needs: tuple[bool, ...]) -> tuple[Tensor]:
        h, w = shape[2:]
        oh, ow = grad.shape[2:]
        rows, cols = (Tensor(_window_tensor(saved.inner, size, out, grad).prim, saved.backend)
                      for size, out in ((h, oh), (w, ow)))
        return (_mT(rows) @ grad @ cols,)

    return rule
