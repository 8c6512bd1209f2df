"""A Gluon matmul run by clusters of two CTAs with TMA multicast, timed against cuBLAS: a probe.

Why this file exists: cuBLAS's bf16 kernel at 4096^3 on the H200 runs clusters of two CTAs
that share each tile of B by TMA multicast; every kernel without multicast measured at most
parity with it (BENCHMARKS.md: runs 7-29, the hand-written Gluon kernel of
``bench/gluon_probe.py`` included). Multicast needs Triton >= 3.7 (the H200's own Triton 3.6
lacks it), so this probe answers: with a newer Triton, does a multicast kernel pass cuBLAS?

The kernel is ``gluon_probe``'s "coop" kernel (persistent, one producer warp feeding two
consumer warpgroups through a ring of shared-memory stages, C stored by TMA) written for a
cluster: a program is two CTAs computing a 256-row tile of C, 128 rows each. Each CTA loads
its own slice of A; the first CTA loads the tile's slice of B once and multicasts it into both
CTAs' shared memory. So before it reuses a stage, the first CTA's producer waits until the
consumers of *both* CTAs have released it (``empty_b``, a barrier of the pair that lives in
the first CTA and counts one arrival from each); each producer also waits for its own
consumers before loading its A (``empty_a``).

    python bench/multicast_probe.py --compile-only    # anywhere with Triton >= 3.7: build for sm_90
    python bench/multicast_probe.py [--rounds 5] [--shapes 4096,4096,4096;8192,8192,8192]

On the H200 it runs under a Triton 3.9 brought along (``bench/h200_triton39_run.sh``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gluon_probe import (  # noqa: E402
    compile_sm90,
    store_tile,
    tile_coords,
    tile_counts,
    tile_product,
    time_on_gpu,
)
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
)

# How a block of the cluster's tile lies across the pair: the CTA rank's bit steps to the next
# block of rows (or columns), or to the same block (each CTA holds the whole of it).
SPLIT_ROWS = [[1, 0]]
SPLIT_COLS = [[0, 1]]
SHARED = [[0, 0]]


@gluon.constexpr_function
def _accumulator_layout(bn, share_a):
    """C's registers: two warpgroups per CTA, C's columns (A shared) or rows split by CTA."""
    return gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[8, 1], instr_shape=[16, bn // 2 if share_a else bn, 16],
        cga_layout=SPLIT_COLS if share_a else SPLIT_ROWS)


@gluon.jit
def _mc_producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty_own, empty_shared, M, N, K,
                 BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                 STAGES: gl.constexpr, GROUP_M: gl.constexpr, SHARE_A: gl.constexpr):
    tiles_m, tiles_n, k_steps = tile_counts(M, N, K, BM, BN, BK)
    count = 0
    for tile in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        pm, pn = tile_coords(tile, tiles_m, tiles_n, GROUP_M)
        for k in range(k_steps):
            s = count % STAGES
            phase = ((count // STAGES) & 1) ^ 1  # a fresh barrier passes a wait on parity 1
            mbarrier.wait(empty_own.index(s), phase)
            # Only the first CTA waits here (it issues the multicast into both CTAs' stage s).
            mbarrier.wait(empty_shared.index(s), phase)
            mbarrier.expect(ready.index(s), a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
            tma.async_load(a_desc, [pm * BM, k * BK], ready.index(s), a_bufs.index(s),
                           multicast=SHARE_A)
            tma.async_load(b_desc, [k * BK, pn * BN], ready.index(s), b_bufs.index(s),
                           multicast=not SHARE_A)
            count += 1


@gluon.jit
def _release_both(empties, s):
    # empties: this CTA's barriers and the pair's (which only the first CTA waits on)
    mbarrier.arrive(empties[0].index(s))
    mbarrier.arrive(empties[1].index(s))


@gluon.jit
def _mc_consumer(c_desc, a_bufs, b_bufs, ready, empty_own, empty_shared, c_smem, M, N, K,
                 BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                 STAGES: gl.constexpr, GROUP_M: gl.constexpr, SHARE_A: gl.constexpr,
                 SPLIT_STORE: gl.constexpr):
    acc_layout: gl.constexpr = _accumulator_layout(BN, SHARE_A)
    tiles_m, tiles_n, k_steps = tile_counts(M, N, K, BM, BN, BK)
    count = 0
    for tile in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        pm, pn = tile_coords(tile, tiles_m, tiles_n, GROUP_M)
        acc = gl.zeros((BM, BN), gl.float32, acc_layout)
        acc, count = tile_product(a_bufs, b_bufs, ready, (empty_own, empty_shared), acc, count,
                                  k_steps, STAGES, _release_both)
        out = acc.to(gl.bfloat16)
        if SPLIT_STORE:  # two halves through one half-size buffer, so that a fourth stage fits
            left, right = gl.split(out.reshape([BM, 2, BN // 2]).permute((0, 2, 1)))
            store_tile(c_desc, c_smem, left, pm * BM, pn * BN)
            store_tile(c_desc, c_smem, right, pm * BM, pn * BN + BN // 2)
        else:
            store_tile(c_desc, c_smem, out, pm * BM, pn * BN)
    tma.store_wait(0)


@gluon.jit
def matmul_multicast(a_desc, b_desc, c_desc, M, N, K,
                     BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                     STAGES: gl.constexpr, GROUP_M: gl.constexpr, PRODUCER_REGS: gl.constexpr,
                     SHARE_A: gl.constexpr, SPLIT_STORE: gl.constexpr):
    a_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BM, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BK, BN], b_desc.layout)
    c_smem = gl.allocate_shared_memory(gl.bfloat16, c_desc.block_shape, c_desc.layout)
    ready = mbarrier.allocate_mbarrier(batch=STAGES)
    empty_own = mbarrier.allocate_mbarrier(batch=STAGES)
    empty_shared = mbarrier.allocate_mbarrier(batch=STAGES, two_ctas=True)
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty_own.index(s), count=1)
        mbarrier.init(empty_shared.index(s), count=1)  # one arrival from each CTA of the pair
    fence_async_shared()
    gl.warp_specialize(
        [
            (_mc_consumer, (c_desc, a_bufs, b_bufs, ready, empty_own, empty_shared, c_smem,
                            M, N, K, BM, BN, BK, STAGES, GROUP_M, SHARE_A, SPLIT_STORE)),
            (_mc_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty_own, empty_shared,
                            M, N, K, BM, BN, BK, STAGES, GROUP_M, SHARE_A)),
        ],
        [1],
        [PRODUCER_REGS],
    )


@dataclass(frozen=True)
class Variant:
    """Tile sizes are the cluster's. share_a: the pair shares A's rows (C's columns split
    between the CTAs, as cuBLAS's 1x2 clusters do); else B's columns (C's rows split)."""

    bm: int = 256
    bn: int = 256
    bk: int = 64
    stages: int = 3
    group_m: int = 8
    producer_regs: int = 40
    share_a: bool = False
    split_store: bool = False  # only with B shared: the halves must each lie on both CTAs
    clusters: int = 0  # programs launched; 0: as many as can run at once (the driver says)

    def layouts(self) -> tuple:
        """The cga layouts of A, B and C."""
        if self.share_a:
            return SHARED, SPLIT_COLS, SPLIT_COLS
        return SPLIT_ROWS, SHARED, SPLIT_ROWS

    def constexprs(self) -> dict:
        return {"BM": self.bm, "BN": self.bn, "BK": self.bk, "STAGES": self.stages,
                "GROUP_M": self.group_m, "PRODUCER_REGS": self.producer_regs,
                "SHARE_A": self.share_a, "SPLIT_STORE": self.split_store}


VARIANTS = {
    "mc2 256x256x64 s3": Variant(),
    "mc2 256x256x64 s4 split-store": Variant(stages=4, split_store=True),
    "mc2 256x256x64 s4 split-store r24": Variant(stages=4, split_store=True, producer_regs=24),
    "mcA 256x256x64 s3": Variant(share_a=True),
    **{f"mc2 256x256x64 s3 c{n}": Variant(clusters=n) for n in (66, 62, 60)},
    **{f"mc2 256x256x64 s4 split-store r24 c{n}": Variant(stages=4, split_store=True,
                                                          producer_regs=24, clusters=n)
       for n in (66, 62)},
}


def descriptors(a, b, c, variant: Variant):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    def describe(t, block, cga):
        layout = gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16, cga_layout=cga)
        return TensorDescriptor.from_tensor(t, block, layout)

    a_cga, b_cga, c_cga = variant.layouts()
    c_block = [variant.bm, variant.bn // 2 if variant.split_store else variant.bn]
    return (describe(a, [variant.bm, variant.bk], a_cga),
            describe(b, [variant.bk, variant.bn], b_cga),
            describe(c, c_block, c_cga))


def max_active_clusters(compiled) -> int:
    """How many clusters of two CTAs of this kernel the GPU runs at once (the CUDA driver's
    cuOccupancyMaxActiveClusters): the persistent grid's size. A cluster needs two free
    multiprocessors in one GPC, so this can be less than half the multiprocessors."""
    import ctypes

    class LaunchAttribute(ctypes.Structure):  # CUlaunchAttribute: id, padding, 64-byte value
        _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_char * 4),
                    ("value", ctypes.c_uint * 16)]

    class LaunchConfig(ctypes.Structure):  # CUlaunchConfig
        _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                    ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                    ("attrs", ctypes.POINTER(LaunchAttribute)), ("num_attrs", ctypes.c_uint)]

    cluster = LaunchAttribute(id=4)  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    cluster.value[0], cluster.value[1], cluster.value[2] = 2, 1, 1
    config = LaunchConfig(grid=(2, 1, 1), block=(32 * compiled.metadata.num_warps, 1, 1),
                          shared=compiled.metadata.shared, attrs=ctypes.pointer(cluster),
                          num_attrs=1)
    count = ctypes.c_int(0)
    status = ctypes.CDLL("libcuda.so.1").cuOccupancyMaxActiveClusters(
        ctypes.byref(count), ctypes.c_void_p(compiled.function), ctypes.byref(config))
    if status != 0:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters failed: CUresult {status}")
    return count.value


