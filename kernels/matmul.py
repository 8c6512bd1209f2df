"""Batched matrix multiplication: ``C[..., M, N] = A[..., M, K] @ B[..., K, N]``.

Three kernels. ``matmul_kernel``, the general one: each cube computes a ``BLOCK_M x BLOCK_N``
tile of one batch entry of C, stepping through K in ``BLOCK_K`` slices with ``cube.dot``
(tensor cores on Triton, BLAS per tile on ``cpu``, the register-blocked workgroup product on
``wgsl``). For one product of dense row-major matrices (``MatmulPlan.dense``, the common
case) the same tile loop runs as ``matmul_dense_kernel``, with six runtime arguments instead
of nineteen, since a launch's host cost grows with them; or, where the tuner picks it (16-bit
products on GPUs), as ``matmul_persistent_kernel``: one cube per multiprocessor looping over
C's tiles, reading A and B through tensor descriptors (TMA block copies on sm_90). A dense
product with few tiles and a long K can also be split along K (``SPLIT_K``): the general
kernel writes each part's product into a float32 scratch and ``sum_slices_kernel`` adds them.

- Operands are any strided views: both strides of each matrix are passed, and never copied.
  Each operand's layout is comptime: ``"row"`` (unit stride along its columns), ``"col"``
  (unit stride along its rows) or ``"any"``. A unit stride is written into the kernel, not
  passed: Triton then knows consecutive elements are consecutive addresses and issues wide
  loads (an argument equal to 1 hid that from it: 20x slower on an H200).
- Batches run on grid axis 1. The (broadcast) batch axes are collapsed on the host into at most
  two (``inner_batch`` splits the batch index); a layout that does not collapse that far gets
  one launch per index of its outer axes.
- Cube numbers walk ``GROUP_M`` tile rows down a tile column before moving right, so cubes that
  run together share rows of A and columns of B in the cache. Ragged tiles are masked; ``EVEN``
  (every tile whole) drops the masks from the K loop.
- Float inputs accumulate in float32 (float64 for float64), integers in int32 (int64 for
  int64) and wrap around like NumPy's; the result is stored as ``out_dtype``.

Tiles (and the kernel) come from ``tuned_matmul`` (``@cube.autotune``), whose candidates per
call are the list ``config_class`` names: on a CUDA GPU the configs measured on an H200 (the
persistent ones for dense plans only), tuned for products of at least ``GPU_TUNE_FROM``
multiply-adds (one moderate config below); on WGSL a few tilings measured on the H200's
Vulkan adapter, tuned from the same size, among those the adapter's workgroup memory holds;
one fixed config on the CPU (BLAS-sized tiles) and Triton's interpreter. Later calls of a
seen (target, dtypes, layouts, size bucket) launch straight away (``_CHOSEN``): the host path
of a plain 2-D product is a few dict lookups and one launch. On Triton, float and int8 tiles
go through ``tl.dot``; other integer tiles are a broadcast product summed over K (hence their
short K slices).

Example:
    >>> c = matmul(ctx, a, b, cube.float32)  # a: View (M, K), b: View (K, N)  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cubepy as cube
from cubepy import config as cube_config
from cubepy.autotune import TuneContext, pow2_anchor
from cubepy.backends.wgsl.codegen_dot import workgroup_room
from cubepy.ir.dtypes import DType

from .layout import Context, View, _indices, collapse
from .matmul_configs import CONFIG_CLASSES, CONFIGS, GPU_TUNE_FROM, config_class, workgroup_bytes

MAX_GRID_Y = 65535  # Triton's (and CUDA's) limit on grid axis 1


@cube.func
def tile_offsets(rows, cols, s_row, s_col, LAYOUT):
    # Folded at compile time: a unit stride is a constant, not an argument.
    if LAYOUT == "row":
        offsets = rows[:, None] * s_row + cols[None, :]
    elif LAYOUT == "col":
        offsets = rows[:, None] + cols[None, :] * s_col
    else:
        offsets = rows[:, None] * s_row + cols[None, :] * s_col
    return offsets


@cube.func
def grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M):
    # Tile number -> (pid_m, pid_n), grouped: GROUP_M tile rows share each tile column.
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (tile // num_pid_in_group) * GROUP_M
    # at least 1 (it is, for every tile there is): written so, the compiler can prove that
    # the persistent kernel's block corners are never negative, which TMA block loads need
    group_size_m = cube.maximum(cube.minimum(num_pid_m - first_pid_m, GROUP_M), 1)
    return (first_pid_m + (tile % num_pid_in_group) % group_size_m,
            (tile % num_pid_in_group) // group_size_m)


@cube.func
def pointer_tile_product(a, a_base, a_sm, a_sk, b, b_base, b_sk, b_sn, rm, rn, M, N, K,
                         A_LAYOUT, B_LAYOUT, ACC, BLOCK_K, EVEN):
    # One tile of A @ B, stepping through K in BLOCK_K slices of pointer tiles.
    rk = cube.arange(0, BLOCK_K)
    acc = cube.zeros((rm.shape[0], rn.shape[0]), ACC)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + rk
        a_ptrs = a + a_base + tile_offsets(rm, ka, a_sm, a_sk, A_LAYOUT)
        b_ptrs = b + b_base + tile_offsets(ka, rn, b_sk, b_sn, B_LAYOUT)
        if EVEN:  # every tile is whole: no masks in the inner loop
            a_tile = cube.load(a_ptrs)
            b_tile = cube.load(b_ptrs)
        else:
            a_tile = cube.load(a_ptrs, mask=(rm[:, None] < M) & (ka[None, :] < K), other=0)
            b_tile = cube.load(b_ptrs, mask=(ka[:, None] < K) & (rn[None, :] < N), other=0)
        acc = cube.dot(a_tile, b_tile, acc)
    return acc


@cube.kernel
def matmul_kernel(a, a_off, a_sm, a_sk, a_sb0, a_sb1, b, b_off, b_sk, b_sn, b_sb0, b_sb1,
                  c, M, N, K, inner_batch, batch_start, c_first,
                  A_LAYOUT: cube.Comptime[str], B_LAYOUT: cube.Comptime[str],
                  ACC: cube.Comptime[object], DT: cube.Comptime[object],
                  BLOCK_M: cube.Comptime[int], BLOCK_N: cube.Comptime[int],
                  BLOCK_K: cube.Comptime[int], GROUP_M: cube.Comptime[int],
                  EVEN: cube.Comptime[bool]):
    num_pid_m = (M + BLOCK_M - 1) // BLOCK_M
    num_pid_n = (N + BLOCK_N - 1) // BLOCK_N
    pid_m, pid_n = grouped_tile(cube.cube_pos(0), num_pid_m, num_pid_n, GROUP_M)
    batch = batch_start + cube.cube_pos(1)
    outer, inner = batch // inner_batch, batch % inner_batch
    rm = pid_m * BLOCK_M + cube.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + cube.arange(0, BLOCK_N)
    acc = pointer_tile_product(a, a_off + outer * a_sb0 + inner * a_sb1, a_sm, a_sk, b,
                               b_off + outer * b_sb0 + inner * b_sb1, b_sk, b_sn, rm, rn,
                               M, N, K, A_LAYOUT, B_LAYOUT, ACC, BLOCK_K, EVEN)
    c_ptrs = c + (c_first + batch) * M * N + rm[:, None] * N + rn[None, :]
    cube.store(c_ptrs, acc.to(DT), mask=(rm[:, None] < M) & (rn[None, :] < N))


@cube.kernel
def matmul_dense_kernel(a, b, c, M, N, K, ACC: cube.Comptime[object],
                        DT: cube.Comptime[object], BLOCK_M: cube.Comptime[int],
                        BLOCK_N: cube.Comptime[int], BLOCK_K: cube.Comptime[int],
                        GROUP_M: cube.Comptime[int], EVEN: cube.Comptime[bool]):
    # One product of dense row-major matrices from their first element: six runtime
    # arguments instead of nineteen (on a GPU the host cost of a launch grows with them,
    # and a 16-row product's kernel takes ~45 us: BENCHMARKS.md, run 32)
    num_pid_m = (M + BLOCK_M - 1) // BLOCK_M
    num_pid_n = (N + BLOCK_N - 1) // BLOCK_N
    pid_m, pid_n = grouped_tile(cube.cube_pos(0), num_pid_m, num_pid_n, GROUP_M)
    rm = pid_m * BLOCK_M + cube.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + cube.arange(0, BLOCK_N)
    acc = pointer_tile_product(a, 0, K, 1, b, 0, N, 1, rm, rn, M, N, K, "row", "row", ACC,
                               BLOCK_K, EVEN)
    cube.store(c + rm[:, None] * N + rn[None, :], acc.to(DT),
               mask=(rm[:, None] < M) & (rn[None, :] < N))


@cube.kernel
def matmul_persistent_kernel(a, b, c, M, N, K, ACC: cube.Comptime[object],
                             DT: cube.Comptime[object], BLOCK_M: cube.Comptime[int],
                             BLOCK_N: cube.Comptime[int], BLOCK_K: cube.Comptime[int],
                             GROUP_M: cube.Comptime[int], C_DESCRIPTOR: cube.Comptime[bool],
                             FLATTEN: cube.Comptime[bool]):
    # The same product with as many cubes as the GPU runs at once, each looping over C's
    # tiles, and A and B read through tensor descriptors: TMA block copies on sm_90+ (5-10 %
    # faster on big products, BENCHMARKS.md), masked tile loads elsewhere. With C_DESCRIPTOR
    # C is written through one too; FLATTEN asks Triton to pipeline the two loops as one.
    a_desc = cube.make_tensor_descriptor(a, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = cube.make_tensor_descriptor(b, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = cube.make_tensor_descriptor(c, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    num_pid_m = (M + BLOCK_M - 1) // BLOCK_M
    num_pid_n = (N + BLOCK_N - 1) // BLOCK_N
    k_tiles = (K + BLOCK_K - 1) // BLOCK_K
    for tile in cube.range(cube.cube_pos(0), num_pid_m * num_pid_n, cube.cube_count(0),
                           flatten=FLATTEN):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = cube.zeros((BLOCK_M, BLOCK_N), ACC)
        for kk in range(0, k_tiles):
            acc = cube.dot(a_desc.load([pid_m * BLOCK_M, kk * BLOCK_K]),
                           b_desc.load([kk * BLOCK_K, pid_n * BLOCK_N]), acc)
        if C_DESCRIPTOR:
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(DT))
        else:
            rm = pid_m * BLOCK_M + cube.arange(0, BLOCK_M)
            rn = pid_n * BLOCK_N + cube.arange(0, BLOCK_N)
            cube.store(c + rm[:, None] * N + rn[None, :], acc.to(DT),
                       mask=(rm[:, None] < M) & (rn[None, :] < N))


@cube.kernel
def sum_slices_kernel(parts, c, size, SLICES: cube.Comptime[int], DT: cube.Comptime[object],
                      BLOCK: cube.Comptime[int]):
    # c = the sum of SLICES consecutive float32 slices of ``size`` elements, as DT: the
    # second step of a product split along K
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    inside = offs < size
    acc = cube.load(parts + offs, mask=inside, other=0)
    for part in range(1, SLICES):
        acc = acc + cube.load(parts + part * size + offs, mask=inside, other=0)
    cube.store(c + offs, acc.to(DT), mask=inside)


# ---- host side ----

# Plain slotted classes (not frozen, which costs ~1 us per plan on the host path of every
# product); nothing changes a plan once made.
@dataclass(slots=True, eq=False)
class Operand:
    """One matrix operand as the kernel reads it: offset, (row, column) strides, the two batch
    strides and the comptime layout."""

    storage: Any
    offset: int
    strides: tuple[int, int]
    batch_strides: tuple[int, int]
    layout: str

    def args(self) -> list[Any]:
        return [self.storage, self.offset, *self.strides, *self.batch_strides]


@dataclass(slots=True, eq=False)
class MatmulPlan:
    """Everything one product's launches need but the tile sizes."""

    a: Operand
    b: Operand
    c: View
    c_first: int        # the index of this launch's first matrix in C
    m: int
    n: int
    k: int
    batch: int          # batch entries per launch (product of the collapsed inner axes)
    inner_batch: int    # size of the innermost collapsed batch axis
    dtype: DType        # of A and B
    target: str
    dense: bool         # one product of dense row-major A and B from their first elements
    ctx: Context        # for scratch memory (the partial sums of a product split along K)


