"""Fused attention (flash attention's forward pass): Triton's sixth tutorial in cubepy.

    python examples/flash_attention.py [--target cpu|cpu:debug|triton|wgsl]
                                       [--batch B --heads H --seq S --head-dim D] [--causal]
                                       [--block-m M --block-n N] [--dtypes float16,...]

out = softmax(Q K^T * scale) V for Q, K, V of shape (batch, heads, seq, head_dim), float16,
bfloat16 or float32, with an optional causal mask (query i sees keys 0..i). Each cube takes
BLOCK_M queries of one head and walks over the keys in BLOCK_N slices, keeping a running row
maximum and sum ("online softmax"): the seq x seq score matrix is never written to memory,
which NumPy's reference does. Scores and sums are float32; the probabilities are rounded to
V's dtype for the second product, as on tensor cores. The kernel is burn's, in
``kernels/flash.py`` (``attention_kernel``; it also reads strided heads and masks head
dims that are not powers of two); this program launches it on plain contiguous arrays.
``attention_tuned`` picks the block sizes by benchmark (``cube.autotune``). Exits non-zero if
a result differs from NumPy.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

import cubepy as cube
from cubepy.autotune import layout_class
from kernels import flash as attention_kernels
from kernels.flash import Heads, Sizes

try:
    from . import common
except ImportError:  # run as a script: python examples/flash_attention.py
    import common

HEAD_DIMS = (16, 32, 64, 128)


def check_shapes(q: Any, k: Any, v: Any, out: Any) -> tuple[int, int, int, int, int]:
    """(batch, heads, seq_q, seq_k, head_dim), or ValueError naming what does not fit."""
    shapes = {name: tuple(array.shape) for name, array in
              (("q", q), ("k", k), ("v", v), ("out", out))}
    if any(len(shape) != 4 for shape in shapes.values()):
        raise ValueError(f"attention takes (batch, heads, seq, head_dim) arrays, got {shapes}")
    batch, heads, seq_q, head_dim = shapes["q"]
    seq_k = shapes["k"][2]
    if shapes["k"] != (batch, heads, seq_k, head_dim) or shapes["v"] != shapes["k"]:
        raise ValueError(f"k and v must both be (batch, heads, seq_k, {head_dim}) with q's "
                         f"batch and heads, got {shapes}")
    if shapes["out"] != shapes["q"]:
        raise ValueError(f"out must have q's shape {shapes['q']}, got {shapes['out']}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS} (a tile dimension is a power "
                         f"of two), got {head_dim}; pad q, k and v with zeros to the next one "
                         f"and pass scale=1/sqrt({head_dim})")
    if seq_k == 0:
        raise ValueError("k and v have no keys (seq_k == 0): softmax over nothing is undefined")
    # The kernel's offsets are 32-bit.
    if batch * heads * max(seq_q, seq_k) * head_dim >= 2**31:
        raise ValueError(f"{shapes} has 2**31 elements or more per array: call attention on "
                         f"a part of the batch at a time")
    return batch, heads, seq_q, seq_k, head_dim


def check_layouts(arrays: dict[str, Any]) -> None:
    """ValueError unless the arrays are contiguous and of one dtype."""
    strided = [name for name, array in arrays.items() if layout_class(array) != "c"]
    if strided:
        raise ValueError(f"{', '.join(strided)} must be contiguous (the kernel computes "
                         f"offsets from the shape): pass a contiguous copy, e.g. "
                         f"x.contiguous() in torch or np.ascontiguousarray(x)")
    dtypes = {name: common.dtype_name(array) for name, array in arrays.items()}
    if len(set(dtypes.values())) > 1:
        raise ValueError(f"q, k, v and out must have one dtype, got {dtypes}")


def attention(q: Any, k: Any, v: Any, out: Any, *, causal: bool = False,
              scale: float | None = None, block_m: int = 64, block_n: int = 64,
              descriptors: bool = False, lse: Any = None, target: str | None = None,
              **options: Any) -> None:
    """``out = softmax(q @ k^T * scale) @ v`` per batch and head, in one kernel.

    ``q``, ``out``: (batch, heads, seq_q, head_dim); ``k``, ``v``: (batch, heads, seq_k,
    head_dim); all contiguous, of one dtype. ``scale`` defaults to ``1 / sqrt(head_dim)``;
    ``causal`` lets query i see keys 0..i. ``descriptors`` reads K and V through tensor
    descriptors (TMA block copies on NVIDIA sm_90+). ``lse``, a contiguous float32 array of
    shape (batch, heads, seq_q), receives each row's log-sum-exp of the scaled scores, which
    ``flash_attention_backward.attention_backward`` needs. ``options`` are launch options
    (``num_warps``...).

    Example:
        >>> q = np.ones((1, 2, 8, 16), np.float32)
        >>> out = np.empty_like(q)
        >>> attention(q, q, q, out, block_m=16, block_n=16, target="cpu")
        >>> float(out[0, 0, 0, 0])
        1.0
    """
    batch, heads, seq_q, seq_k, head_dim = check_shapes(q, k, v, out)
    check_layouts({"q": q, "k": k, "v": v, "out": out})
    if lse is not None:
        check_row_stats("lse", lse, (batch, heads, seq_q))
    if seq_q == 0 or batch * heads == 0:
        return
    scale = checked_scale(scale, head_dim)
    check_blocks(block_m=block_m, block_n=block_n)
    if target is not None:
        options["target"] = target
    attention_kernels.launch_forward(*map(Heads.contiguous, (q, k, v, out)), lse,
                                     Sizes(batch, heads, seq_q, seq_k, head_dim), causal,
                                     scale, block_m, block_n, descriptors, **options)


def checked_scale(scale: float | None, head_dim: int) -> float:
    """``scale``, by default ``1 / sqrt(head_dim)``; ValueError unless positive and finite."""
    scale = 1.0 / math.sqrt(head_dim) if scale is None else float(scale)
    if not (scale > 0.0 and math.isfinite(scale)):  # each row's max is taken before scaling
        raise ValueError(f"scale must be positive and finite, got {scale}")
    return scale


def check_blocks(**blocks: int) -> None:
    """ValueError unless every block side (by name) is a power of two of at least 16."""
    for name, block in blocks.items():
        if block < 16 or block & (block - 1):  # a tile side, and dot's smallest on GPUs
            raise ValueError(f"{name} must be a power of two of at least 16, got {block}")


def check_row_stats(name: str, array: Any, shape: tuple[int, int, int]) -> None:
    """ValueError unless ``array`` (a per-row statistic) is contiguous float32 of ``shape``."""
    got = (tuple(array.shape), common.dtype_name(array))
    if got != (shape, "float32"):
        raise ValueError(f"{name} must be a float32 array of shape {shape} (batch, heads, "
                         f"seq_q), got {got[1]} {got[0]}")
    check_layouts({name: array})


# Candidates for GPUs: 128-query blocks keep the tensor cores busy on long sequences, 64 suit
# short ones and large head dims (the accumulator is BLOCK_M x head_dim float32 registers).
TUNING_CONFIGS = [
    cube.Config(BM=bm, BN=bn, num_warps=w, num_stages=s, DESC=d)
    for bm, bn, w, s, d in [(128, 64, 8, 3, False), (128, 128, 8, 3, False),
                            (128, 64, 4, 3, False), (64, 64, 4, 3, False),
                            (64, 128, 4, 3, False), (128, 32, 4, 4, False),
                            (64, 32, 4, 4, False), (128, 64, 8, 3, True),
                            (128, 128, 8, 3, True), (128, 64, 4, 3, True),
                            (64, 64, 4, 3, True), (64, 128, 4, 3, True)]]


@cube.autotune(configs=TUNING_CONFIGS, key=["q", "k", "causal"])
def attention_tuned(q, k, v, out, seq_q, seq_k, head_dim, causal, BM, BN, num_warps,
                    num_stages, DESC=False, target=None):
    """``attention(q, k, v, out, causal=causal)`` with block sizes tuned per bucket of q's
    and k's shapes (batch, heads, sequence lengths, head dim), dtype and device.

    Example:
        >>> seq_q, seq_k, head_dim = q.shape[2], k.shape[2], q.shape[3]  # doctest: +SKIP
        >>> attention_tuned(q, k, v, out, seq_q, seq_k, head_dim, True)  # doctest: +SKIP
    """
    attention(q, k, v, out, causal=causal, block_m=BM, block_n=BN, descriptors=DESC,
              target=target, num_warps=num_warps, num_stages=num_stages)


def scores_reference(q: np.ndarray, k: np.ndarray, causal: bool = False,
                     scale: float | None = None) -> np.ndarray:
    """q @ k^T * scale in float64 NumPy, -inf where the causal mask hides a key."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) * scale
    if causal:
        scores = np.where(np.tri(*scores.shape[-2:], dtype=bool), scores, -np.inf)
    return scores


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False,
                        scale: float | None = None) -> np.ndarray:
    """softmax(q @ k^T * scale) @ v in float64 NumPy."""
    scores = scores_reference(q, k, causal, scale)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return scores / scores.sum(axis=-1, keepdims=True) @ v.astype(np.float64)


