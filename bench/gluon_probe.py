"""A hand-written Gluon matmul for the H200, timed against cuBLAS: a probe, not part of cubepy.

Why this file exists: every `triton.language` form of cubepy's tiled matmul has measured
0.97-0.995x cuBLAS at 4096^3 bf16 (BENCHMARKS.md, runs 7-23). cuBLAS's kernel there has a
producer warp feeding two consumer warpgroups. Gluon (Triton's lower-level language) can
express that directly. Before any change to cubepy's design, this probe answers one question:
does such a kernel, written by hand, actually beat cuBLAS on this device?

The kernels: persistent (one program per SM, tiles in grouped order) and warp-specialized
(one producer warp issues TMA loads into a ring of shared-memory stages; consumers run
asynchronous wgmma on them and release each stage once the next wgmma is issued). "coop"
(`matmul_ws`): the default partition of 8 warps, two warpgroups, shares one tile, stored by
TMA (whole, in two halves, or from registers). "pingpong" (`matmul_pingpong`): two consumer
warpgroups with a tile each, taking turns at the main loop.

The answer (BENCHMARKS.md, probes 24-29): coop ties cuBLAS at 4096^3 (0.989-1.013x, mean
0.999x), about 1.3 % ahead of cubepy's tuned kernel; ping-pong is slower.

    python bench/gluon_probe.py                      # on the H200: check, then time
    python bench/gluon_probe.py --compile-only       # anywhere: compile for sm_90, no GPU
    python bench/gluon_probe.py --variant "coop 128x256x64 s3" --with-cubepy --repeat 3

Runs on Triton 3.6 (the H200) and 3.9 (here).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

# Triton 3.9 renamed the TMA copies (the old names raise); the H200's 3.6 has only the old ones.
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


@gluon.jit
def tile_counts(M, N, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr):
    # C's tiles along M and N, and the K slices of one tile
    return gl.cdiv(M, BM), gl.cdiv(N, BN), gl.cdiv(K, BK)


@gluon.jit
def tile_coords(tile, tiles_m, tiles_n, GROUP_M: gl.constexpr):
    # Grouped order: GROUP_M row-tiles share each column of B while it sits in L2.
    per_group = GROUP_M * tiles_n
    group = tile // per_group
    first_m = group * GROUP_M
    rows = gl.minimum(tiles_m - first_m, GROUP_M)
    in_group = tile % per_group
    return first_m + in_group % rows, in_group // rows


@gluon.jit
def _producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
              BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
              STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    tiles_m, tiles_n, k_steps = tile_counts(M, N, K, BM, BN, BK)
    stage_bytes: gl.constexpr = (BM * BK + BK * BN) * 2
    count = 0
    for tile in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        pm, pn = tile_coords(tile, tiles_m, tiles_n, GROUP_M)
        for k in range(k_steps):
            s = count % STAGES
            # A fresh barrier counts as having finished the phase before phase 0, so the first
            # pass over the ring waits on parity 1 and goes straight through.
            mbarrier.wait(empty.index(s), ((count // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(s), stage_bytes)
            _tma_load(a_desc, [pm * BM, k * BK], ready.index(s), a_bufs.index(s))
            _tma_load(b_desc, [k * BK, pn * BN], ready.index(s), b_bufs.index(s))
            count += 1


@gluon.jit
def release_stage(empty, s):
    mbarrier.arrive(empty.index(s))


@gluon.jit
def tile_product(a_bufs, b_bufs, ready, empty, acc, count, k_steps, STAGES: gl.constexpr,
                 RELEASE: gl.constexpr = release_stage):
    # acc += one tile's K slices, read from the ring from its count-th stage on; each stage
    # is released (RELEASE(empty, stage)) as soon as the wgmma after it is issued.
    for k in range(k_steps):
        s = count % STAGES
        mbarrier.wait(ready.index(s), (count // STAGES) & 1)
        acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s), acc, is_async=True)
        # Keep one wgmma in flight: once this returns, the previous stage has been read.
        acc = warpgroup_mma_wait(1, deps=[acc])
        if k > 0:
            RELEASE(empty, (count + STAGES - 1) % STAGES)
        count += 1
    acc = warpgroup_mma_wait(0, deps=[acc])
    RELEASE(empty, (count + STAGES - 1) % STAGES)
    return acc, count


@gluon.jit
def store_tile(c_desc, c_smem, value, row, col):
    # value -> C[row:, col:] by TMA, through c_smem once the previous store has left it
    tma.store_wait(0)
    c_smem.store(value)
    fence_async_shared()
    _tma_store(c_desc, [row, col], c_smem)


@gluon.jit
def _consumer(c_desc, c_ptr, a_bufs, b_bufs, ready, empty, c_smem, M, N, K,
              BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
              STAGES: gl.constexpr, GROUP_M: gl.constexpr, TMA_STORE: gl.constexpr,
              SPLIT_STORE: gl.constexpr):
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[8, 1], instr_shape=[16, BN, 16])
    tiles_m, tiles_n, k_steps = tile_counts(M, N, K, BM, BN, BK)
    count = 0
    for tile in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        pm, pn = tile_coords(tile, tiles_m, tiles_n, GROUP_M)
        acc = gl.zeros((BM, BN), gl.float32, acc_layout)
        acc, count = tile_product(a_bufs, b_bufs, ready, empty, acc, count, k_steps, STAGES)
        out = acc.to(gl.bfloat16)
        if TMA_STORE:
            if SPLIT_STORE:
                # Two halves through one half-size buffer, so that a fourth stage fits.
                halves = out.reshape([BM, 2, BN // 2]).permute((0, 2, 1))
                left, right = gl.split(halves)
                store_tile(c_desc, c_smem, left, pm * BM, pn * BN)
                store_tile(c_desc, c_smem, right, pm * BM, pn * BN + BN // 2)
            else:
                store_tile(c_desc, c_smem, out, pm * BM, pn * BN)
        else:
            rows = pm * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, acc_layout))
            cols = pn * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
            offsets = gl.expand_dims(rows, 1) * N + gl.expand_dims(cols, 0)
            mask = (gl.expand_dims(rows, 1) < M) & (gl.expand_dims(cols, 0) < N)
            gl.store(c_ptr + offsets, out, mask=mask)
    if TMA_STORE:
        tma.store_wait(0)


@gluon.jit
def matmul_ws(a_desc, b_desc, c_desc, c_ptr, M, N, K,
              BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
              STAGES: gl.constexpr, GROUP_M: gl.constexpr, TMA_STORE: gl.constexpr,
              SPLIT_STORE: gl.constexpr, PRODUCER_REGS: gl.constexpr):
    a_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BM, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BK, BN], b_desc.layout)
    if TMA_STORE:
        c_cols: gl.constexpr = BN // 2 if SPLIT_STORE else BN
        c_smem = gl.allocate_shared_memory(gl.bfloat16, [BM, c_cols], c_desc.layout)
    else:
        c_smem = a_bufs  # unused: the register epilogue stores straight to global memory
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    fence_async_shared()
    gl.warp_specialize(
        [
            (_consumer, (c_desc, c_ptr, a_bufs, b_bufs, ready, empty, c_smem, M, N, K,
                         BM, BN, BK, STAGES, GROUP_M, TMA_STORE, SPLIT_STORE)),
            (_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                         BM, BN, BK, STAGES, GROUP_M)),
        ],
        [1],
        [PRODUCER_REGS],
    )


@gluon.jit
def _pingpong_consumer(c_desc, a_bufs, b_bufs, ready, empty, turn, c_bufs, M, N, K,
                       BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                       STAGES: gl.constexpr, GROUP_M: gl.constexpr, WHICH: gl.constexpr):
    # One warpgroup; it takes every other tile of this program's share, so that its epilogue
    # runs while the other warpgroup's wgmma keeps the tensor cores busy. The two take turns
    # at the main loop (the `turn` barriers): besides ordering the tensor-core work, that keeps
    # each one within a phase of the ring's barriers, which parity waits need.
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16])
    tiles_m, tiles_n, k_steps = tile_counts(M, N, K, BM, BN, BK)
    c_smem = c_bufs.index(WHICH)
    local = WHICH  # this tile's place in the producer's order
    for tile in range(gl.program_id(0) + WHICH * gl.num_programs(0), tiles_m * tiles_n,
                      2 * gl.num_programs(0)):
        pm, pn = tile_coords(tile, tiles_m, tiles_n, GROUP_M)
        acc = gl.zeros((BM, BN), gl.float32, acc_layout)
        count = local * k_steps
        # Wait for the other warpgroup's main loop of the tile before this one (none for the
        # first: a fresh barrier passes a wait on parity 1).
        mbarrier.wait(turn.index(WHICH), ((local // 2) & 1) ^ (1 - WHICH))
        acc, count = tile_product(a_bufs, b_bufs, ready, empty, acc, count, k_steps, STAGES)
        mbarrier.arrive(turn.index(1 - WHICH))
        store_tile(c_desc, c_smem, acc.to(gl.bfloat16), pm * BM, pn * BN)
        local += 2
    tma.store_wait(0)


@gluon.jit
def matmul_pingpong(a_desc, b_desc, c_desc, c_ptr, M, N, K,
                    BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                    STAGES: gl.constexpr, GROUP_M: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                    PRODUCER_REGS: gl.constexpr):
    a_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BM, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BK, BN], b_desc.layout)
    c_bufs = gl.allocate_shared_memory(gl.bfloat16, [2, BM, BN], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    mbarrier.init(turn.index(0), count=1)
    mbarrier.init(turn.index(1), count=1)
    fence_async_shared()
    gl.warp_specialize(
        [
            (_pingpong_consumer, (c_desc, a_bufs, b_bufs, ready, empty, turn, c_bufs, M, N, K,
                                  BM, BN, BK, STAGES, GROUP_M, 0)),
            (_pingpong_consumer, (c_desc, a_bufs, b_bufs, ready, empty, turn, c_bufs, M, N, K,
                                  BM, BN, BK, STAGES, GROUP_M, 1)),
            (_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                         BM, BN, BK, STAGES, GROUP_M)),
        ],
        [4, 1],
        [CONSUMER_REGS, PRODUCER_REGS],
    )


@dataclass(frozen=True)
class Variant:
    """One kernel and its compile-time settings; `pingpong` tiles are one warpgroup's."""

    pingpong: bool
    bm: int
    bn: int
    bk: int
    stages: int
    group_m: int = 8
    split_store: bool = False
    producer_regs: int = 40
    consumer_regs: int = 232

    @property
    def kernel(self):
        return matmul_pingpong if self.pingpong else matmul_ws

    @property
    def num_warps(self) -> int:
        return 4 if self.pingpong else 8

    def constexprs(self) -> dict:
        common = {"BM": self.bm, "BN": self.bn, "BK": self.bk, "STAGES": self.stages,
                  "GROUP_M": self.group_m}
        if self.pingpong:
            return {**common, "CONSUMER_REGS": self.consumer_regs,
                    "PRODUCER_REGS": self.producer_regs}
        return {**common, "TMA_STORE": True, "SPLIT_STORE": self.split_store,
                "PRODUCER_REGS": self.producer_regs}


