"""Tiled matrix multiplication: Triton's third tutorial in cubepy.

    python examples/matmul.py [--target cpu|cpu:debug|triton|wgsl] [--m M --n N --k K]

C (M, N) = activation(A (M, K) @ B (K, N)) for row-major matrices of float16, bfloat16 or
float32, accumulated in float32. Each cube computes one BLOCK_M x BLOCK_N tile of C, stepping
through K in BLOCK_K slices; ``cube.dot`` uses tensor cores where the target has them.

Cubes are numbered so that GROUP_M consecutive ones walk down a column of C tiles before moving
right ("super-grouping"): the cubes running at the same time then share rows of A and columns
of B, which stay in the L2 cache. Ragged M, N and K are handled by masks, left out of the K loop
when every tile is whole (EVEN). ``Config(persistent=True)`` runs the persistent variant
instead: one cube per GPU multiprocessor looping over C's tiles, reading A and B through tensor
descriptors (TMA block copies on NVIDIA sm_90+, Triton's tutorial 09 in cubepy), and with
``c_descriptor=True`` writing C through one as well; ``flatten=True`` pipelines its loop over
tiles and the K loop as one; ``split_k=True`` splits the tiles of the last, part-filled wave
along K between the cubes that would idle. Exits non-zero if a result differs from NumPy.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

import cubepy as cube
from cubepy.autotune import TuneContext
from cubepy.backends.wgsl.codegen_dot import staged_dot_bytes, workgroup_room

try:
    from . import common
except ImportError:  # run as a script: python examples/matmul.py
    import common

ACTIVATIONS = ("", "relu", "leaky_relu", "gelu")


@cube.func
def activate(acc, ACTIVATION: cube.Comptime[str]):
    # Folded at compile time: only the chosen activation is generated.
    if ACTIVATION == "relu":
        acc = cube.maximum(acc, 0.0)
    if ACTIVATION == "leaky_relu":
        acc = cube.where(acc >= 0.0, acc, 0.01 * acc)
    if ACTIVATION == "gelu":
        acc = acc * 0.5 * (1.0 + cube.erf(acc * 0.7071067811865476))
    return acc


@cube.func
def grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M: cube.Comptime[int]):
    # Tile number -> (pid_m, pid_n), grouped: GROUP_M tile rows share each tile column.
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (tile // num_pid_in_group) * GROUP_M
    # at least 1 (it is, for every tile there is): written so, the compiler can prove that
    # the persistent kernel's block corners are never negative, which TMA block loads need
    group_size_m = cube.maximum(cube.minimum(num_pid_m - first_pid_m, GROUP_M), 1)
    return (first_pid_m + (tile % num_pid_in_group) % group_size_m,
            (tile % num_pid_in_group) // group_size_m)


@cube.kernel
def matmul_kernel(a, b, c, M, N, K, stride_am, stride_bk, stride_cm,
                  BLOCK_M: cube.Comptime[int], BLOCK_N: cube.Comptime[int],
                  BLOCK_K: cube.Comptime[int], GROUP_M: cube.Comptime[int],
                  EVEN: cube.Comptime[bool], ACTIVATION: cube.Comptime[str]):
    num_pid_m = (M + BLOCK_M - 1) // BLOCK_M  # cube.cdiv, which kernels cannot call yet
    num_pid_n = (N + BLOCK_N - 1) // BLOCK_N
    pid_m, pid_n = grouped_tile(cube.cube_pos(0), num_pid_m, num_pid_n, GROUP_M)

    rm = pid_m * BLOCK_M + cube.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + cube.arange(0, BLOCK_N)
    rk = cube.arange(0, BLOCK_K)
    # Columns are contiguous (unit stride, not an argument): the compiler then knows that
    # consecutive columns are consecutive addresses and uses wide, asynchronous loads. (A column
    # stride passed as an argument equal to 1 hid that from Triton: 20x slower on an H200.)
    a_rows = rm[:, None] * stride_am
    b_cols = rn[None, :]
    acc = cube.zeros((BLOCK_M, BLOCK_N), cube.float32)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 + rk
        if EVEN:  # every tile is whole: no masks in the inner loop
            a_tile = cube.load(a + a_rows + ka[None, :])
            b_tile = cube.load(b + ka[:, None] * stride_bk + b_cols)
        else:
            a_tile = cube.load(a + a_rows + ka[None, :],
                               mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
            b_tile = cube.load(b + ka[:, None] * stride_bk + b_cols,
                               mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = cube.dot(a_tile, b_tile, acc)
    acc = activate(acc, ACTIVATION)
    # The store rounds the float32 accumulator to C's dtype.
    cube.store(c + rm[:, None] * stride_cm + rn[None, :], acc,
               mask=(rm[:, None] < M) & (rn[None, :] < N))


@cube.func
def tile_product(a_desc, b_desc, pid_m, pid_n, k_lo, k_hi, BLOCK_M: cube.Comptime[int],
                 BLOCK_N: cube.Comptime[int], BLOCK_K: cube.Comptime[int]):
    # One tile of A @ B over the K slices k_lo .. k_hi - 1, read through tensor descriptors.
    acc = cube.zeros((BLOCK_M, BLOCK_N), cube.float32)
    for kk in range(k_lo, k_hi):
        acc = cube.dot(a_desc.load([pid_m * BLOCK_M, kk * BLOCK_K]),
                       b_desc.load([kk * BLOCK_K, pid_n * BLOCK_N]), acc)
    return acc


@cube.func
def store_tile(c, c_desc, acc, row0, col0, M, N, ACTIVATION: cube.Comptime[str],
               C_DESCRIPTOR: cube.Comptime[bool]):
    # The epilogue: activation, then the tile of C at (row0, col0), rounded to C's dtype.
    acc = activate(acc, ACTIVATION)
    if C_DESCRIPTOR:  # 1-3 % faster where K is short (BENCHMARKS.md)
        c_desc.store([row0, col0], acc)
    else:
        rm = row0 + cube.arange(0, acc.shape[0])
        rn = col0 + cube.arange(0, acc.shape[1])
        cube.store(c + rm[:, None] * N + rn[None, :], acc,
                   mask=(rm[:, None] < M) & (rn[None, :] < N))


@cube.func
def whole_tiles(a_desc, b_desc, c, c_desc, tiles, M, N, K, BLOCK_M: cube.Comptime[int],
                BLOCK_N: cube.Comptime[int], BLOCK_K: cube.Comptime[int],
                GROUP_M: cube.Comptime[int], ACTIVATION: cube.Comptime[str],
                C_DESCRIPTOR: cube.Comptime[bool], FLATTEN: cube.Comptime[bool]):
    # C's tiles 0 .. tiles - 1, every cube_count-th one from cube_pos on, whole K each
    num_pid_m = (M + BLOCK_M - 1) // BLOCK_M
    num_pid_n = (N + BLOCK_N - 1) // BLOCK_N
    k_tiles = (K + BLOCK_K - 1) // BLOCK_K
    for tile in cube.range(cube.cube_pos(0), tiles, cube.cube_count(0), flatten=FLATTEN):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tile_product(a_desc, b_desc, pid_m, pid_n, 0, k_tiles, BLOCK_M, BLOCK_N, BLOCK_K)
        store_tile(c, c_desc, acc, pid_m * BLOCK_M, pid_n * BLOCK_N, M, N, ACTIVATION,
                   C_DESCRIPTOR)


@cube.kernel
def matmul_persistent_kernel(a, b, c, M, N, K, BLOCK_M: cube.Comptime[int],
                             BLOCK_N: cube.Comptime[int], BLOCK_K: cube.Comptime[int],
                             GROUP_M: cube.Comptime[int], ACTIVATION: cube.Comptime[str],
                             C_DESCRIPTOR: cube.Comptime[bool] = False,
                             FLATTEN: cube.Comptime[bool] = False):
    # Persistent: as many cubes as the GPU runs at once, each looping over C's tiles, so one
    # tile's epilogue overlaps the next one's loads. A and B are read through tensor
    # descriptors: TMA block copies on NVIDIA GPUs (sm_90+), masked tile loads elsewhere;
    # with C_DESCRIPTOR, C is written through one too. FLATTEN asks Triton to pipeline the
    # two loops as one, so that the next tile's loads start during this one's epilogue.
    a_desc = cube.make_tensor_descriptor(a, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = cube.make_tensor_descriptor(b, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = cube.make_tensor_descriptor(c, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    num_pid_m = (M + BLOCK_M - 1) // BLOCK_M
    num_pid_n = (N + BLOCK_N - 1) // BLOCK_N
    whole_tiles(a_desc, b_desc, c, c_desc, num_pid_m * num_pid_n, M, N, K, BLOCK_M, BLOCK_N,
                BLOCK_K, GROUP_M, ACTIVATION, C_DESCRIPTOR, FLATTEN)


@cube.func
def partial_offsets(slot, row, ROWS: cube.Comptime[int], BLOCK_M: cube.Comptime[int],
                    BLOCK_N: cube.Comptime[int]):
    # Rows row .. row + ROWS - 1 of partial tile `slot` (BLOCK_M x BLOCK_N, row-major)
    return ((slot * BLOCK_M + row + cube.arange(0, ROWS))[:, None] * BLOCK_N
            + cube.arange(0, BLOCK_N)[None, :])


@cube.kernel
def matmul_split_k_kernel(a, b, c, partials, arrivals, M, N, K, DP_TILES, SPLITS,
                          BLOCK_M: cube.Comptime[int], BLOCK_N: cube.Comptime[int],
                          BLOCK_K: cube.Comptime[int], GROUP_M: cube.Comptime[int],
                          ACTIVATION: cube.Comptime[str],
                          C_DESCRIPTOR: cube.Comptime[bool] = False,
                          FLATTEN: cube.Comptime[bool] = False,
                          SUM_ROWS: cube.Comptime[int] = 32):
    # Whole waves of tiles, then the last, part-filled wave split along K: the first DP_TILES
    # tiles run as in the persistent kernel; each remaining tile is cut into SPLITS parts of
    # its K slices, one part per cube, so that the cubes that would have idled through the
    # last wave share its work (C with fewer tiles than cubes is all split). Cube i takes
    # part i // tail of tile i % tail: the cubes running at once on one part read the same
    # slices of A and B, which the L2 cache then serves (an even share of slices per cube,
    # stream-K, lost that and ran at half speed: BENCHMARKS.md). Each part's float32 sum goes
    # to its slot of `partials`, then the cube counts itself in `arrivals` (acquire-release);
    # the last of a tile's parts adds them up, stores C and resets the count for the next
    # launch. Nothing waits for another cube, so any schedule of the cubes works.
    cube.static_assert(BLOCK_M % SUM_ROWS == 0, "SUM_ROWS must divide BLOCK_M")
    a_desc = cube.make_tensor_descriptor(a, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = cube.make_tensor_descriptor(b, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = cube.make_tensor_descriptor(c, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    band_desc = cube.make_tensor_descriptor(c, [M, N], [N, 1], [SUM_ROWS, BLOCK_N])
    num_pid_m = (M + BLOCK_M - 1) // BLOCK_M
    num_pid_n = (N + BLOCK_N - 1) // BLOCK_N
    k_tiles = (K + BLOCK_K - 1) // BLOCK_K
    whole_tiles(a_desc, b_desc, c, c_desc, DP_TILES, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K,
                GROUP_M, ACTIVATION, C_DESCRIPTOR, FLATTEN)

    me = cube.cube_pos(0)
    tail = num_pid_m * num_pid_n - DP_TILES
    if me < tail * SPLITS:
        # cube.maximum(.., 0): provably non-negative corners, which TMA copies need
        part = cube.maximum(me // tail, 0)
        split_tile = me % tail
        pid_m, pid_n = grouped_tile(cube.maximum(DP_TILES + split_tile, 0), num_pid_m,
                                    num_pid_n, GROUP_M)
        acc = tile_product(a_desc, b_desc, pid_m, pid_n,
                           cube.maximum(part * k_tiles // SPLITS, 0),
                           (part + 1) * k_tiles // SPLITS, BLOCK_M, BLOCK_N, BLOCK_K)
        cube.store(partials + partial_offsets(me, 0, BLOCK_M, BLOCK_M, BLOCK_N), acc)
        if cube.atomic_add(arrivals + split_tile, 1) == SPLITS - 1:
            # Summed and stored in bands of rows: a second whole tile of float32 beside the
            # first spilled registers (255 per thread where the kernel needs 162 so).
            for row in cube.static_range(0, BLOCK_M, SUM_ROWS):
                band = cube.zeros((SUM_ROWS, BLOCK_N), cube.float32)
                for other in range(0, SPLITS):
                    band += cube.load(partials + partial_offsets(
                        other * tail + split_tile, row, SUM_ROWS, BLOCK_M, BLOCK_N))
                store_tile(c, band_desc, band, pid_m * BLOCK_M + row, pid_n * BLOCK_N, M, N,
                           ACTIVATION, C_DESCRIPTOR)
            cube.atomic_xchg(arrivals + split_tile, 0)


@dataclass(frozen=True)
class Config:
    """Tile sizes and Triton launch options of one matmul launch."""

    block_m: int = 64
    block_n: int = 64
    block_k: int = 32
    group_m: int = 8
    num_warps: int | None = None  # None: the target's default
    num_stages: int | None = None
    persistent: bool = False  # matmul_persistent_kernel: tensor descriptors, a loop over tiles
    c_descriptor: bool = False  # persistent only: C written through a tensor descriptor too
    flatten: bool = False  # persistent only: the tile and K loops pipelined as one
    split_k: bool = False  # persistent only: the last, part-filled wave of tiles split along K

    def __str__(self) -> str:
        text = f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m}"
        if self.num_warps is not None:
            text += f" w{self.num_warps}"
        text += f" s{self.num_stages}" if self.num_stages is not None else ""
        text += " persistent" if self.persistent else ""
        text += " c-descriptor" if self.c_descriptor else ""
        text += " flat" if self.flatten else ""
        return text + (" split-k" if self.split_k else "")

    def options(self) -> dict:
        """The launch options this config sets (Triton's num_warps and num_stages)."""
        return {k: v for k, v in (("num_warps", self.num_warps), ("num_stages", self.num_stages))
                if v is not None}


def matmul(a, b, c, *, config: Config = Config(), activation: str = "",
           target: str | None = None, **options) -> None:
    """``c = activation(a @ b)`` for contiguous row-major 2-D arrays on one device.

    ``options`` go to the launch (e.g. ``allow_tf32=True`` on Triton for float32 inputs, or
    ``workgroup_size`` on wgsl).
    """
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or tuple(c.shape) != (m, n):
        raise ValueError(f"shapes do not fit: {a.shape} @ {b.shape} -> {c.shape}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation {activation!r}: choose one of {ACTIVATIONS}")
    if target is not None:
        options["target"] = target
    tiles = cube.cdiv(m, config.block_m) * cube.cdiv(n, config.block_n)
    if config.persistent:
        cubes = cube.concurrent_cubes(a)
        launch = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
                      GROUP_M=config.group_m, ACTIVATION=activation,
                      C_DESCRIPTOR=config.c_descriptor, FLATTEN=config.flatten,
                      **config.options(), **options)
        tail = tiles % cubes  # all of C where it has fewer tiles than cubes
        splits = min(cubes // tail, cube.cdiv(k, config.block_k)) \
            if config.split_k and tail else 0
        if splits >= 2:
            partials, arrivals = _split_k_workspace(a, tail * splits, tail, config, target)
            matmul_split_k_kernel[(cubes,)](a, b, c, partials, arrivals, m, n, k, tiles - tail,
                                            splits, SUM_ROWS=min(32, config.block_m), **launch)
        else:  # whole waves, or a last wave too full to split
            matmul_persistent_kernel[(min(tiles, cubes),)](a, b, c, m, n, k, **launch)
        return
    if config.c_descriptor or config.flatten or config.split_k:
        raise ValueError(f"config {config}: c_descriptor, flatten and split_k need "
                         "persistent=True")
    grid = (tiles,)
    even = m % config.block_m == 0 and n % config.block_n == 0 and k % config.block_k == 0
    matmul_kernel[grid](
        a, b, c, m, n, k, k, n, n,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
        GROUP_M=config.group_m, EVEN=even, ACTIVATION=activation,
        **config.options(), **options)


_WORKSPACES: dict = {}  # (device, stream) -> (partials, arrivals) of split-K launches


def _split_k_workspace(array, parts: int, tiles: int, config: Config, target: str | None):
    """Float32 room for ``parts`` partial C tiles, and one arrival count per split tile (zero;
    each launch leaves them zero again). On a GPU they are kept per device and stream, so
    that launches on one stream reuse them and launches on two streams never share them."""
    device = getattr(array, "device", None)
    if target == "wgsl" or hasattr(array, "__cube_device_array__"):
        raise cube.UnsupportedError(
            "split_k is not supported on wgsl: WGSL atomics are relaxed, so one workgroup's "
            "partial tile is not guaranteed to be visible to the workgroup that adds it up",
            hint="use a Config without split_k=True on wgsl")
    floats = parts * config.block_m * config.block_n
    if getattr(device, "type", None) == "cuda":  # torch
        import torch

        key = ("torch", device.index, torch.cuda.current_stream(device).cuda_stream)
        make = lambda size, dtype: torch.zeros(size, dtype=dtype, device=device)  # noqa: E731
        types = (torch.float32, torch.int32)
    elif type(array).__module__.startswith("cupy"):
        import cupy

        key = ("cupy", array.device.id, cupy.cuda.get_current_stream().ptr)

        def make(size, dtype):
            with cupy.cuda.Device(array.device.id):
                return cupy.zeros(size, dtype=dtype)
        types = (cupy.float32, cupy.int32)
    else:  # NumPy arrays: the CPU target, or Triton's interpreter
        return np.empty(floats, np.float32), np.zeros(tiles, np.int32)
    partials, arrivals = _WORKSPACES.get(key, (None, None))
    if partials is None or partials.shape[0] < floats or arrivals.shape[0] < tiles:
        partials, arrivals = make(floats, types[0]), make(tiles, types[1])
        _WORKSPACES[key] = partials, arrivals
    return partials, arrivals


# Candidates for the autotuner on GPUs (H200-class): large tiles for big shapes, 16-row tiles
# for skinny ones. Each config's entries become the keyword arguments of matmul_tuned.
TUNING_CONFIGS = [
    cube.Config(BM=bm, BN=bn, BK=bk, GROUP=g, num_warps=w, num_stages=s, PERSISTENT=p,
                C_DESC=d, FLAT=f, SPLIT_K=sk)
    for bm, bn, bk, g, w, s, p, d, f, sk in [
        (128, 256, 64, 8, 8, 3, False, False, False, False),
        (128, 256, 64, 16, 8, 3, False, False, False, False),
        (256, 128, 64, 8, 8, 3, False, False, False, False),
        (128, 256, 32, 8, 8, 5, False, False, False, False),
        (128, 128, 64, 8, 4, 4, False, False, False, False),
        (16, 128, 128, 1, 4, 4, False, False, False, False),
        (16, 64, 512, 1, 4, 3, False, False, False, False),
        # persistent with TMA block loads: 4-8 % faster on big products (BENCHMARKS.md)
        (128, 256, 64, 8, 8, 3, True, False, False, False),
        (128, 256, 64, 16, 8, 3, True, False, False, False),
        (128, 256, 32, 8, 8, 5, True, False, False, False),
        # and C stored by TMA too: 1-3 % faster where K is short
        (128, 256, 64, 8, 8, 3, True, True, False, False),
        (128, 256, 64, 16, 8, 3, True, True, False, False),
        (128, 256, 32, 8, 8, 5, True, True, False, False),
        # and the two loops pipelined as one: up to 7 % where K is short (bench/tma_probe.py)
        (128, 256, 64, 8, 8, 3, True, True, True, False),
        (128, 256, 64, 16, 8, 3, True, True, True, False),
        (128, 256, 32, 8, 8, 5, True, True, True, False),
        # and the last, part-filled wave of tiles split along K: for few tiles and long K
        (128, 256, 64, 8, 8, 3, True, True, False, True)]]


# Candidates on wgsl, whose dot is a register-blocked SIMT product through workgroup memory
# (16-48 KiB per workgroup): burn's tilings, measured on an H200's Vulkan adapter
# (BENCHMARKS.md, run 78). num_warps=None lets the backend size the workgroup (256 here).
# The first four stage 16.3-24.5 KiB: on an adapter with WebGPU's least, 16 KiB, the prune
# drops them, so that 32x32x32 is tuned alone and is the default with CUBEPY_AUTOTUNE=0.
WGSL_TUNING_CONFIGS = [
    cube.Config(BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=w)
    for bm, bn, bk, w in [(128, 128, 16, None), (64, 128, 32, None), (64, 64, 32, None),
                          (64, 64, 32, 4), (32, 32, 32, None)]]


def configs_for_target(configs: list[cube.Config], ctx: TuneContext) -> list[cube.Config]:
    """The tuner's prune: the tensor-core list on Triton (and the CPU); on wgsl the SIMT
    tilings whose staged ``dot`` fits the adapter's workgroup memory."""
    if ctx.target != "wgsl":
        return [cfg for cfg in configs if cfg not in WGSL_TUNING_CONFIGS]
    room, element_bytes = workgroup_room(ctx.limits), np.dtype(ctx.args["a"].dtype).itemsize
    return [cfg for cfg in configs if cfg in WGSL_TUNING_CONFIGS and staged_dot_bytes(
        cfg.kwargs["BM"], cfg.kwargs["BN"], cfg.kwargs["BK"], element_bytes) <= room]


@cube.autotune(configs=TUNING_CONFIGS + WGSL_TUNING_CONFIGS, key=["M", "N", "K"],
               prune=configs_for_target)
def matmul_tuned(a, b, c, M, N, K, BM, BN, BK, GROUP, num_warps=None, num_stages=None,
                 PERSISTENT=False, C_DESC=False, FLAT=False, SPLIT_K=False, target=None):
    """``c = a @ b`` with tile sizes and launch options tuned per (M, N, K) bucket, dtype and
    device, among ``TUNING_CONFIGS`` on Triton and the CPU and ``WGSL_TUNING_CONFIGS`` on
    wgsl; results ship in autotune_cache/ for the devices we tuned on.

    Example:
        >>> matmul_tuned(a, b, c, *a.shape, b.shape[1])  # doctest: +SKIP
    """
    config = Config(BM, BN, BK, GROUP, num_warps, num_stages, PERSISTENT, C_DESC, FLAT, SPLIT_K)
    matmul(a, b, c, config=config, target=target)


def matmul_reference(a: np.ndarray, b: np.ndarray, activation: str = "") -> np.ndarray:
    """``activation(a @ b)`` in float64 NumPy."""
    acc = a.astype(np.float64) @ b.astype(np.float64)
    if activation == "relu":
        return np.maximum(acc, 0.0)
    if activation == "leaky_relu":
        return np.where(acc >= 0.0, acc, 0.01 * acc)
    if activation == "gelu":
        erf = np.vectorize(math.erf)
        return acc * 0.5 * (1.0 + erf(acc / math.sqrt(2.0)))
    return acc


def product_tolerance(dtype: str, k: int) -> float:
    """The largest error of a product of inputs in [-1, 1] over ``k`` terms stored as
    ``dtype``: products are exact in float32 and sums of k of them are off by about sqrt(k)
    ulps; then C is rounded to its dtype (half an ulp of values up to about 2 sqrt(k))."""
    ulp = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}[dtype]
    return 1e-6 * math.sqrt(k) + ulp * max(1.0, math.sqrt(k))


