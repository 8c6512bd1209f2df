"""Optimizer steps as one kernel per parameter: Adam/AdamW and SGD with momentum.

Each reads the parameter, its gradient and its state, and writes the new parameter and the
new state into fresh storage (burn never mutates a tensor). The arithmetic runs in ``CT``
(float32 for 16-bit parameters, which then round once; the state is kept in ``CT``), as
torch's formulas write it:

- Adam: ``g += wd * p`` (L2) or ``p *= 1 - lr * wd`` (``DECOUPLED``, AdamW);
  ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
  ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``.
- SGD: ``g += wd * p``; with momentum ``b = mu b + (1 - dampening) g`` (``b = g`` at the
  first step) and ``g = b`` (``g + mu b`` with Nesterov); ``p -= lr g``.

Example:
    >>> p, m, v = adam(ctx, p, g, m, v, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
    ...                weight_decay=0.0, step=1, decoupled=False)  # doctest: +SKIP
"""

from __future__ import annotations

import math

import cubepy as cube
from cubepy.ir.dtypes import DType

from .layout import Context, View, register, scalar


@cube.kernel
def adam_kernel(p, po, g, go, m, v, p_out, m_out, v_out, n, beta1, rest1, beta2, rest2, eps,
                decay, shrink, step_size, bias2_root, DECOUPLED: cube.Comptime[bool],
                FIRST: cube.Comptime[bool], CT: cube.Comptime[object],
                PT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = idx < n
    w = cube.load(p + po + idx, mask=mask, other=0).to(CT)
    grad = cube.load(g + go + idx, mask=mask, other=0).to(CT)
    # the host passes 1 - beta (rest1, rest2) and 1 - lr * decay (shrink) computed in
    # float64: 1 - beta2 from a float32 beta2 of 0.999 is off by 1e-5, torch's is not
    if DECOUPLED:
        w = w * shrink
    else:
        grad = grad + decay * w
    if FIRST:  # no state yet: both moments start at zero
        m1 = rest1 * grad
        v1 = rest2 * grad * grad
    else:
        m1 = beta1 * cube.load(m + idx, mask=mask, other=0) + rest1 * grad
        v1 = beta2 * cube.load(v + idx, mask=mask, other=0) + rest2 * grad * grad
    w = w - step_size * m1 / (cube.sqrt(v1) / bias2_root + eps)
    cube.store(p_out + idx, w.to(PT), mask=mask)
    cube.store(m_out + idx, m1, mask=mask)
    cube.store(v_out + idx, v1, mask=mask)


@cube.kernel
def sgd_kernel(p, po, g, go, b, p_out, b_out, n, lr, momentum, undamped, decay,
               MOMENTUM: cube.Comptime[bool], FIRST: cube.Comptime[bool],
               NESTEROV: cube.Comptime[bool], CT: cube.Comptime[object],
               PT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = idx < n
    w = cube.load(p + po + idx, mask=mask, other=0).to(CT)
    grad = cube.load(g + go + idx, mask=mask, other=0).to(CT) + decay * w
    if MOMENTUM:
        if FIRST:
            buf = grad
        else:
            buf = momentum * cube.load(b + idx, mask=mask, other=0) + undamped * grad
        cube.store(b_out + idx, buf, mask=mask)
        if NESTEROV:
            grad = grad + momentum * buf
        else:
            grad = buf
    cube.store(p_out + idx, (w - lr * grad).to(PT), mask=mask)


def _dense(ctx: Context, view: View) -> View:
    """``view``, copied if it is not contiguous (the kernels read flat storage)."""
    if view.is_contiguous:
        return view
    from .elementwise import copy

    return copy(ctx, view)


def adam(ctx: Context, p: View, g: View, m: View | None, v: View | None, lr: float,
         betas: tuple[float, float], eps: float, weight_decay: float, step: int,
         decoupled: bool) -> tuple[View, View, View]:
    """One Adam (``decoupled``: AdamW) step at step number ``step`` (1 first, when ``m`` and
    ``v`` are None): the new parameter and moments."""
    compute = register(p.dtype)
    p, g = _dense(ctx, p), _dense(ctx, g)
    n = p.numel
    p_out, m_out, v_out = ctx.new(p.shape, p.dtype), ctx.new(p.shape, compute), \
        ctx.new(p.shape, compute)
    first = m is None
    if n == 0:
        return p_out, m_out, v_out
    b1, b2 = betas
    block = ctx.block(n)
    adam_kernel[(cube.cdiv(n, block),)](
        p.storage, p.offset, g.storage, g.offset, (m_out if first else m).storage,
        (v_out if first else v).storage, p_out.storage, m_out.storage, v_out.storage, n,
        scalar(b1, compute), scalar(1 - b1, compute), scalar(b2, compute), scalar(1 - b2, compute),
        scalar(eps, compute), scalar(weight_decay, compute),
        scalar(1 - lr * weight_decay, compute), scalar(lr / (1 - b1 ** step), compute),
        scalar(math.sqrt(1 - b2 ** step), compute), DECOUPLED=decoupled, FIRST=first,
        CT=compute, PT=p.dtype, BLOCK=block, target=ctx.target)
    return p_out, m_out, v_out


def sgd(ctx: Context, p: View, g: View, buf: View | None, lr: float, momentum: float,
        dampening: float, weight_decay: float, nesterov: bool) -> tuple[View, View | None]:
    """One SGD step: the new parameter and momentum buffer (None without momentum; ``buf``
    None at the first step)."""
    compute: DType = register(p.dtype)
    p, g = _dense(ctx, p), _dense(ctx, g)
    n = p.numel
    p_out = ctx.new(p.shape, p.dtype)
    b_out = ctx.new(p.shape, compute) if momentum else p_out
    first = buf is None
    if n == 0:
        return p_out, (b_out if momentum else None)
    block = ctx.block(n)
    sgd_kernel[(cube.cdiv(n, block),)](
        p.storage, p.offset, g.storage, g.offset, (b_out if first else buf).storage,
        p_out.storage, b_out.storage, n, scalar(lr, compute), scalar(momentum, compute),
        scalar(1 - dampening, compute), scalar(weight_decay, compute), MOMENTUM=bool(momentum),
        FIRST=first, NESTEROV=nesterov, CT=compute, PT=p.dtype, BLOCK=block,
        target=ctx.target)
    return p_out, (b_out if momentum else None)
