"""Which persistent-TMA matmul variants beat cuBLAS at 4096³ on this GPU (issues 3 and 5).

Hand-written ``triton.jit`` kernels, not cubepy: the persistent TMA kernel that cubepy emits
(pointer-tile store of C), the same with a TMA store of C, with the store split in two halves
(the epilogue then needs half the shared memory, which frees room for a fourth pipeline stage),
with warp specialization, over several tile shapes and group sizes. Every variant is timed once;
the four fastest are then timed again in turns with ``torch.matmul`` (five rounds of
``do_bench`` medians each), since single timings differ by a few percent run to run.

    python bench/epilogue_probe.py [--shapes 4096x4096x4096,...] [--dtypes bf16,fp16]
                                   [--clusters | --ws4]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from tma_probe import shape_and_dtype_runs, tile_of  # bench/ is on the path here


@triton.jit
def mm_persistent(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP: tl.constexpr, SMS: tl.constexpr, WS: tl.constexpr,
                  STORE: tl.constexpr):
    # STORE: 0 pointer-tile store (what cubepy emits), 1 one TMA store, 2 two TMA half stores
    a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    if STORE == 2:
        c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1],
                                           block_shape=[BM, BN // 2])
    else:
        c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1],
                                           block_shape=[BM, BN])
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), num_m * num_n, SMS, warp_specialize=WS):
        pm, pn = tile_of(tile, num_m, num_n, GROUP)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([k, pn * BN]), acc)
        if STORE == 0:
            rm = pm * BM + tl.arange(0, BM)
            rn = pn * BN + tl.arange(0, BN)
            tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty),
                     mask=(rm[:, None] < M) & (rn[None, :] < N))
        elif STORE == 1:
            c_desc.store([pm * BM, pn * BN], acc.to(c.dtype.element_ty))
        else:
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([pm * BM, pn * BN], left.to(c.dtype.element_ty))
            c_desc.store([pm * BM, pn * BN + BN // 2], right.to(c.dtype.element_ty))


@dataclass(frozen=True)
class Variant:
    bm: int
    bn: int
    bk: int
    group: int
    warps: int
    stages: int
    ws: bool
    store: int
    ctas: int = 1  # Triton's num_ctas: a cluster of this many cubes shares each tile

    def __str__(self) -> str:
        store = ("ptr store", "tma store", "tma 2 halves")[self.store]
        return (f"{self.bm}x{self.bn}x{self.bk} g{self.group} w{self.warps} s{self.stages}"
                f"{' ws' if self.ws else ''} {store}"
                f"{f' ctas{self.ctas}' if self.ctas > 1 else ''}")


def cluster_variants() -> list[Variant]:
    return [Variant(bm, bn, 64, 8, 8, stages, False, store, 2)
            for bm, bn in [(128, 256), (256, 128)] for stages in (3, 4) for store in (0, 1)]


def variants() -> list[Variant]:
    found = []
    for bm, bn, bk, warps, stage_counts, stores in [
            (128, 256, 64, 8, (3, 4), (0, 1, 2)), (256, 128, 64, 8, (3, 4), (0, 2)),
            (128, 128, 64, 4, (4, 5), (0, 2))]:
        for stages in stage_counts:
            for store in stores:
                for ws in (False, True):
                    found.append(Variant(bm, bn, bk, 8, warps, stages, ws, store))
    for group in (4, 16):  # group sizes on the usual best tile
        for stages in (3, 4):
            for store in (0, 2):
                found.append(Variant(128, 256, 64, group, 8, stages, False, store))
    return found


def ws4_variants() -> list[Variant]:
    # Triton 3.6 warp-specializes a Hopper loop only with num_warps=4 (with 8 it silently
    # does not: no setmaxnreg in the PTX). It then splits a 128-row tile between two consumer
    # warpgroups of its own, beside a producer: twelve warps in all. (C stored in two halves
    # fails its warp-specialization pass, so that store is left out.)
    return [Variant(bm, bn, 64, group, 4, stages, True, store)
            for bm, bn in [(128, 256), (256, 128)] for group in (8, 16)
            for stages, store in [(3, 0), (3, 1), (4, 0)]]


def probe(m: int, n: int, k: int, dtype: torch.dtype, sms: int, kind: str) -> None:
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    expected = torch.matmul(a, b).float()
    cublas = triton.testing.do_bench(lambda: torch.matmul(a, b))
    flops = 2 * m * n * k
    print(f"{m}x{n}x{k} {dtype}: cuBLAS {cublas * 1e3:.1f} us "
          f"{flops / cublas / 1e9:.0f} TFLOP/s", flush=True)
    timed = []
    for v in {"clusters": cluster_variants, "ws4": ws4_variants, "": variants}[kind]():
        tiles = triton.cdiv(m, v.bm) * triton.cdiv(n, v.bn)

        programs = sms // v.ctas  # a program of a cluster occupies v.ctas multiprocessors

        def launch(v=v, tiles=tiles, programs=programs):
            mm_persistent[(min(programs, tiles),)](a, b, c, m, n, k, v.bm, v.bn, v.bk, v.group,
                                                   programs, v.ws, v.store, num_warps=v.warps,
                                                   num_stages=v.stages, num_ctas=v.ctas)
        try:
            c.zero_()
            launch()
            err = float((c.float() - expected).abs().max() / expected.abs().max())
            ms = triton.testing.do_bench(launch)
        except Exception as exc:  # a variant this Triton cannot build: reported
            print(f"  {str(v):<40} failed: {str(exc).splitlines()[0][:100]}", flush=True)
            continue
        bad = "  WRONG" if err > 1e-2 else ""
        print(f"  {str(v):<40} {ms * 1e3:7.1f} us {flops / ms / 1e9:5.0f} TFLOP/s "
              f"{cublas / ms:.3f}x{bad}", flush=True)
        if not bad:
            timed.append((ms, v, launch))
    timed.sort(key=lambda t: t[0])
    print("  in turns with cuBLAS (5 rounds, medians):", flush=True)
    for _, v, launch in timed[:4]:
        ours, peer = [], []
        for _ in range(5):
            ours.append(triton.testing.do_bench(launch))
            peer.append(triton.testing.do_bench(lambda: torch.matmul(a, b)))
        mine, theirs = statistics.median(ours), statistics.median(peer)
        print(f"  {str(v):<40} {mine * 1e3:7.1f} us vs {theirs * 1e3:7.1f} us "
              f"{theirs / mine:.3f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    parser.add_argument("--dtypes", default="bf16,fp16")
    parser.add_argument("--clusters", action="store_true",
                        help="only variants run by clusters of two cubes (num_ctas=2)")
    parser.add_argument("--ws4", action="store_true",
                        help="only warp-specialized 128x256 variants with num_warps=4")
    args = parser.parse_args()
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k, dtype in shape_and_dtype_runs(args.shapes, args.dtypes):
        probe(m, n, k, dtype, sms, "clusters" if args.clusters else "ws4" if args.ws4 else "")


if __name__ == "__main__":
    main()
