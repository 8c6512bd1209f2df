"""Fused attention's backward pass: the gradients of Q, K and V, in cubepy.

    python examples/flash_attention_backward.py [--target cpu|cpu:debug|triton|wgsl]
                                                [--batch B --heads H --seq S --head-dim D]
                                                [--causal] [--block-m M --block-n N]
                                                [--dtypes float16,...] [--atomic-dq]

For ``out = softmax(S) V`` with ``S = Q K^T * scale`` (examples/flash_attention.py), and the
gradient ``d_out`` of a loss with respect to ``out``:

    P = softmax(S)   dV = P^T d_out   dP = d_out V^T   D = rowsum(d_out * out)
    dS = P * (dP - D)   dQ = dS K * scale   dK = dS^T Q * scale

As in the forward pass, the seq x seq matrices are never written to memory: each kernel
recomputes P block by block from Q, K and the forward pass's per-row log-sum-exp (``lse``).
Three kernels: ``row_dot_kernel`` computes D; ``key_grads_kernel`` gives one cube a block of
keys and walks over the queries (dK and dV); ``query_grads_kernel`` gives one cube a block of
queries and walks over the keys (dQ). With ``--atomic-dq``, ``key_grads_kernel`` also adds
its keys' share of dQ into float32 sums by atomics, and no second walk recomputes P and dP
for dQ (five block products instead of seven; FlashAttention-2's way). P and dS are rounded
to the inputs' dtype for the products, as on tensor cores; everything else is float32. The
kernels are burn's, in ``kernels/flash.py``; this program launches them on plain
contiguous arrays. Exits non-zero if a gradient differs from NumPy's (float64) by more than
its rounding bound.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import cubepy as cube
from kernels import flash as attention_kernels
from kernels.flash import Heads, Sizes

try:
    from . import common, flash_attention
except ImportError:  # run as a script: python examples/flash_attention_backward.py
    import common
    import flash_attention



def attention_backward(q: Any, k: Any, v: Any, out: Any, lse: Any, d_out: Any, dq: Any,
                       dk: Any, dv: Any, *, causal: bool = False, scale: float | None = None,
                       block_kept: int = 64, block_step: int = 64, atomic_dq: bool = False,
                       target: str | None = None, **options: Any) -> None:
    """The gradients ``dq``, ``dk``, ``dv`` of attention (written into those arrays), given
    the forward pass's ``out`` and ``lse`` and the gradient ``d_out`` of ``out``.

    ``q``, ``out``, ``d_out``, ``dq``: (batch, heads, seq_q, head_dim); ``k``, ``v``, ``dk``,
    ``dv``: (batch, heads, seq_k, head_dim); all contiguous, of one dtype. ``lse``: float32
    (batch, heads, seq_q), from ``flash_attention.attention(..., lse=lse)`` with the same
    ``causal`` and ``scale``. Each cube keeps ``block_kept`` rows (its queries for dQ, its
    keys for dK and dV) and walks over the others ``block_step`` at a time. With
    ``atomic_dq`` the dK/dV kernel also adds each key block's share of dQ into float32 sums
    with atomics (then rounded to the dtype unless it is float32): five products instead of
    seven, and dQ's sums taken in an order that may vary from run to run. ``options`` are
    launch options (``num_warps``...).

    Example:
        >>> q = np.ones((1, 1, 8, 16), np.float32)
        >>> out, lse = np.empty_like(q), np.empty((1, 1, 8), np.float32)
        >>> flash_attention.attention(q, q, q, out, lse=lse, block_m=16, block_n=16,
        ...                           target="cpu")
        >>> dq, dk, dv = (np.empty_like(q) for _ in range(3))
        >>> attention_backward(q, q, q, out, lse, np.ones_like(q), dq, dk, dv, block_kept=16,
        ...                    block_step=16, target="cpu")
        >>> float(dv.sum()), float(np.abs(dq).max())  # each query's weights sum to one
        (128.0, 0.0)
    """
    batch, heads, seq_q, seq_k, head_dim = flash_attention.check_shapes(q, k, v, out)
    arrays = {"q": q, "k": k, "v": v, "out": out, "d_out": d_out, "dq": dq, "dk": dk,
              "dv": dv}
    for name, like in (("d_out", "q"), ("dq", "q"), ("dk", "k"), ("dv", "k")):
        if tuple(arrays[name].shape) != tuple(arrays[like].shape):
            raise ValueError(f"{name} must have {like}'s shape {tuple(arrays[like].shape)}, "
                             f"got {tuple(arrays[name].shape)}")
    flash_attention.check_layouts(arrays)
    flash_attention.check_row_stats("lse", lse, (batch, heads, seq_q))
    if batch * heads == 0:
        return
    scale = flash_attention.checked_scale(scale, head_dim)
    flash_attention.check_blocks(block_kept=block_kept, block_step=block_step)
    if target is not None:
        options["target"] = target
    delta = common.empty((batch, heads, seq_q), "float32", like=q)
    dq_sums = dq
    if atomic_dq and common.dtype_name(dq) != "float32":
        dq_sums = common.empty(tuple(dq.shape), "float32", like=q)
    attention_kernels.launch_backward(
        *map(Heads.contiguous, (q, k, v, out, d_out)), lse, delta, dq, dk, dv, dq_sums,
        Sizes(batch, heads, seq_q, seq_k, head_dim), causal, scale, block_kept, block_step,
        atomic_dq, **options)


# Candidates for GPUs: FlashAttention-2's shape (128 rows kept, 32 or 64 streamed, as in
# Triton's tutorial), and 64-row blocks for large head dims, whose two float32 accumulators
# of block_kept x head_dim live in registers. Then the three that summed dQ by atomics best
# on the H200 (runs 91-92): at 4096 x 128 they gained 1-3 % (picked when causal); at the
# other shapes they lost 3-18 %, the float32 adds costing about what the products saved.
TUNING_CONFIGS = [
    cube.Config(KEPT=kept, STEP=step, ATOMIC=atomic, num_warps=w, num_stages=s)
    for kept, step, w, s, atomic in [
        (128, 32, 4, 3, False), (128, 32, 8, 3, False), (128, 64, 8, 3, False),
        (64, 32, 4, 3, False), (64, 64, 4, 3, False), (64, 64, 8, 2, False),
        (128, 16, 4, 4, False), (64, 16, 4, 4, False),
        (128, 64, 8, 3, True), (64, 64, 4, 3, True), (128, 32, 4, 3, True)]]


@cube.autotune(configs=TUNING_CONFIGS, key=["q", "k", "causal"])
def attention_backward_tuned(q, k, v, out, lse, d_out, dq, dk, dv, seq_q, seq_k, head_dim,
                             causal, KEPT, STEP, num_warps, num_stages, ATOMIC=False,
                             target=None):
    """``attention_backward(...)`` with its blocks, and whether dQ is summed by atomics,
    tuned per bucket of q's and k's shapes (batch, heads, sequence lengths, head dim),
    dtype and device.

    Example:
        >>> attention_backward_tuned(q, k, v, out, lse, d_out, dq, dk, dv,  # doctest: +SKIP
        ...                          seq_q, seq_k, head_dim, causal)
    """
    attention_backward(q, k, v, out, lse, d_out, dq, dk, dv, causal=causal, block_kept=KEPT,
                       block_step=STEP, atomic_dq=ATOMIC, target=target, num_warps=num_warps,
                       num_stages=num_stages)


def attention_backward_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                 d_out: np.ndarray, causal: bool = False,
                                 scale: float | None = None) -> dict[str, tuple]:
    """For "dq", "dk", "dv": (the gradient in float64, a bound on each element's magnitude
    that its rounding errors scale with: the same sums with every term's absolute value)."""
    scale = flash_attention.checked_scale(scale, q.shape[-1])
    scores = flash_attention.scores_reference(q, k, causal, scale)
    q, k, v, d_out = (x.astype(np.float64) for x in (q, k, v, d_out))
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    d_p = d_out @ np.swapaxes(v, -1, -2)
    delta = np.sum(d_out * (p @ v), axis=-1, keepdims=True)
    d_s = p * (d_p - delta)
    # D comes from the forward pass's rounded out, whose error scales with p @ |v|
    d_s_size = p * (np.abs(d_p) + np.sum(np.abs(d_out) * (p @ np.abs(v)), -1, keepdims=True))
    p_t = np.swapaxes(p, -1, -2)
    return {"dq": (d_s @ k * scale, d_s_size @ np.abs(k) * scale),
            "dk": (np.swapaxes(d_s, -1, -2) @ q * scale,
                   np.swapaxes(d_s_size, -1, -2) @ np.abs(q) * scale),
            "dv": (p_t @ d_out, p_t @ np.abs(d_out))}


def lse_reference(q: np.ndarray, k: np.ndarray, causal: bool = False) -> np.ndarray:
    """Each query row's log-sum-exp of its scaled scores, in float64."""
    scores = flash_attention.scores_reference(q, k, causal)
    row_max = scores.max(axis=-1)
    return row_max + np.log(np.exp(scores - row_max[..., None]).sum(axis=-1))


# Bounds, in units of each dtype's epsilon times the element's size from the reference:
# float16 and bfloat16 round P (or dS) and the forward's out to the dtype before their
# products, and the result on its store: half an epsilon each, so 2 in all (the float32
# work beside them is far below). float32's error is exp2's: P = exp2(x), |x| up to about
# 16 at head dim 64 (the command line's default), turns each half-ulp error of x into a
# relative error of ln(2) * |x| * 2^-24, 5.5 epsilons at 16; x has three (S's sum, the
# scale, lse), and exp2 its own: about 32 epsilons in all. (Measured at head dim 32, where
# |x| stays under 8: up to 2.5 epsilons.)
BOUNDS = {"float16": 2 * 2.0**-10, "bfloat16": 2 * 2.0**-7, "float32": 32 * 2.0**-23}


def gradient_errors(got: dict[str, Any], want: dict[str, tuple], dtype: str) -> dict[str, float]:
    """For each gradient, the largest error over the bound ``BOUNDS[dtype] * size`` (plus
    float32's epsilon, for elements whose size is near zero): at most 1 passes."""
    ratios = {}
    for name, (value, size) in want.items():
        error = np.abs(np.asarray(common.to_numpy(got[name]), np.float64) - value)
        bound = BOUNDS[dtype] * size + 2.0**-23
        ratios[name] = float(np.max(error / bound)) if np.all(np.isfinite(error)) else np.inf
    return ratios


def check(target: str, batch: int = 2, heads: int = 2, seq_q: int = 100, seq_k: int = 100,
          head_dim: int = 32, dtype: str = "float16", causal: bool = False, block_m: int = 32,
          block_n: int = 32, seed: int = 0, atomic_dq: bool = False, **options: Any) -> bool:
    """A random attention's forward and backward passes on ``target`` against NumPy in
    float64 (UnsupportedError when the target has no ``dtype``). The forward pass takes
    blocks of ``block_m`` x ``block_n``, the backward keeps ``block_m`` rows and steps by
    ``block_n`` (with dQ summed by atomics if ``atomic_dq``); ``options`` are the
    backward's launch options."""
    rng = np.random.default_rng(seed)
    np_dtype = common.np_dtype(dtype)
    host = {name: rng.uniform(-1, 1, (batch, heads, seq, head_dim)).astype(np_dtype)
            for name, seq in (("q", seq_q), ("k", seq_k), ("v", seq_k), ("d_out", seq_q))}
    dev = {name: common.to_device(x, target) for name, x in host.items()}
    out = common.empty((batch, heads, seq_q, head_dim), dtype, like=dev["q"])
    lse = common.empty((batch, heads, seq_q), "float32", like=dev["q"])
    flash_attention.attention(dev["q"], dev["k"], dev["v"], out, lse=lse, causal=causal,
                              block_m=block_m, block_n=block_n, target=target)
    grads = {name: common.empty(dev[like].shape, dtype, like=dev["q"])
             for name, like in (("dq", "q"), ("dk", "k"), ("dv", "v"))}
    attention_backward(dev["q"], dev["k"], dev["v"], out, lse, dev["d_out"], grads["dq"],
                       grads["dk"], grads["dv"], causal=causal, block_kept=block_m,
                       block_step=block_n, atomic_dq=atomic_dq, target=target, **options)
    want = attention_backward_reference(host["q"], host["k"], host["v"], host["d_out"], causal)
    # |lse| < 8 here, where float32's last bit is 2^-20; exp2, log2 and the sums add a few.
    ok = common.report(f"lse {dtype}{' causal' if causal else ''}", common.max_error(
        lse, lse_reference(host["q"], host["k"], causal)), 1e-5)
    for name, ratio in gradient_errors(grads, want, dtype).items():
        label = (f"{name} {batch}x{heads}x{seq_q}x{seq_k}x{head_dim} {dtype}"
                 f"{' causal' if causal else ''} ({block_m}x{block_n}"
                 f"{', atomic dQ' if atomic_dq else ''})")
        ok &= common.report(label, ratio, 1.0)
    return ok


def add_arguments(parser: Any) -> None:
    """The forward example's command line, and --atomic-dq."""
    flash_attention.add_arguments(parser)
    parser.add_argument("--atomic-dq", action="store_true",
                        help="sum dQ with float32 atomics in the dK/dV kernel")


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(__doc__.splitlines()[0], argv, add_arguments)
    small = common.small(args.target)
    seq = args.seq or (80 if small else 500)
    # the forward pass's blocks, and the backward's kept and step sizes
    blocks = (args.block_m or (32 if small else 64), args.block_n or (32 if small else 64))
    print(f"flash_attention_backward on target {args.target!r} (errors over their bounds)")
    shape = (args.batch, args.heads, seq, seq, args.head_dim)
    ok = common.run_dtypes(args.dtypes.split(","), lambda dtype: check(
        args.target, *shape, dtype, args.causal, *blocks, atomic_dq=args.atomic_dq))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
