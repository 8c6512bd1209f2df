"""2-D convolution (cross-correlation, as torch's ``conv2d``) as an implicit GEMM.

Per group ``g``, the convolution is a matrix product: ``out[(n, oh, ow), o] = sum over (c,
kh, kw) of x[n, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw, g*Cg + c] * w[g, c, kh, kw, o]``. The
im2col matrix is never built: each cube computes a ``BLOCK_M`` (output pixels) x ``BLOCK_N``
(output channels) tile, and its A tiles are gathered straight from the input with the im2col
addressing, masked where a tap falls in the padding. One flat loop runs over the K steps, each
one kernel tap ``(kh, kw)`` and ``BLOCK_K`` input channels, so Triton pipelines the whole of
K (a loop per tap with a channel loop inside pipelined only the few channel steps of a tap).
With fewer channels than the least K tile (an RGB input, a depthwise layer: ``FLAT_K``) a step
spans several taps instead. Each step is one ``cube.dot`` (tensor cores on Triton).

Layouts, chosen for the loads: the kernel reads the input channels-last (NHWC: a tap's
channels are consecutive, so a tile row is one wide load) and the weight as a row-major
(groups, Cg, KH, KW, Og) matrix (a K row's output channels consecutive; (groups, KH, KW, Cg,
Og) with ``FLAT_K``, so that a step's rows are consecutive too). An NCHW input is
copied channels-last first and the weight, a small tensor, laid out afresh, each by a tiled
transpose (``channels_last_kernel``; inputs already channels-last and weights already laid
out are read in place). ``C_EVEN``/``N_EVEN`` (whole channel and output-channel tiles) drop
the masks that would stop Triton from vectorizing the loads. The result is a fresh contiguous
``(N, O, OH, OW)`` view. A pointwise convolution (1x1, stride 1, no padding, one group) is one
batched ``kernels.matmul`` product over the NCHW input instead, with no copies.

Padding is given as (top, left): the bottom and right padding follow from the output size
(``'same'`` pads asymmetrically, as torch does). ``conv1d`` is ``conv2d`` over a height-1
view. Float inputs accumulate in float32 (float64 for float64).

Tiles: on a CUDA GPU, ``tuned_conv`` (``@cube.autotune``) picks among ``GPU_CONFIGS`` (measured
on an H200) for convolutions of at least ``GPU_TUNE_FROM`` multiply-adds; elsewhere, and for
smaller ones, ``conv_tiles`` sizes one config from the problem.

Example:
    >>> y = conv2d(ctx, x, w, None, (1, 1), (1, 1), (1, 1), 1, (32, 32))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cubepy as cube
from cubepy import config as cube_config
from cubepy.autotune import TuneContext, pow2_anchor
from cubepy.ir.dtypes import DType

from .elementwise import binary, copy
from .layout import Context, View, contiguous_strides
from .matmul import MAX_GRID_Y, accumulator, matmul


@cube.kernel
def conv2d_kernel(x, x_off, xs_n, xs_h, xs_w, wt, bias, bias_off, bias_s, has_bias, out,
                  H, W, C_GROUP, O_GROUP, O_TOTAL, OH, OW, KW, M, TAPS, C_STEPS,
                  stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
                  ACC: cube.Comptime[object], DT: cube.Comptime[object],
                  BLOCK_M: cube.Comptime[int], BLOCK_N: cube.Comptime[int],
                  BLOCK_K: cube.Comptime[int], C_EVEN: cube.Comptime[bool],
                  N_EVEN: cube.Comptime[bool], FLAT_K: cube.Comptime[bool]):
    # Channel tiles vary fastest: cubes running together gather the same input pixels.
    num_pid_n = (O_GROUP + BLOCK_N - 1) // BLOCK_N
    pid_m = cube.cube_pos(0) // num_pid_n
    pid_n = cube.cube_pos(0) % num_pid_n
    group = cube.cube_pos(1)

    rm = pid_m * BLOCK_M + cube.arange(0, BLOCK_M)  # output pixels (n, oh, ow), flattened
    rn = pid_n * BLOCK_N + cube.arange(0, BLOCK_N)  # output channels within the group
    rc = cube.arange(0, BLOCK_K)                   # input channels within a step
    m_ok = rm < M
    n_ok = rn < O_GROUP
    ow = rm % OW
    oh = (rm // OW) % OH
    batch = rm // (OW * OH)
    pixel_base = x_off + batch * xs_n + group * C_GROUP  # channels-last: unit channel stride
    ih0 = oh * stride_h - pad_h
    iw0 = ow * stride_w - pad_w
    w_group = group * TAPS * C_GROUP * O_GROUP

    acc = cube.zeros((BLOCK_M, BLOCK_N), ACC)
    if FLAT_K:
        # Few channels (an RGB input, a depthwise layer): a K step spans several taps, so
        # the tile is not mostly padding; each element finds its own tap.
        k_total = TAPS * C_GROUP
        for k0 in range(0, k_total, BLOCK_K):
            kk = k0 + rc
            k_ok = kk < k_total
            tap = kk // C_GROUP
            kh = tap // KW
            ih = ih0[:, None] + (kh * dil_h)[None, :]
            iw = iw0[:, None] + ((tap - kh * KW) * dil_w)[None, :]
            inside = (m_ok[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0)
                      & (iw < W))
            in_channel = kk - tap * C_GROUP
            a_tile = cube.load(x + pixel_base[:, None] + ih * xs_h + iw * xs_w
                               + in_channel[None, :], mask=inside, other=0)
            # the weight's rows are (tap, channel) here: a step's rows are consecutive
            b_tile = cube.load(wt + w_group + kk[:, None] * O_GROUP + rn[None, :],
                               mask=k_ok[:, None] & n_ok[None, :], other=0)
            acc = cube.dot(a_tile, b_tile, acc)
    else:
        for step in range(TAPS * C_STEPS):  # one flat loop (tap, channel slice): pipelined whole
            tap = step // C_STEPS
            cc = (step - tap * C_STEPS) * BLOCK_K + rc
            kh = tap // KW
            ih = ih0 + kh * dil_h
            iw = iw0 + (tap - kh * KW) * dil_w
            inside = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a_ptrs = x + (pixel_base + ih * xs_h + iw * xs_w)[:, None] + cc[None, :]
            b_ptrs = wt + w_group + (cc * TAPS + tap)[:, None] * O_GROUP + rn[None, :]
            if C_EVEN:
                a_tile = cube.load(a_ptrs, mask=inside[:, None], other=0)
                if N_EVEN:
                    b_tile = cube.load(b_ptrs)
                else:
                    b_tile = cube.load(b_ptrs, mask=n_ok[None, :], other=0)
            else:
                c_ok = cc < C_GROUP
                a_tile = cube.load(a_ptrs, mask=inside[:, None] & c_ok[None, :], other=0)
                b_tile = cube.load(b_ptrs, mask=c_ok[:, None] & n_ok[None, :], other=0)
            acc = cube.dot(a_tile, b_tile, acc)
    channel = group * O_GROUP + rn
    if has_bias != 0:  # at run time: a bias is not worth a second compile
        b = cube.load(bias + bias_off + channel * bias_s, mask=n_ok, other=0)
        acc = acc + b.to(ACC)[None, :]
    out_rows = batch * (O_TOTAL * OH * OW) + (rm - batch * (OH * OW))
    cube.store(out + out_rows[:, None] + (channel * (OH * OW))[None, :], acc.to(DT),
               mask=m_ok[:, None] & n_ok[None, :])


# Groups with fewer channels than this (the least K tile of ``tl.dot``) run FLAT_K.
FLAT_K_BELOW = 16


@cube.kernel
def channels_last_kernel(x, x_off, xs_n, xs_c, xs_p, out, C, P, UNIT_P: cube.Comptime[bool],
                         BLOCK_C: cube.Comptime[int], BLOCK_P: cube.Comptime[int]):
    # out[n, p, c] = x[n, c, p] for pixels p = (h, w) flattened: a tile read along p and
    # written along c, so both sides are whole lines (an elementwise copy reads one of them
    # an element at a time)
    n = cube.cube_pos(1)
    rc = cube.cube_pos(0) % ((C + BLOCK_C - 1) // BLOCK_C) * BLOCK_C + cube.arange(0, BLOCK_C)
    rp = cube.cube_pos(0) // ((C + BLOCK_C - 1) // BLOCK_C) * BLOCK_P + cube.arange(0, BLOCK_P)
    inside = (rc[:, None] < C) & (rp[None, :] < P)
    if UNIT_P:
        pixels = rp[None, :]
    else:
        pixels = rp[None, :] * xs_p
    tile = cube.load(x + x_off + n * xs_n + rc[:, None] * xs_c + pixels, mask=inside, other=0)
    cube.store(out + n * P * C + rp[None, :] * C + rc[:, None], tile, mask=inside)


def _pow2_between(n: int, low: int, high: int) -> int:
    return max(low, min(high, 1 << max(0, (max(n, 1) - 1).bit_length())))


def conv_tiles(target: str, dtype: DType, pixels: int, depth: int,
               o_group: int) -> dict[str, int]:
    """The launch keywords (tiles, ``num_warps``) of an untuned convolution on ``target``:
    K tiles just covering one step's ``depth`` (16, the least ``tl.dot`` takes, to 64),
    pixel tiles of 64; 128 x 128 on a GPU for wide layers; halved for 8-byte dtypes, whose
    tiles fill workgroup (shared) memory twice as fast.

    Example:
        >>> conv_tiles("cpu", cube.float32, 4096, 3, 64)
        {'BLOCK_M': 64, 'BLOCK_N': 64, 'BLOCK_K': 16, 'num_warps': 4}
    """
    wide = dtype.bits == 64
    block_m = 32 if wide and target == "wgsl" else 64
    block_n = _pow2_between(o_group, 16, block_m)
    block_k = _pow2_between(depth, 16, 16 if wide else 32 if target == "wgsl" else 64)
    if target == "triton" and cube.cuda_available() and pixels >= 4096 and o_group >= 64 \
            and not wide:
        block_m, block_n = 128, _pow2_between(o_group, 16, 128)
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k,
            "num_warps": 4 if block_m * block_n <= 64 * 64 else 8}


@dataclass(slots=True, eq=False)
class ConvPlan:
    """One convolution as the kernel runs it: the channels-last input, the laid-out weight,
    the result and the sizes (``m`` pixels, ``c_group`` x ``taps`` reduced, ``o_group``
    output channels per group)."""

    target: str
    dtype: DType
    x: View        # (N, H, W, C), unit channel stride
    wt: Any        # storage of (groups, Cg, KH, KW, Og), (groups, KH, KW, Cg, Og) if flat_k
    bias: View | None
    out: View      # (N, O, OH, OW), contiguous
    kw: int
    taps: int
    c_group: int
    o_group: int
    groups: int
    m: int
    geometry: tuple[int, ...]  # stride, padding, dilation (h, w each)

    @property
    def flat_k(self) -> bool:
        """Whether K steps span taps (``FLAT_K``): fewer channels than the least K tile."""
        return self.c_group < FLAT_K_BELOW

    @property
    def step_depth(self) -> int:
        """How deep one K step can usefully be: a tap's channels, or all of K if flat."""
        return self.c_group * self.taps if self.flat_k else self.c_group