def matrix_layout(rows: int, cols: int, s_row: int, s_col: int) -> str:
    """``"row"`` when columns are adjacent in memory, ``"col"`` when rows are, else ``"any"``.

    Example:
        >>> matrix_layout(4, 8, 8, 1), matrix_layout(4, 8, 1, 4), matrix_layout(4, 8, 16, 2)
        ('row', 'col', 'any')
    """
    if cols == 1 or s_col == 1:
        return "row"
    if rows == 1 or s_row == 1:
        return "col"
    return "any"


def accumulator(dtype: DType) -> DType:
    """The dtype products of ``dtype`` accumulate in."""
    if dtype.is_float:
        return cube.float64 if dtype.bits == 64 else cube.float32
    return cube.int64 if dtype.bits == 64 else cube.int32


def matmul(ctx: Context, a: View, b: View, out_dtype: DType) -> View:
    """``a @ b`` for ``a`` of shape ``(*batch, M, K)`` and ``b`` of ``(*batch, K, N)`` (one
    dtype; equal batch shapes, broadcast axes with stride 0), as a contiguous ``out_dtype``
    view of ``(*batch, M, N)``.

    Example:
        >>> c = matmul(ctx, a, b, cube.float32)  # doctest: +SKIP
    """
    if len(a.shape) == 2:
        # the common case, kept short: on a GPU a small product's time is its host path
        # (BENCHMARKS.md, run 41)
        m, n = a.shape[0], b.shape[1]
        c = ctx.new((m, n), out_dtype)
        if m and n:
            _launch(_plan(ctx, a, b, c, (a.offset, b.offset, 0), (0, 0), (0, 0), 1, 1))
        return c
    *batch_shape, m, k = a.shape
    n = b.shape[-1]
    c = ctx.new((*batch_shape, m, n), out_dtype)
    if c.numel == 0:
        return c
    dims, (a_bs, b_bs, c_bs) = collapse(batch_shape, a.strides[:-2], b.strides[:-2],
                                        c.strides[:-2])
    outer = max(0, len(dims) - 2)
    inner_dims = [1] * (2 - len(dims[outer:])) + dims[outer:]
    pad = [0] * (2 - len(dims[outer:]))
    for index in _indices(dims[:outer]):
        a_off = a.offset + sum(i * s for i, s in zip(index, a_bs))
        b_off = b.offset + sum(i * s for i, s in zip(index, b_bs))
        c_off = sum(i * s for i, s in zip(index, c_bs))
        _launch(_plan(ctx, a, b, c, (a_off, b_off, c_off // (m * n)), tuple(pad + a_bs[outer:]),
                      tuple(pad + b_bs[outer:]), inner_dims[0] * inner_dims[1], inner_dims[1]))
    return c


def _plan(ctx: Context, a: View, b: View, c: View, offsets: tuple[int, int, int],
          a_batch: tuple, b_batch: tuple, batch: int, inner_batch: int) -> MatmulPlan:
    """The launch of ``batch`` products; ``offsets`` are A's and B's element offsets and the
    index of the first matrix in C."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    sam, sak = a.strides[-2:]
    sbk, sbn = b.strides[-2:]
    dense = (batch == 1 and offsets == (0, 0, 0) and (sam, sak) == (k, 1)
             and (sbk, sbn) == (n, 1))
    return MatmulPlan(
        Operand(a.storage, offsets[0], (sam, sak), a_batch, matrix_layout(m, k, sam, sak)),
        Operand(b.storage, offsets[1], (sbk, sbn), b_batch, matrix_layout(k, n, sbk, sbn)),
        c, offsets[2], m, n, k, batch, inner_batch, a.dtype, ctx.target, dense, ctx)


# (target, dtypes, layouts, size buckets, generation of the settings) -> the launch
# keywords of the config chosen for it
_CHOSEN: dict[tuple, dict[str, Any]] = {}


def _launch(plan: MatmulPlan) -> None:
    """Run ``plan`` with the tiles chosen for its key: looked up, or chosen by the autotuner
    on the first call of a key."""
    key = (plan.target, plan.dtype, plan.c.dtype, plan.a.layout, plan.b.layout, plan.dense,
           pow2_anchor(plan.m), pow2_anchor(plan.n), pow2_anchor(plan.k),
           pow2_anchor(plan.batch), cube_config.generation())
    chosen = _CHOSEN.get(key)
    if chosen is not None:
        run(plan, **chosen)
        return
    layouts = f"{plan.a.layout}/{plan.b.layout}" + ("/dense" if plan.dense else "")
    tuned_matmul(plan, plan.a.storage, plan.b.storage, plan.c.storage, plan.m, plan.n, plan.k,
                 plan.batch, layouts, plan.target)
    _CHOSEN[key] = tuned_matmul.last_config.launch_kwargs()


def _tiles_for(configs: list[cube.Config], ctx: TuneContext) -> list[cube.Config]:
    plan: MatmulPlan = ctx.args["plan"]
    work = plan.m * plan.n * plan.k * plan.batch
    candidates = CONFIG_CLASSES[config_class(ctx.target, ctx.device, plan.dtype, plan.m, plan.n,
                                             work)]
    candidates = [cfg for cfg in candidates if _suits(plan, cfg.kwargs)]
    if ctx.target == "wgsl":  # a tile the adapter's workgroup memory cannot hold fails to compile
        room = workgroup_room(ctx.limits)
        candidates = [cfg for cfg in candidates
                      if workgroup_bytes(cfg.kwargs, plan.dtype) <= room] or candidates[:1]
    return candidates if work >= GPU_TUNE_FROM else candidates[:1]


def _suits(plan: MatmulPlan, tiles: dict[str, Any]) -> bool:
    # Persistent and split-K configs take dense plans only. A split also needs whole K slices
    # to split, and C with too few tiles to keep half the GPU busy (more would only cost the
    # partial sums' memory: 2 GB at 8192^3 in 8 parts).
    if "SPLIT_K" in tiles:
        count = cube.cdiv(plan.m, tiles["BLOCK_M"]) * cube.cdiv(plan.n, tiles["BLOCK_N"])
        return (plan.dense and k_parts(plan.k, tiles["SPLIT_K"], tiles["BLOCK_K"]) > 1
                and 2 * count <= cube.concurrent_cubes(plan.c.storage))
    return plan.dense or not tiles.get("PERSISTENT")


def k_parts(k: int, most: int, block_k: int) -> int:
    """Into how many equal parts of whole ``block_k`` slices a product splits ``k``: the
    largest count up to ``most`` that divides them (1: no split). Sizes sharing a tuned
    bucket may differ in this.

    Example:
        >>> k_parts(32768, 8, 64), k_parts(32000, 8, 64), k_parts(1000, 8, 64), k_parts(0, 8, 64)
        (8, 5, 1, 1)
    """
    slices = k // block_k
    if k % block_k or not slices:  # ragged, or K = 0
        return 1
    return next(parts for parts in range(min(most, slices), 0, -1) if slices % parts == 0)


@cube.autotune(configs=CONFIGS, key={"M": pow2_anchor, "N": pow2_anchor, "K": pow2_anchor,
                                     "batch": pow2_anchor, "layouts": None}, prune=_tiles_for)
def tuned_matmul(plan: MatmulPlan, a_storage: Any, b_storage: Any, c_storage: Any, M: int,
                 N: int, K: int, batch: int, layouts: str, target: str, **tiles: Any) -> None:
    """``run`` with the tiles tuned for this (M, N, K, batch) bucket, dtypes, operand layouts,
    target and device. The storages are arguments so that the tuner keys on their dtypes and
    checks every candidate's output; ``plan`` carries the rest.

    Example:
        >>> tuned_matmul(plan, a.storage, b.storage, c.storage, 64, 64, 64, 1, "row/row",
        ...              "cpu")  # doctest: +SKIP
    """
    run(plan, **tiles)


def run(plan: MatmulPlan, BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, GROUP_M: int,
        num_warps: int | None = None, num_stages: int | None = None, PERSISTENT: bool = False,
        C_DESCRIPTOR: bool = False, FLATTEN: bool = False, SPLIT_K: int = 1) -> None:
    """Launch ``plan`` with these tiles: the persistent kernel or K split in ``SPLIT_K``
    parts (dense plans only), the dense kernel, or the general one in batch chunks that fit
    grid axis 1."""
    m, n, k = plan.m, plan.n, plan.k
    even = m % BLOCK_M == 0 and n % BLOCK_N == 0 and k % BLOCK_K == 0
    tiles = cube.cdiv(m, BLOCK_M) * cube.cdiv(n, BLOCK_N)
    tiling = dict(ACC=accumulator(plan.dtype), DT=plan.c.dtype, BLOCK_M=BLOCK_M,
                  BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, target=plan.target)
    if num_warps is not None:
        tiling["num_warps"] = num_warps
    if num_stages is not None:
        tiling["num_stages"] = num_stages
    if (PERSISTENT or SPLIT_K > 1) and not plan.dense:
        raise ValueError("the persistent and split-K matmuls take dense row-major operands only")
    parts = k_parts(k, SPLIT_K, BLOCK_K) if SPLIT_K > 1 else 1
    if parts > 1:
        _run_split_k(plan, parts, tiles, tiling)
    elif PERSISTENT:
        cubes = min(tiles, cube.concurrent_cubes(plan.c.storage))
        matmul_persistent_kernel[(cubes,)](plan.a.storage, plan.b.storage, plan.c.storage, m, n,
                                           k, C_DESCRIPTOR=C_DESCRIPTOR, FLATTEN=FLATTEN,
                                           **tiling)
    elif plan.dense:
        matmul_dense_kernel[(tiles,)](plan.a.storage, plan.b.storage, plan.c.storage, m, n, k,
                                      EVEN=even, **tiling)
    else:
        for start in range(0, plan.batch, MAX_GRID_Y):
            matmul_kernel[(tiles, min(MAX_GRID_Y, plan.batch - start))](
                *plan.a.args(), *plan.b.args(), plan.c.storage, m, n, k, plan.inner_batch,
                start, plan.c_first, A_LAYOUT=plan.a.layout, B_LAYOUT=plan.b.layout, EVEN=even,
                **tiling)


def _run_split_k(plan: MatmulPlan, parts: int, tiles: int, tiling: dict[str, Any]) -> None:
    """K cut into ``parts`` equal parts of whole K slices: the general kernel computes each
    part's product as one batch entry of a float32 scratch (the parts are batch entries of A
    and B, offset along K), then ``sum_slices_kernel`` adds them up into C."""
    m, n, part_k = plan.m, plan.n, plan.k // parts
    scratch = plan.ctx.new((parts, m, n), cube.float32)
    matmul_kernel[(tiles, parts)](
        plan.a.storage, 0, plan.k, 1, 0, part_k, plan.b.storage, 0, n, 1, 0, part_k * n,
        scratch.storage, m, n, part_k, parts, 0, 0, A_LAYOUT="row", B_LAYOUT="row",
        EVEN=m % tiling["BLOCK_M"] == 0 and n % tiling["BLOCK_N"] == 0,
        **{**tiling, "DT": cube.float32})
    block = plan.ctx.block(m * n)
    sum_slices_kernel[(cube.cdiv(m * n, block),)](scratch.storage, plan.c.storage, m * n,
                                                   SLICES=parts, DT=plan.c.dtype, BLOCK=block,
                                                   target=plan.target)
