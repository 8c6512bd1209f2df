"""2-D convolution (cross-correlation, as torch's ``conv2d``) as an implicit GEMM.

Per group ``g``, the convolution is a matrix product: ``out[(n, oh, ow), o] = sum over (c, kh,
kw) of x[n, g*Cg + c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] * w[g*Og + o, c, kh, kw]``. The
im2col matrix is never built: each cube computes a ``BLOCK_M`` (output pixels) x ``BLOCK_N``
(output channels) tile, and its A tiles are gathered straight from the input with the
im2col addressing, masked where a tap falls in the padding. The K loop runs over the kernel
taps ``(kh, kw)`` and, inside, over ``BLOCK_K`` input channels, so a tap's pixel addresses and
padding masks are computed once per tap and the channel step is a plain stride. Each slice is
one ``cube.dot`` (tensor cores on Triton).

Inputs are any strided views (all four strides of ``x`` and ``w`` are passed); the result is a
fresh contiguous ``(N, O, OH, OW)`` view. Padding is given as (top, left): the bottom and right
padding follow from the output size (``'same'`` pads asymmetrically, as torch does). ``conv1d``
is ``conv2d`` over a height-1 view. Float inputs accumulate in float32 (float64 for float64).

Example:
    >>> y = conv2d(ctx, x, w, None, (1, 1), (1, 1), (1, 1), 1, (32, 32))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

import cubepy as cube
from cubepy.ir.dtypes import DType

from .layout import Context, View
from .matmul import accumulator


@cube.kernel
def conv2d_kernel(x, x_off, xs_n, xs_c, xs_h, xs_w, w, w_off, ws_o, ws_c, ws_h, ws_w,
                  bias, bias_off, bias_s, has_bias, out, H, W, C_GROUP, O_GROUP, O_TOTAL, OH, OW,
                  KH, KW, M, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
                  ACC: cube.Comptime[object],
                  DT: cube.Comptime[object], BLOCK_M: cube.Comptime[int],
                  BLOCK_N: cube.Comptime[int], BLOCK_K: cube.Comptime[int]):
    # Channel tiles vary fastest: cubes running together gather the same input pixels.
    num_pid_n = (O_GROUP + BLOCK_N - 1) // BLOCK_N
    pid_m = cube.cube_pos(0) // num_pid_n
    pid_n = cube.cube_pos(0) % num_pid_n
    group = cube.cube_pos(1)

    rm = pid_m * BLOCK_M + cube.arange(0, BLOCK_M)  # output pixels (n, oh, ow), flattened
    rn = pid_n * BLOCK_N + cube.arange(0, BLOCK_N)  # output channels within the group
    rc = cube.arange(0, BLOCK_K)                   # input channels within a slice
    m_ok = rm < M
    n_ok = rn < O_GROUP
    ow = rm % OW
    oh = (rm // OW) % OH
    batch = rm // (OW * OH)
    pixel_base = x_off + batch * xs_n + group * C_GROUP * xs_c
    ih0 = oh * stride_h - pad_h
    iw0 = ow * stride_w - pad_w
    channel = group * O_GROUP + rn
    filter_base = w_off + channel * ws_o

    acc = cube.zeros((BLOCK_M, BLOCK_N), ACC)
    for tap in range(KH * KW):
        kh = tap // KW
        kw = tap % KW
        ih = ih0 + kh * dil_h
        iw = iw0 + kw * dil_w
        inside = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        x_rows = pixel_base + ih * xs_h + iw * xs_w
        w_cols = filter_base + kh * ws_h + kw * ws_w
        for c0 in range(0, C_GROUP, BLOCK_K):
            cc = c0 + rc
            c_ok = cc < C_GROUP
            a_tile = cube.load(x + x_rows[:, None] + cc[None, :] * xs_c,
                               mask=inside[:, None] & c_ok[None, :], other=0)
            b_tile = cube.load(w + cc[:, None] * ws_c + w_cols[None, :],
                               mask=c_ok[:, None] & n_ok[None, :], other=0)
            acc = cube.dot(a_tile, b_tile, acc)
    if has_bias != 0:  # at run time: a bias is not worth a second compile
        b = cube.load(bias + bias_off + channel * bias_s, mask=n_ok, other=0)
        acc = acc + b.to(ACC)[None, :]
    out_rows = batch * (O_TOTAL * OH * OW) + oh * OW + ow
    cube.store(out + out_rows[:, None] + (channel * (OH * OW))[None, :], acc.to(DT),
               mask=m_ok[:, None] & n_ok[None, :])


def _pow2_between(n: int, low: int, high: int) -> int:
    return max(low, min(high, 1 << max(0, (max(n, 1) - 1).bit_length())))


def conv_tiles(target: str, dtype: DType, pixels: int, c_group: int,
               o_group: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps) for a convolution on ``target``: channel tiles
    just covering the group's channels (16, the least ``tl.dot`` takes, to 64), pixel tiles of
    64; 128 x 128 on a GPU for wide layers; halved for 8-byte dtypes, whose tiles fill
    workgroup (shared) memory twice as fast."""
    wide = dtype.bits == 64
    block_m = 32 if wide and target == "wgsl" else 64
    block_n = _pow2_between(o_group, 16, block_m)
    block_k = _pow2_between(c_group, 16, 16 if wide else 32 if target == "wgsl" else 64)
    if target == "triton" and cube.cuda_available() and pixels >= 4096 and o_group >= 64 \
            and not wide:
        block_m, block_n = 128, _pow2_between(o_group, 16, 128)
    return block_m, block_n, block_k, 4 if block_m * block_n <= 64 * 64 else 8


def conv2d(ctx: Context, x: View, w: View, bias: View | None, stride: Sequence[int],
           padding: Sequence[int], dilation: Sequence[int], groups: int,
           out_size: Sequence[int]) -> View:
    """The convolution of ``x`` (N, C, H, W) with ``w`` (O, C / groups, KH, KW) plus ``bias``
    (O,) if given, as a contiguous (N, O, OH, OW) view of ``x``'s dtype; ``padding`` is (top,
    left) and ``out_size`` is (OH, OW).

    Example:
        >>> y = conv2d(ctx, x, w, None, (1, 1), (0, 0), (1, 1), 1, (30, 30))  # doctest: +SKIP
    """
    n, _, h, wd = x.shape
    o, c_group, kh, kw = w.shape
    oh, ow = out_size
    out = ctx.new((n, o, oh, ow), x.dtype)
    o_group = o // groups
    pixels = n * oh * ow
    if out.numel == 0:
        return out
    block_m, block_n, block_k, warps = conv_tiles(ctx.target, x.dtype, pixels, c_group,
                                                      o_group)
    bias_args = [bias.storage, bias.offset, bias.strides[0], 1] if bias is not None else \
        [w.storage, 0, 0, 0]  # not read
    grid = (cube.cdiv(pixels, block_m) * cube.cdiv(o_group, block_n), groups)
    conv2d_kernel[grid](
        x.storage, x.offset, *x.strides, w.storage, w.offset, *w.strides, *bias_args,
        out.storage, h, wd, c_group, o_group, o, oh, ow, kh, kw, pixels, *stride, *padding,
        *dilation, ACC=accumulator(x.dtype), DT=x.dtype,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, target=ctx.target)
    return out