VARIANTS = {
    "coop 128x256x64 s3": Variant(False, 128, 256, 64, 3),
    "coop 128x256x64 s3 split-store": Variant(False, 128, 256, 64, 3, split_store=True),
    "coop 128x256x64 s4 split-store r24": Variant(False, 128, 256, 64, 4, split_store=True,
                                                  producer_regs=24),
    "pingpong 128x128x64 s5": Variant(True, 128, 128, 64, 5),
    "pingpong 128x128x64 s4": Variant(True, 128, 128, 64, 4),
    "pingpong 128x128x64 s5 r216": Variant(True, 128, 128, 64, 5, consumer_regs=216),
    "pingpong 64x256x64 s4": Variant(True, 64, 256, 64, 4),
    "pingpong 128x128x64 s5 g16": Variant(True, 128, 128, 64, 5, group_m=16),
}


def _descriptors(a, b, c, variant: Variant):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    bm, bn, bk = variant.bm, variant.bn, variant.bk
    c_block = [bm, bn // 2] if variant.split_store else [bm, bn]

    def describe(t, block):
        layout = gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16)
        return TensorDescriptor.from_tensor(t, block, layout)

    return describe(a, [bm, bk]), describe(b, [bk, bn]), describe(c, c_block)


def launch(a, b, c, variant: Variant, num_sms):
    a_desc, b_desc, c_desc = _descriptors(a, b, c, variant)
    m, k = a.shape
    n = b.shape[1]
    tiles = -(-m // variant.bm) * -(-n // variant.bn)
    per_program = 2 if variant.pingpong else 1
    grid = (min(num_sms, -(-tiles // per_program)),)
    variant.kernel[grid](a_desc, b_desc, c_desc, c, m, n, k, **variant.constexprs(),
                         num_warps=variant.num_warps)


def _type_string(desc) -> str:
    """A host descriptor's type in a kernel signature (Triton 3.9 has it as ``__mangle__``)."""
    if hasattr(desc, "__mangle__"):
        return desc.__mangle__()
    block = ",".join(map(str, desc.block_shape))
    return f"tensordesc<bf16[{block}],{desc.layout!r}>"


def compile_sm90(kernel, params: dict, constexprs: dict, **options):
    """Compile a Gluon kernel for sm_90 with no GPU. params: each run-time parameter's type
    string, in the kernel's order; constexprs: the compile-time ones' values, after them."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    signature = {**params, **{key: "constexpr" for key in constexprs}}
    index = {key: i for i, key in enumerate(signature)}
    values = {(index[key],): value for key, value in constexprs.items()}
    return triton.compile(GluonASTSource(kernel, signature, values),
                          target=GPUTarget("cuda", 90, 32), options=options)


def compile_only() -> None:
    """Compile every variant for sm_90 with no GPU; print each one's wgmma and setmaxnreg count."""
    import torch

    a = torch.empty((4096, 4096), dtype=torch.bfloat16)
    for name, variant in VARIANTS.items():
        descs = _descriptors(a, a, a, variant)
        params = {"a_desc": _type_string(descs[0]), "b_desc": _type_string(descs[1]),
                  "c_desc": _type_string(descs[2]), "c_ptr": "*bf16",
                  "M": "i32", "N": "i32", "K": "i32"}
        compiled = compile_sm90(variant.kernel, params, variant.constexprs(),
                                num_warps=variant.num_warps)
        ptx = compiled.asm["ptx"]
        regs = re.findall(r"setmaxnreg\.(\w+)\.sync\.aligned\.u32\s+(\d+)", ptx)
        print(f"{name}: {ptx.count('wgmma.mma_async')} wgmma, setmaxnreg {regs}, "
              f"shared {compiled.metadata.shared} B", flush=True)


def _contenders(num_sms: int, with_cubepy: bool) -> dict:
    """name -> a function computing c = a @ b: each variant, and cubepy's tuned matmul."""
    contenders = {}
    for name, variant in VARIANTS.items():
        def run_variant(a, b, c, variant=variant):
            launch(a, b, c, variant, num_sms)
        contenders[name] = run_variant
    if with_cubepy:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from examples.matmul import matmul_tuned

        def run_cubepy(a, b, c):
            matmul_tuned(a, b, c, a.shape[0], b.shape[1], a.shape[1])
        contenders["cubepy matmul_tuned"] = run_cubepy
    return contenders


def time_on_gpu(shapes, rounds: int, with_cubepy: bool = False,
                contenders=None) -> list[dict]:
    """Check each contender against torch, then time it and cuBLAS in turns (median of
    rounds). contenders(num_sms) -> {name: run(a, b, c)}; by default this file's variants."""
    import torch
    from triton.testing import do_bench

    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    chosen = contenders(num_sms) if contenders else _contenders(num_sms, with_cubepy)
    results = []
    for m, n, k in shapes:
        torch.manual_seed(0)
        a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
        b = torch.randn((k, n), device="cuda", dtype=torch.bfloat16)
        ref = torch.matmul(a, b)
        for name, run in chosen.items():
            # NaN first: an output left unwritten cannot pass for another contender's result
            # that the allocator handed back
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            try:
                run(a, b, c)
                torch.cuda.synchronize()
            except Exception as error:  # a variant that fails to compile is reported, not fatal
                message = f"{m}x{n}x{k} {name}: failed: {type(error).__name__}: {error}"
                print(message[:600], flush=True)
                results.append({"shape": [m, n, k], "variant": name, "error": str(error)[:300]})
                continue
            err = (c.float() - ref.float()).abs().max().item()
            scale = ref.float().abs().max().item()
            ok = err <= 2e-2 * scale  # False for NaN
            if rounds == 0:  # checking only
                results.append({"shape": [m, n, k], "variant": name, "ok": ok, "max_err": err})
                print(f"{m}x{n}x{k} {name}: ok={ok} err={err:.3g}", flush=True)
                continue
            ours, theirs = [], []

            def run_ours(a=a, b=b, c=c, run=run):
                run(a, b, c)

            def run_cublas(a=a, b=b):
                torch.matmul(a, b)

            for _ in range(rounds):  # the two take turns, so that both see the same clocks
                ours.append(do_bench(run_ours, warmup=25, rep=100))
                theirs.append(do_bench(run_cublas, warmup=25, rep=100))
            ours.sort()
            theirs.sort()
            t_ours, t_cublas = ours[rounds // 2], theirs[rounds // 2]
            row = {"shape": [m, n, k], "variant": name, "ok": ok, "max_err": err,
                   "ms": t_ours, "cublas_ms": t_cublas, "vs_cublas": t_cublas / t_ours,
                   "tflops": 2 * m * n * k / t_ours / 1e9}
            results.append(row)
            print(f"{m}x{n}x{k} {name}: ok={ok} err={err:.3g} {t_ours * 1e3:.1f} us, "
                  f"cuBLAS {t_cublas * 1e3:.1f} us, {row['vs_cublas']:.3f}x, "
                  f"{row['tflops']:.0f} TFLOP/s", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--rounds", type=int, default=5, help="0: check the results only")
    parser.add_argument("--json", help="write the timings here")
    parser.add_argument("--only", default="", help="the variants whose names contain this")
    parser.add_argument("--variant", help="this variant alone (a crash then spares the others)")
    parser.add_argument("--list", action="store_true", help="print the variants' names")
    parser.add_argument("--with-cubepy", action="store_true",
                        help="time cubepy's tuned matmul too (examples/matmul.py)")
    parser.add_argument("--shapes", default="4096,4096,4096;8192,8192,8192",
                        help="M,N,K;M,N,K... (N and K multiples of 8, for TMA's alignment)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time everything this many times over (each pass in turns)")
    args = parser.parse_args(argv)
    for name in [name for name in VARIANTS if args.only not in name]:
        del VARIANTS[name]
    if args.variant:
        for name in [name for name in VARIANTS if name != args.variant]:
            del VARIANTS[name]
    if args.list:
        print("\n".join(VARIANTS))
        return 0
    if args.compile_only:
        compile_only()
        return 0
    shapes = [tuple(int(size) for size in shape.split(",")) for shape in args.shapes.split(";")]
    results = []
    for _ in range(args.repeat):
        results += time_on_gpu(shapes, args.rounds, args.with_cubepy)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