_ACTIVE_CLUSTERS: dict = {}  # variant -> the driver's count, asked once


def launch(a, b, c, variant: Variant, num_sms: int) -> None:
    m, k = a.shape
    n = b.shape[1]
    tiles = -(-m // variant.bm) * -(-n // variant.bn)
    clusters = variant.clusters or _ACTIVE_CLUSTERS.get(variant, num_sms // 2)
    compiled = matmul_multicast[(min(clusters, tiles),)](
        *descriptors(a, b, c, variant), m, n, k, **variant.constexprs(), num_warps=8,
        num_ctas=2)
    if not variant.clusters and variant not in _ACTIVE_CLUSTERS:
        _ACTIVE_CLUSTERS[variant] = max_active_clusters(compiled)
        print(f"  the driver runs {_ACTIVE_CLUSTERS[variant]} clusters of this kernel at once",
              flush=True)


def compile_only() -> None:
    """Build every variant for sm_90 with no GPU; show its multicast copies and cluster size."""
    import torch

    a = torch.empty((4096, 4096), dtype=torch.bfloat16)
    for name, variant in VARIANTS.items():
        descs = descriptors(a, a, a, variant)
        params = {"a_desc": descs[0].__mangle__(), "b_desc": descs[1].__mangle__(),
                  "c_desc": descs[2].__mangle__(), "M": "i32", "N": "i32", "K": "i32"}
        compiled = compile_sm90(matmul_multicast, params, variant.constexprs(), num_warps=8,
                                num_ctas=2)
        ptx = compiled.asm["ptx"]
        cluster = re.findall(r"reqnctapercluster (\d+)", ptx)
        print(f"{name}: {ptx.count('wgmma.mma_async')} wgmma, "
              f"{len(re.findall(r'multicast::cluster', ptx))} multicast copies, "
              f"cluster {cluster}, "
              f"shared {compiled.metadata.shared} B", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--rounds", type=int, default=5, help="0: check the results only")
    parser.add_argument("--shapes", default="4096,4096,4096;8192,8192,8192")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", help="write the timings here")
    args = parser.parse_args(argv)
    if args.compile_only:
        compile_only()
        return 0

    def contenders(num_sms: int) -> dict:
        return {name: (lambda a, b, c, v=variant: launch(a, b, c, v, num_sms))
                for name, variant in VARIANTS.items()}

    shapes = [tuple(int(size) for size in shape.split(",")) for shape in args.shapes.split(";")]
    results = []
    for _ in range(args.repeat):
        results += time_on_gpu(shapes, args.rounds, contenders=contenders)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