def _swap_last_axes(ctx: Context, x: View, n: int, c: int, p: int, s_n: int, s_c: int,
                    s_p: int) -> View:
    """A contiguous (n, p, c) copy of the (n, c, p) array at ``x``'s offset with those
    strides (``channels_last_kernel``)."""
    out = ctx.new((n, p, c), x.dtype)
    block_c, block_p = (32, 32) if ctx.target == "wgsl" else (64, 64)
    grid = (cube.cdiv(c, block_c) * cube.cdiv(p, block_p), n)
    channels_last_kernel[grid](x.storage, x.offset, s_n, s_c, s_p, out.storage, c, p,
                               UNIT_P=s_p == 1, BLOCK_C=block_c, BLOCK_P=block_p,
                               target=ctx.target)
    return out


def _channels_last(ctx: Context, x: View) -> View:
    """``x`` (N, C, H, W) seen as (N, H, W, C) with a unit channel stride: itself if it
    already has one, else a channels-last copy."""
    n, c, h, w = x.shape
    s_n, s_c, s_h, s_w = x.strides
    nhwc = x.with_layout(x.offset, (n, h, w, c), (s_n, s_h, s_w, s_c))
    if s_c == 1 or c == 1:
        return nhwc
    if s_h != w * s_w or n > MAX_GRID_Y:  # (H, W) do not collapse into one axis
        return copy(ctx, nhwc)
    return _swap_last_axes(ctx, x, n, c, h * w, s_n, s_c, s_w).with_layout(
        0, (n, h, w, c), (h * w * c, w * c, c, 1))


