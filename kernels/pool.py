"""2-D pooling: max and average over sliding windows, and adaptive average pooling.

One output element per lane: each cube takes ``BLOCK`` consecutive elements of the contiguous
(N, C, OH, OW) result (so neighbouring lanes read neighbouring input columns) and loops over
its window at run time, masking taps that fall in the padding. Max pooling treats padding as
-inf and propagates NaN (as torch does); average pooling counts padding in the divisor
(torch's default ``count_include_pad=True``), so every window divides by ``KH * KW``.
Adaptive average pooling gives output ``i`` of an axis of ``n`` the window
``[floor(i * n / out), ceil((i + 1) * n / out))``. Inputs are any strided views; 16-bit floats
are computed in float32. 1-D pools are these over a height-1 view.

Example:
    >>> y = pool2d(ctx, "max", x, (2, 2), (2, 2), (0, 0), (1, 1), (16, 16))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

import cubepy as cube
from cubepy.ir.dtypes import DType

from .layout import Context, View, scalar

POOL_OPS = ("max", "avg")


@cube.func
def output_position(idx, C, OH, OW):
    ow = idx % OW
    oh = (idx // OW) % OH
    plane = idx // (OW * OH)  # n * C + c
    return ow, oh, plane % C, plane // C


@cube.func
def max_step(best, v, m):
    # NaN wins, as in torch: a NaN tap makes the window's maximum NaN
    return cube.where(m & ((v > best) | (v != v)), v, best)


@cube.kernel
def pool2d_kernel(x, x_off, xs_n, xs_c, xs_h, xs_w, out, total, C, H, W, OH, OW, KH, KW,
                  stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, area,
                  OP: cube.Comptime[str], CT: cube.Comptime[object], DT: cube.Comptime[object],
                  BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    ok = idx < total
    ow, oh, c, n = output_position(idx, C, OH, OW)
    base = x_off + n * xs_n + c * xs_c
    ih0 = oh * stride_h - pad_h
    iw0 = ow * stride_w - pad_w
    if OP == "max":
        acc = cube.full((BLOCK,), float("-inf"), CT)
    else:
        acc = cube.zeros((BLOCK,), CT)
    for kh in range(KH):
        ih = ih0 + kh * dil_h
        row_ok = ok & (ih >= 0) & (ih < H)
        for kw in range(KW):
            iw = iw0 + kw * dil_w
            m = row_ok & (iw >= 0) & (iw < W)
            v = cube.load(x + base + ih * xs_h + iw * xs_w, mask=m, other=0).to(CT)
            if OP == "max":
                acc = max_step(acc, v, m)
            else:
                acc = acc + v
    if OP == "avg":
        acc = acc / area
    cube.store(out + idx, acc.to(DT), mask=ok)


@cube.kernel
def adaptive_avg_pool2d_kernel(x, x_off, xs_n, xs_c, xs_h, xs_w, out, total, C, H, W, OH, OW,
                               KH_MAX, KW_MAX, CT: cube.Comptime[object],
                               DT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    ok = idx < total
    ow, oh, c, n = output_position(idx, C, OH, OW)
    base = x_off + n * xs_n + c * xs_c
    h0 = (oh * H) // OH
    h1 = ((oh + 1) * H + OH - 1) // OH
    w0 = (ow * W) // OW
    w1 = ((ow + 1) * W + OW - 1) // OW
    acc = cube.zeros((BLOCK,), CT)
    for kh in range(KH_MAX):
        ih = h0 + kh
        row_ok = ok & (ih < h1)
        for kw in range(KW_MAX):
            iw = w0 + kw
            m = row_ok & (iw < w1)
            acc = acc + cube.load(x + base + ih * xs_h + iw * xs_w, mask=m, other=0).to(CT)
    count = ((h1 - h0) * (w1 - w0)).to(CT)
    cube.store(out + idx, (acc / cube.maximum(count, 1)).to(DT), mask=ok)


def _block(ctx: Context) -> int:
    # One size per target, not per shape: each new BLOCK would be a new compile.
    return 1024 if ctx.target.startswith("cpu") else 256


def _compute(dtype: DType) -> DType:
    return cube.float32 if dtype.name in ("float16", "bfloat16") else dtype


def pool2d(ctx: Context, op: str, x: View, kernel: Sequence[int], stride: Sequence[int],
           padding: Sequence[int], dilation: Sequence[int], out_size: Sequence[int]) -> View:
    """``op`` ("max" or "avg") pooling of ``x`` (N, C, H, W) as a contiguous (N, C, OH, OW)
    view of ``x``'s dtype; ``padding`` is (top, left), ``out_size`` is (OH, OW).

    Example:
        >>> y = pool2d(ctx, "avg", x, (3, 3), (1, 1), (1, 1), (1, 1), (8, 8))  # doctest: +SKIP
    """
    if op not in POOL_OPS:
        raise ValueError(f"unknown pooling {op!r}; ops: {', '.join(POOL_OPS)}")
    n, c, h, w = x.shape
    oh, ow = out_size
    out = ctx.new((n, c, oh, ow), x.dtype)
    total = out.numel
    if total == 0:
        return out
    compute = _compute(x.dtype)
    block = _block(ctx)
    pool2d_kernel[(cube.cdiv(total, block),)](
        x.storage, x.offset, *x.strides, out.storage, total, c, h, w, oh, ow, *kernel, *stride,
        *padding, *dilation, scalar(kernel[0] * kernel[1], compute), OP=op, CT=compute,
        DT=x.dtype, BLOCK=block, target=ctx.target)
    return out


def _largest_window(size: int, out: int) -> int:
    return max(((i + 1) * size + out - 1) // out - (i * size) // out for i in range(out))


def adaptive_avg_pool2d(ctx: Context, x: View, out_size: Sequence[int]) -> View:
    """Average pooling of ``x`` (N, C, H, W) onto an (OH, OW) grid of windows.

    Example:
        >>> y = adaptive_avg_pool2d(ctx, x, (1, 1))  # global average pooling  # doctest: +SKIP
    """
    n, c, h, w = x.shape
    oh, ow = out_size
    out = ctx.new((n, c, oh, ow), x.dtype)
    total = out.numel
    if total == 0:
        return out
    block = _block(ctx)
    adaptive_avg_pool2d_kernel[(cube.cdiv(total, block),)](
        x.storage, x.offset, *x.strides, out.storage, total, c, h, w, oh, ow,
        _largest_window(h, oh), _largest_window(w, ow), CT=_compute(x.dtype), DT=x.dtype,
        BLOCK=block, target=ctx.target)
    return out