def check(target: str, m: int = 300, n: int = 200, k: int = 150, dtype: str = "float16",
          activation: str = "", config: Config = Config(), seed: int = 0) -> bool:
    """A random product on ``target`` against NumPy in float64 (UnsupportedError when the target
    has no ``dtype``)."""
    rng = np.random.default_rng(seed)
    a_host = rng.uniform(-1, 1, (m, k)).astype(common.np_dtype(dtype))
    b_host = rng.uniform(-1, 1, (k, n)).astype(common.np_dtype(dtype))
    a, b = common.to_device(a_host, target), common.to_device(b_host, target)
    c = common.empty((m, n), dtype, like=a)
    matmul(a, b, c, config=config, activation=activation, target=target)
    want = matmul_reference(a_host, b_host, activation)
    tol = product_tolerance(dtype, k)
    name = f"matmul {m}x{n}x{k} {dtype}{' + ' + activation if activation else ''} ({config})"
    return common.report(name, common.max_error(c, want), tol)


def main(argv: list[str] | None = None) -> int:
    def extra(parser):
        parser.add_argument("--m", type=int)
        parser.add_argument("--n", type=int)
        parser.add_argument("--k", type=int)

    args = common.parse_args(__doc__.splitlines()[0], argv, extra)
    small = common.small(args.target)
    m = args.m or (130 if small else 515)
    n = args.n or (100 if small else 387)
    k = args.k or (70 if small else 300)
    # Big tiles suit GPUs and the CPU target (one BLAS call per tile pair); small ones keep
    # interpreters quick. Both leave ragged edges on M, N and K.
    config = Config(32, 32, 32, 4) if small else Config(64, 64, 32, 8)
    print(f"matmul on target {args.target!r}")
    ok = common.run_dtypes(["float16", "bfloat16", "float32"],
                           lambda dtype: check(args.target, m, n, k, dtype, config=config))
    ok &= check(args.target, m, n, k, "float32", activation="leaky_relu", config=config)
    ok &= check(args.target, m, n, k, "float32", activation="gelu", config=config)
    # Whole tiles only: the kernel's mask-free (EVEN) loop.
    ok &= check(args.target, 4 * config.block_m, 2 * config.block_n, 3 * config.block_k,
                "float32", activation="relu", config=config)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