def _weight_rows(ctx: Context, w: View, groups: int) -> Any:
    """The storage of ``w`` (O, Cg, KH, KW) laid out as a row-major (groups, Cg, KH, KW, Og)
    matrix (K rows of output channels); (groups, KH, KW, Cg, Og) for ``FLAT_K``, whose steps
    run over taps, each tap's channels in turn."""
    o, c_group, kh, kw = w.shape
    s_o, s_c, s_h, s_w = w.strides
    o_group = o // groups
    if c_group < FLAT_K_BELOW:  # a small weight: any layout is one strided copy
        rows = w.with_layout(w.offset, (groups, kh, kw, c_group, o_group),
                             (o_group * s_o, s_h, s_w, s_c, s_o))
        return rows.storage if rows.offset == 0 and rows.is_contiguous else \
            copy(ctx, rows).storage
    rows = w.with_layout(w.offset, (groups, c_group, kh, kw, o_group),
                         (o_group * s_o, s_c, s_h, s_w, s_o))
    if rows.offset == 0 and rows.is_contiguous:
        return rows.storage
    if s_h != kw * s_w or s_c != kh * s_h or groups > MAX_GRID_Y:  # (Cg, KH, KW) not one axis
        return copy(ctx, rows).storage
    return _swap_last_axes(ctx, w, groups, o_group, c_group * kh * kw, o_group * s_o, s_o,
                           s_w).storage


