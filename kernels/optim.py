"""Optimizer steps as one kernel per parameter: Adam/AdamW and SGD with momentum.

Each reads the parameter, its gradient and its state, and writes the new parameter and the
new state into fresh storage (burn never mutates a tensor), or, for a step captured as a CUDA
graph, in place, reading the numbers that change from step to step (the learning rate, the
bias corrections) from a device buffer the host rewrites before each replay. The arithmetic
runs in ``CT`` (float32 for 16-bit parameters, which then round once; the state is kept in
``CT``), as torch's formulas write it:

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

from .elementwise import contiguous
from .layout import Context, View, register, scalar


@cube.kernel
def adam_kernel(p, po, g, go, m, v, p_out, qo, m_out, v_out, n, beta1, rest1, beta2, rest2,
                eps, decay, shrink, step_size, bias2_root, numbers,
                DECOUPLED: cube.Comptime[bool], FIRST: cube.Comptime[bool],
                STORED: cube.Comptime[bool], CT: cube.Comptime[object],
                PT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = idx < n
    w = cube.load(p + po + idx, mask=mask, other=0).to(CT)
    grad = cube.load(g + go + idx, mask=mask, other=0).to(CT)
    if STORED:  # the step's numbers are read from device memory (see ``step_numbers``)
        step_size = cube.load(numbers)
        bias2_root = cube.load(numbers + 1)
        shrink = cube.load(numbers + 2)
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
    cube.store(p_out + qo + idx, w.to(PT), mask=mask)
    cube.store(m_out + idx, m1, mask=mask)
    cube.store(v_out + idx, v1, mask=mask)


@cube.kernel
def sgd_kernel(p, po, g, go, b, p_out, qo, b_out, n, lr, momentum, undamped, decay, numbers,
               MOMENTUM: cube.Comptime[bool], FIRST: cube.Comptime[bool],
               NESTEROV: cube.Comptime[bool], STORED: cube.Comptime[bool],
               CT: cube.Comptime[object], PT: cube.Comptime[object],
               BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = idx < n
    if STORED:  # the learning rate is read from device memory (see ``step_numbers``)
        lr = cube.load(numbers)
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
    cube.store(p_out + qo + idx, (w - lr * grad).to(PT), mask=mask)


def adam_numbers(lr: float, betas: tuple[float, float], weight_decay: float, step: int
                 ) -> list[float]:
    """The numbers an Adam step takes that change from step to step, computed in float64:
    ``lr / (1 - b1^t)``, ``sqrt(1 - b2^t)`` and ``1 - lr * weight_decay``: what ``adam`` reads
    from its ``numbers`` view when given one (a buffer the host rewrites before each step)."""
    return [lr / (1 - betas[0] ** step), math.sqrt(1 - betas[1] ** step),
            1 - lr * weight_decay]


def _outputs(ctx: Context, p: View, in_place: bool, *state: View | None
             ) -> tuple[View, ...]:
    """Where a step writes: ``p`` and the state views themselves (``in_place``; a state
    view of None, the first step's, is allocated) or fresh views."""
    if in_place and not p.is_contiguous:
        raise ValueError("an optimizer step in place needs a contiguous parameter")
    compute = register(p.dtype)
    fresh = [ctx.new(p.shape, compute) if s is None or not in_place else s for s in state]
    return (p if in_place else ctx.new(p.shape, p.dtype), *fresh)


def adam(ctx: Context, p: View, g: View, m: View | None, v: View | None, lr: float,
         betas: tuple[float, float], eps: float, weight_decay: float, step: int,
         decoupled: bool, numbers: View | None = None, in_place: bool = False
         ) -> tuple[View, View, View]:
    """One Adam (``decoupled``: AdamW) step at step number ``step`` (1 first, when ``m`` and
    ``v`` are None): the new parameter and moments. With ``numbers`` (a view of
    ``adam_numbers``, in the compute dtype) the kernel reads the step's numbers from it and
    ``lr``/``step`` are not passed to it; ``in_place`` writes into ``p``, ``m`` and ``v``
    (what a captured step replays)."""
    compute = register(p.dtype)
    g = contiguous(ctx, g)
    p = p if in_place else contiguous(ctx, p)
    p_out, m_out, v_out = _outputs(ctx, p, in_place, m, v)
    first = m is None
    n = p.numel
    if n == 0:
        return p_out, m_out, v_out
    b1, b2 = betas
    step_size, bias2_root, shrink = adam_numbers(lr, betas, weight_decay, step) \
        if numbers is None else (0.0, 1.0, 1.0)
    block = ctx.block(n)
    adam_kernel[(cube.cdiv(n, block),)](
        p.storage, p.offset, g.storage, g.offset, (m_out if first else m).storage,
        (v_out if first else v).storage, p_out.storage, p_out.offset, m_out.storage,
        v_out.storage, n, scalar(b1, compute), scalar(1 - b1, compute), scalar(b2, compute),
        scalar(1 - b2, compute), scalar(eps, compute), scalar(weight_decay, compute),
        scalar(shrink, compute), scalar(step_size, compute), scalar(bias2_root, compute),
        (p if numbers is None else numbers).storage, DECOUPLED=decoupled, FIRST=first,
        STORED=numbers is not None, CT=compute, PT=p.dtype, BLOCK=block, target=ctx.target)
    return p_out, m_out, v_out


def sgd(ctx: Context, p: View, g: View, buf: View | None, lr: float, momentum: float,
        dampening: float, weight_decay: float, nesterov: bool, numbers: View | None = None,
        in_place: bool = False) -> tuple[View, View | None]:
    """One SGD step: the new parameter and momentum buffer (None without momentum; ``buf``
    None at the first step). ``numbers`` (a one-element view holding ``lr``, in the compute
    dtype) and ``in_place`` as in ``adam``."""
    compute: DType = register(p.dtype)
    g = contiguous(ctx, g)
    p = p if in_place else contiguous(ctx, p)
    p_out, *state = _outputs(ctx, p, in_place, *((buf,) if momentum else ()))
    b_out = state[0] if momentum else p_out
    first = buf is None
    n = p.numel
    if n == 0:
        return p_out, (b_out if momentum else None)
    block = ctx.block(n)
    sgd_kernel[(cube.cdiv(n, block),)](
        p.storage, p.offset, g.storage, g.offset, (b_out if first else buf).storage,
        p_out.storage, p_out.offset, b_out.storage, n,
        scalar(lr if numbers is None else 0.0, compute), scalar(momentum, compute),
        scalar(1 - dampening, compute), scalar(weight_decay, compute),
        (p if numbers is None else numbers).storage, MOMENTUM=bool(momentum), FIRST=first,
        NESTEROV=nesterov, STORED=numbers is not None, CT=compute, PT=p.dtype, BLOCK=block,
        target=ctx.target)
    return p_out, (b_out if momentum else None)
