"""Scaled dot-product attention on views: burn's entry point to the fused kernels of
``kernels.flash``.

``attention`` and ``attention_backward`` take (B, H, S, D) views with any strides (a head dim
with a unit stride is read in place, others are copied first), allocate their results, and
choose the kernels' blocks: by benchmark on a CUDA GPU (``cube.autotune`` over ``FORWARD_CONFIGS``
and ``BACKWARD_CONFIGS``, the example's lists measured on an H200) once an attention is big
enough to be worth it, else from the target (``forward_blocks``, ``backward_blocks``).

Example:
    >>> out, lse = attention(ctx, q, k, v, causal=True, scale=0.125)  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import cubepy as cube
from cubepy import config as cube_config
from cubepy.autotune import pow2_anchor
from cubepy.ir.dtypes import DType

from .creation import full
from .elementwise import copy
from .flash import MAX_HEAD_DIM, Heads, Sizes, launch_backward, launch_forward
from .layout import Context, View, check_int32


def supports(dtype: DType, head_dim: int) -> bool:
    """Whether the fused kernels take ``dtype`` and ``head_dim`` (burn composes other ops
    for the rest).

    Example:
        >>> supports(cube.float16, 64), supports(cube.float64, 64), supports(cube.float32, 256)
        (True, False, False)
    """
    return dtype.name in ("float16", "bfloat16", "float32") and 1 <= head_dim <= MAX_HEAD_DIM


def _heads(ctx: Context, x: View) -> Heads:
    """``x`` (B, H, S, D) as ``Heads``: in place when its head dim has a unit stride."""
    if x.strides[3] != 1 and x.shape[3] != 1:
        x = copy(ctx, x)
    return Heads(x.storage, x.offset, *x.strides[:3])


def _check_span(sizes: Sizes, views: dict[str, View]) -> None:
    # The kernels' offsets are int32: every element addressed must be below 2**31.
    for name, view in views.items():
        last = view.offset + sum((n - 1) * s for n, s in zip(view.shape, view.strides) if s > 0)
        check_int32(last + 1, f"attention's {name} ({sizes.batch}x{sizes.heads} heads)")


def _gpu(ctx: Context) -> bool:
    return ctx.target == "triton" and cube.cuda_available()


def forward_blocks(ctx: Context, sizes: Sizes) -> dict[str, int]:
    """The forward kernel's blocks (and GPU launch options) for ``sizes`` on ``ctx``'s
    target: 128 x 64 with 8 warps for long sequences on a GPU (the H200 sweeps of the
    example), 64 x 64 elsewhere, 32 x 32 on WebGPU (workgroup memory and registers).

    Example:
        >>> forward_blocks(Context("cpu", None), Sizes(1, 8, 512, 512, 64))
        {'block_m': 64, 'block_n': 64}
    """
    if ctx.target == "wgsl":
        return {"block_m": 32, "block_n": 32}
    if not _gpu(ctx):
        return {"block_m": 64, "block_n": 64}
    if sizes.seq_q >= 1024:
        return {"block_m": 128, "block_n": 64, "num_warps": 8, "num_stages": 3}
    return {"block_m": 64, "block_n": 64, "num_warps": 4, "num_stages": 3}


def backward_blocks(ctx: Context, sizes: Sizes) -> dict[str, int]:
    """The backward kernels' kept and step blocks (and GPU launch options): 64/32 with 4
    warps on a GPU (the H200's choice at most shapes, run 89), 64/64 on the CPU, 32/32 on
    WebGPU.

    Example:
        >>> backward_blocks(Context("cpu", None), Sizes(1, 8, 512, 512, 64))
        {'block_kept': 64, 'block_step': 64}
    """
    if ctx.target == "wgsl":
        return {"block_kept": 32, "block_step": 32}
    if not _gpu(ctx):
        return {"block_kept": 64, "block_step": 64}
    if sizes.dim > 64 and sizes.seq_q >= 1024:
        return {"block_kept": 128, "block_step": 64, "num_warps": 8, "num_stages": 3}
    return {"block_kept": 64, "block_step": 32, "num_warps": 4, "num_stages": 3}


def _sizes(q: View, k: View) -> Sizes:
    batch, heads, seq_q, dim = q.shape
    return Sizes(batch, heads, seq_q, k.shape[2], dim)


def attention(ctx: Context, q: View, k: View, v: View, causal: bool, scale: float
              ) -> tuple[View, View]:
    """``softmax(q @ k^T * scale) @ v`` for ``q`` (B, H, Sq, D) and ``k``, ``v`` (B, H, Sk,
    D) of one dtype (``supports``), and each query row's log-sum-exp (float32 (B, H, Sq)).
    The result's memory is (B, Sq, H, D) row-major, so merging its heads back,
    ``transpose(1, 2).reshape(B, Sq, H * D)``, is a view. Sk must be at least 1.

    Example:
        >>> out, lse = attention(ctx, q, k, v, False, 0.125)  # doctest: +SKIP
    """
    sizes = _sizes(q, k)
    b, h, s, d = q.shape
    out = ctx.new((b, s, h, d), q.dtype)
    out = out.with_layout(0, (b, h, s, d), (s * h * d, d, h * d, 1))
    lse = ctx.new((b, h, s), cube.float32)
    if sizes.rows * sizes.seq_q == 0:
        return out, lse
    _check_span(sizes, {"q": q, "k": k, "v": v})
    heads = [_heads(ctx, x) for x in (q, k, v)]
    out_heads = Heads(out.storage, 0, *out.strides[:3])
    call = _Call(ctx.target, q.dtype, sizes, causal, float(scale), (*heads, out_heads),
                 (lse.storage,))
    if _tunable(call):
        _tuned(call, tuned_forward, "forward")
    else:
        _run_forward(call, **forward_blocks(ctx, sizes))
    return out, lse


def attention_backward(ctx: Context, q: View, k: View, v: View, out: View, lse: View,
                       d_out: View, causal: bool, scale: float) -> tuple[View, View, View]:
    """The gradients of ``attention`` with respect to ``q``, ``k`` and ``v`` (fresh
    contiguous views of their shapes and dtype), given its ``out`` and ``lse`` and the
    gradient ``d_out`` of ``out``.

    Example:
        >>> dq, dk, dv = attention_backward(ctx, q, k, v, out, lse, d_out, False,
        ...                                 0.125)  # doctest: +SKIP
    """
    sizes = _sizes(q, k)
    if sizes.seq_q == 0:  # no query sees a key: dK = dV = 0
        return (ctx.new(q.shape, q.dtype), full(ctx, k.shape, 0, k.dtype),
                full(ctx, v.shape, 0, v.dtype))
    grads = ctx.new(q.shape, q.dtype), ctx.new(k.shape, k.dtype), ctx.new(v.shape, v.dtype)
    if sizes.rows == 0 or sizes.seq_k == 0:
        return grads
    _check_span(sizes, {"q": q, "k": k, "v": v, "out": out, "d_out": d_out})
    heads = [_heads(ctx, x) for x in (q, k, v, out, d_out)]
    delta = ctx.new((sizes.rows, sizes.seq_q), cube.float32)
    call = _Call(ctx.target, q.dtype, sizes, causal, float(scale), tuple(heads),
                 (_contiguous_storage(ctx, lse), delta.storage, *(g.storage for g in grads)))
    if _tunable(call):
        # scratch for the candidates that sum dQ by atomics (dQ itself when float32)
        sums = grads[0].storage if q.dtype == cube.float32 else \
            ctx.new(q.shape, cube.float32).storage
        call = replace(call, arrays=(*call.arrays, sums))
        _tuned(call, tuned_backward, "backward")
    else:
        _run_backward(call, **backward_blocks(ctx, sizes))
    return grads


def _contiguous_storage(ctx: Context, x: View) -> Any:
    if x.offset == 0 and x.is_contiguous:
        return x.storage
    return copy(ctx, x).storage


# ---- tuning on CUDA GPUs ----

@dataclass(frozen=True, slots=True)
class _Call:
    """One attention as the launchers run it: its (B, H, S, D) operands and the flat arrays
    (forward: lse; backward: lse, delta scratch, dq, dk, dv, and dQ's float32 sums when
    tuning)."""

    target: str
    dtype: DType
    sizes: Sizes
    causal: bool
    scale: float
    heads: tuple[Heads, ...]
    arrays: tuple[Any, ...]


def _run_forward(call: _Call, block_m: int, block_n: int, **options: Any) -> None:
    launch_forward(*call.heads, call.arrays[0], call.sizes, call.causal, call.scale, block_m,
                   block_n, target=call.target, **options)


def _run_backward(call: _Call, block_kept: int, block_step: int, atomic_dq: bool = False,
                  **options: Any) -> None:
    lse, delta, dq, dk, dv = call.arrays[:5]
    sums = call.arrays[5] if atomic_dq else None
    launch_backward(*call.heads, lse, delta, dq, dk, dv, sums, call.sizes, call.causal,
                    call.scale, block_kept, block_step, atomic_dq, target=call.target,
                    **options)


def _configs(names: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[cube.Config]:
    return [cube.Config(**dict(zip(names, row))) for row in rows]


# The examples' candidates (examples/flash_attention*.py; H200 sweeps, runs 57-60 and 89-92),
# without TMA descriptors, which need contiguous K and V.
FORWARD_CONFIGS = _configs(("block_m", "block_n", "num_warps", "num_stages"), [
    (128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3), (64, 128, 4, 3),
    (128, 32, 4, 4), (64, 32, 4, 4)])
BACKWARD_CONFIGS = _configs(
    ("block_kept", "block_step", "num_warps", "num_stages", "atomic_dq"), [
        (128, 32, 4, 3, False), (128, 32, 8, 3, False), (128, 64, 8, 3, False),
        (64, 32, 4, 3, False), (64, 64, 4, 3, False), (64, 64, 8, 2, False),
        (128, 16, 4, 4, False), (64, 16, 4, 4, False),
        (128, 64, 8, 3, True), (64, 64, 4, 3, True), (128, 32, 4, 3, True)])
# Below this many multiply-adds (B * H * Sq * Sk * D) an attention takes microseconds: the
# target's blocks, not worth compiling and timing every candidate.
TUNE_FROM = 2**26
_KEY = {"rows": pow2_anchor, "seq_q": pow2_anchor, "seq_k": pow2_anchor, "dim": None,
        "causal": None}


def _tunable(call: _Call) -> bool:
    s = call.sizes
    return (call.target == "triton" and cube.cuda_available()
            and s.rows * s.seq_q * s.seq_k * s.dim >= TUNE_FROM)


@cube.autotune(configs=FORWARD_CONFIGS, key=_KEY)
def tuned_forward(call: _Call, q: Any, k: Any, v: Any, out: Any, rows: int, seq_q: int,
                  seq_k: int, dim: int, causal: bool, target: str, **blocks: Any) -> None:
    """The forward pass with its blocks tuned per bucket of sizes, dtype and device. The
    storages are arguments so that the tuner keys on their dtypes and checks every
    candidate's output; ``call`` carries the rest.

    Example:
        >>> tuned_forward(call, *storages, 32, 1024, 1024, 64, True, "triton")  # doctest: +SKIP
    """
    _run_forward(call, **blocks)


@cube.autotune(configs=BACKWARD_CONFIGS, key=_KEY)
def tuned_backward(call: _Call, dq: Any, dk: Any, dv: Any, rows: int, seq_q: int, seq_k: int,
                   dim: int, causal: bool, target: str, **blocks: Any) -> None:
    """The backward pass with its blocks, and whether dQ is summed by atomics, tuned per
    bucket of sizes, dtype and device (``tuned_forward``'s way).

    Example:
        >>> tuned_backward(call, dq, dk, dv, 32, 1024, 1024, 64, True,  # doctest: +SKIP
        ...                "triton")
    """
    _run_backward(call, **blocks)


# (pass, dtype, size buckets, dim, causal, generation of the settings) -> the chosen blocks
_CHOSEN: dict[tuple, dict[str, Any]] = {}


def _tuned(call: _Call, tuner: Any, which: str) -> None:
    s = call.sizes
    key = (which, call.dtype, pow2_anchor(s.rows), pow2_anchor(s.seq_q), pow2_anchor(s.seq_k),
           s.dim, call.causal, cube_config.generation())
    chosen = _CHOSEN.get(key)
    run = _run_forward if which == "forward" else _run_backward
    if chosen is not None:
        run(call, **chosen)
        return
    if which == "forward":
        storages = tuple(h.storage for h in call.heads)
    else:
        storages = call.arrays[2:5]
    tuner(call, *storages, s.rows, s.seq_q, s.seq_k, s.dim, call.causal, call.target)
    _CHOSEN[key] = tuner.last_config.launch_kwargs()