def run(plan: ConvPlan, BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, **options: Any) -> None:
    """Launch ``plan`` with the given tiles (and Triton options such as ``num_warps``)."""
    x, bias = plan.x, plan.bias
    n, h, w, _ = x.shape
    _, o, oh, ow = plan.out.shape
    bias_args = [bias.storage, bias.offset, bias.strides[0], 1] if bias is not None else \
        [plan.wt, 0, 0, 0]  # not read
    grid = (cube.cdiv(plan.m, BLOCK_M) * cube.cdiv(plan.o_group, BLOCK_N), plan.groups)
    conv2d_kernel[grid](
        x.storage, x.offset, x.strides[0], x.strides[1], x.strides[2], plan.wt, *bias_args,
        plan.out.storage, h, w, plan.c_group, plan.o_group, o, oh, ow, plan.kw, plan.m,
        plan.taps, cube.cdiv(plan.c_group, BLOCK_K), *plan.geometry, ACC=accumulator(plan.dtype),
        DT=plan.dtype, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        C_EVEN=plan.c_group % BLOCK_K == 0, N_EVEN=plan.o_group % BLOCK_N == 0,
        FLAT_K=plan.flat_k, target=plan.target, **options)


def _configs(rows: list[tuple[int, ...]]) -> list[cube.Config]:
    # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
    return [cube.Config(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=w, num_stages=s)
            for bm, bn, bk, w, s in rows]


# Measured on an H200 (bench/conv_gpu_bench.py --sweep, run 132): 64 x 64 tiles led on most
# ResNet layers, wider ones on high-resolution decoder layers; float32 (IEEE, no tensor
# cores) wants K slices of 32.
GPU_HALF = _configs([(64, 64, 64, 4, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4),
                     (128, 128, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 32, 4, 4)])
GPU_FLOAT32 = _configs([(64, 64, 32, 4, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3)])
GPU_CONFIGS = GPU_HALF + GPU_FLOAT32
# Below this many multiply-adds a convolution takes microseconds: one config sized from the
# problem (``conv_tiles``), not worth compiling and timing every candidate.
GPU_TUNE_FROM = 2**27


def _fits(plan: ConvPlan, tiles: dict[str, Any]) -> bool:
    # Tiles wider than the layer's (power-of-two) channel counts only compute padding.
    return (tiles["BLOCK_N"] <= _pow2_between(plan.o_group, 16, 256)
            and tiles["BLOCK_K"] <= _pow2_between(plan.step_depth, 16, 64))


def _tiles_for(configs: list[cube.Config], ctx: TuneContext) -> list[cube.Config]:
    plan: ConvPlan = ctx.args["plan"]
    listed = GPU_HALF if plan.dtype.bits == 16 else GPU_FLOAT32
    fitting = [cfg for cfg in configs if cfg in listed and _fits(plan, cfg.kwargs)]
    return fitting or [next(cfg for cfg in configs if cfg in listed)]


@cube.autotune(configs=GPU_CONFIGS, key={"M": pow2_anchor, "C": pow2_anchor, "O": pow2_anchor,
                                         "taps": None}, prune=_tiles_for)
def tuned_conv(plan: ConvPlan, x_storage: Any, w_storage: Any, out_storage: Any, M: int,
               C: int, O: int, taps: int, target: str, **tiles: Any) -> None:
    """``run`` with the tiles tuned for this (pixels, channels, output channels) bucket, tap
    count, dtypes, target and device. The storages are arguments so that the tuner keys on
    their dtypes and checks every candidate's output; ``plan`` carries the rest.

    Example:
        >>> tuned_conv(plan, x.storage, wt, out.storage, 4096, 64, 64, 9,
        ...            "triton")  # doctest: +SKIP
    """
    run(plan, **tiles)