def check(target: str, batch: int = 2, heads: int = 3, seq_q: int = 100, seq_k: int = 100,
          head_dim: int = 32, dtype: str = "float16", causal: bool = False, block_m: int = 32,
          block_n: int = 32, descriptors: bool = False, seed: int = 0) -> bool:
    """A random attention on ``target`` against NumPy in float64 (UnsupportedError when the
    target has no ``dtype``)."""
    rng = np.random.default_rng(seed)
    host = [rng.uniform(-1, 1, (batch, heads, seq, head_dim)).astype(common.np_dtype(dtype))
            for seq in (seq_q, seq_k, seq_k)]
    q, k, v = (common.to_device(x, target) for x in host)
    out = common.empty((batch, heads, seq_q, head_dim), dtype, like=q)
    attention(q, k, v, out, causal=causal, block_m=block_m, block_n=block_n,
              descriptors=descriptors, target=target)
    # The output is a weighted mean of V's rows (|v| <= 1), so below 1: rounding the
    # probabilities to the dtype moves it by at most half an ulp of 1, rounding the output by
    # another half. float32 adds the exp2 and the sums' rounding, a few ulps.
    tol = {"float32": 2e-6, "float16": 2.0**-10, "bfloat16": 2.0**-7}[dtype]
    name = (f"attention {batch}x{heads}x{seq_q}x{seq_k}x{head_dim} {dtype}"
            f"{' causal' if causal else ''} ({block_m}x{block_n}{' desc' if descriptors else ''})")
    return common.report(name, common.max_error(out, attention_reference(*host, causal)), tol)


def add_arguments(parser: Any) -> None:
    """The command line of this example and of flash_attention_backward's."""
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=3)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--block-m", type=int)
    parser.add_argument("--block-n", type=int)
    parser.add_argument("--dtypes", default="float16,bfloat16,float32")


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(__doc__.splitlines()[0], argv, add_arguments)
    small = common.small(args.target)
    seq = args.seq or (80 if small else 700)
    # Big blocks suit GPUs and the CPU target (one BLAS call per block pair); small ones keep
    # interpreters quick.
    blocks = (args.block_m or (32 if small else 64), args.block_n or (32 if small else 64))
    print(f"flash_attention on target {args.target!r}")
    shape = (args.batch, args.heads, seq, seq, args.head_dim)
    ok = common.run_dtypes(args.dtypes.split(","),
                           lambda dtype: check(args.target, *shape, dtype, args.causal, *blocks))
    ok &= check(args.target, *shape, "float32", not args.causal, *blocks)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