# (dtype, size buckets, taps, generation of the settings) -> the chosen launch keywords
_CHOSEN: dict[tuple, dict[str, Any]] = {}


def _launch(plan: ConvPlan) -> None:
    """Run ``plan``: tuned on a CUDA GPU once it is big enough, else with ``conv_tiles``."""
    work = plan.m * plan.o_group * plan.c_group * plan.taps * plan.groups
    tunable = (plan.target == "triton" and cube.cuda_available() and plan.dtype.bits in (16, 32)
               and work >= GPU_TUNE_FROM)
    if not tunable:
        run(plan, **conv_tiles(plan.target, plan.dtype, plan.m, plan.step_depth,
                               plan.o_group))
        return
    key = (plan.dtype, pow2_anchor(plan.m), pow2_anchor(plan.c_group),
           pow2_anchor(plan.o_group), plan.taps, cube_config.generation())
    chosen = _CHOSEN.get(key)
    if chosen is not None:
        run(plan, **chosen)
        return
    tuned_conv(plan, plan.x.storage, plan.wt, plan.out.storage, plan.m, plan.c_group,
               plan.o_group, plan.taps, plan.target)
    _CHOSEN[key] = tuned_conv.last_config.launch_kwargs()


def plan_conv2d(ctx: Context, x: View, w: View, bias: View | None, stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], groups: int,
                out_size: Sequence[int]) -> ConvPlan:
    """The plan of ``conv2d``: the input channels-last, the weight laid out, the result
    allocated."""
    n = x.shape[0]
    o, c_group, kh, kw = w.shape
    oh, ow = out_size
    return ConvPlan(ctx.target, x.dtype, _channels_last(ctx, x), _weight_rows(ctx, w, groups),
                    bias, ctx.new((n, o, oh, ow), x.dtype), kw, kh * kw, c_group, o // groups,
                    groups, n * oh * ow, (*stride, *padding, *dilation))


def _is_pointwise(x: View, w: View, stride: Sequence[int], padding: Sequence[int],
                  groups: int) -> bool:
    # 1x1, stride 1, no padding, one group, and an input whose (H, W) collapse to one axis
    return (w.shape[2:] == (1, 1) and tuple(stride) == (1, 1) and tuple(padding) == (0, 0)
            and groups == 1 and x.strides[2] == x.shape[3] * x.strides[3])


def _pointwise(ctx: Context, x: View, w: View, bias: View | None) -> View:
    """A pointwise convolution as one batched product ``w (O, C) @ x[n] (C, H * W)``: NCHW
    read and written in place, no layout copies. A bias is added in float32 to the product
    (kept in float32 for it) and rounded once, as the convolution kernel does."""
    n, c, h, wd = x.shape
    o = w.shape[0]
    weights = w.with_layout(w.offset, (n, o, c), (0, w.strides[0], w.strides[1]))
    pixels = x.with_layout(x.offset, (n, c, h * wd), (x.strides[0], x.strides[1], x.strides[3]))
    product = matmul(ctx, weights, pixels, x.dtype if bias is None else accumulator(x.dtype))
    if bias is not None:
        spread = bias.with_layout(bias.offset, (n, o, h * wd), (0, bias.strides[0], 0))
        product = binary(ctx, "add", product, spread, product.dtype, x.dtype)
    return product.with_layout(0, (n, o, h, wd), contiguous_strides((n, o, h, wd)))


def conv2d(ctx: Context, x: View, w: View, bias: View | None, stride: Sequence[int],
           padding: Sequence[int], dilation: Sequence[int], groups: int,
           out_size: Sequence[int]) -> View:
    """The convolution of ``x`` (N, C, H, W) with ``w`` (O, C / groups, KH, KW) plus ``bias``
    (O,) if given, as a contiguous (N, O, OH, OW) view of ``x``'s dtype; ``padding`` is (top,
    left) and ``out_size`` is (OH, OW).

    Example:
        >>> y = conv2d(ctx, x, w, None, (1, 1), (0, 0), (1, 1), 1, (30, 30))  # doctest: +SKIP
    """
    n, o = x.shape[0], w.shape[0]
    if n * o * out_size[0] * out_size[1] == 0:
        return ctx.new((n, o, *out_size), x.dtype)
    if _is_pointwise(x, w, stride, padding, groups):
        return _pointwise(ctx, x, w, bias)
    plan = plan_conv2d(ctx, x, w, bias, stride, padding, dilation, groups, out_size)
    _launch(plan)
    return plan.out
