"""Do TMA descriptors built on the host speed up the persistent matmul? (a probe, issue 5)

cubepy's persistent matmul (``examples/matmul.py``) builds its three TMA descriptors inside
the kernel (``cube.make_tensor_descriptor``, Triton's ``tl.make_tensor_descriptor``): every
program writes them to global scratch and fences before its first block copy. The Gluon probe
(``bench/gluon_probe.py``), 1.3 % faster at 4096^3, takes descriptors built on the host
instead, passed as kernel parameters. This probe isolates that one difference: the same
``triton.jit`` persistent kernel (128x256x64 tiles, 8 warps, 3 stages, C stored by TMA) with
device-built and with host-built descriptors (built on every call, as a launch would), each
timed in turns with cuBLAS beside cubepy's tuned matmul.

The answer (BENCHMARKS.md, probes 42-43): host-built descriptors gain 0.3-3 % over
device-built ones in this kernel at 4096^3, but head to head with cubepy's tuned kernel only
0.3-0.6 % (medians of 15 rounds, each round's ratio spread over +-5-10 %), and they lose 0.5 %
at 8192^3. They are not worth a descriptor parameter type in cubepy.

    python bench/host_descriptor_probe.py [--shapes 4096x4096x4096,...] [--repeat 2]
    python bench/host_descriptor_probe.py --head-to-head 15 --shapes 4096x4096x4096

``--head-to-head N``: cubepy's tuned matmul, the host-descriptor kernel (groups of 16,
flattened) and cuBLAS take turns N times on each shape; medians, and each round's ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.testing import do_bench
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BM, BN, BK, WARPS, STAGES = 128, 256, 64, 8, 3


@triton.jit
def _grouped(tile, num_m, num_n, GROUP: tl.constexpr):
    in_group = GROUP * num_n
    first_m = (tile // in_group) * GROUP
    size = tl.maximum(tl.minimum(num_m - first_m, GROUP), 1)
    return first_m + (tile % in_group) % size, (tile % in_group) // size


@triton.jit
def _tiles(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
           BLOCK_K: tl.constexpr, GROUP: tl.constexpr, FLAT: tl.constexpr):
    num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), num_m * num_n, tl.num_programs(0), flatten=FLAT):
        pm, pn = _grouped(tile, num_m, num_n, GROUP)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for kk in range(0, k_tiles):
            acc = tl.dot(a_desc.load([pm * BLOCK_M, kk * BLOCK_K]),
                         b_desc.load([kk * BLOCK_K, pn * BLOCK_N]), acc)
        c_desc.store([pm * BLOCK_M, pn * BLOCK_N], acc.to(tl.bfloat16))


@triton.jit
def mm_device_descriptors(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr, GROUP: tl.constexpr, FLAT: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    _tiles(a_desc, b_desc, c_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP, FLAT)


@triton.jit
def mm_host_descriptors(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP: tl.constexpr,
                        FLAT: tl.constexpr):
    _tiles(a_desc, b_desc, c_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP, FLAT)


def contenders(sms: int) -> dict:
    """name -> a function computing c = a @ b."""
    runs = {}
    for group, flat in ((16, True), (8, True), (16, False)):
        tag = f"g{group}{' flat' if flat else ''}"

        def device(a, b, c, group=group, flat=flat):
            m, k = a.shape
            n = b.shape[1]
            grid = (min(sms, triton.cdiv(m, BM) * triton.cdiv(n, BN)),)
            mm_device_descriptors[grid](a, b, c, m, n, k, BM, BN, BK, group, flat,
                                        num_warps=WARPS, num_stages=STAGES)

        def host(a, b, c, group=group, flat=flat):
            m, k = a.shape
            n = b.shape[1]
            grid = (min(sms, triton.cdiv(m, BM) * triton.cdiv(n, BN)),)
            mm_host_descriptors[grid](TensorDescriptor.from_tensor(a, [BM, BK]),
                                      TensorDescriptor.from_tensor(b, [BK, BN]),
                                      TensorDescriptor.from_tensor(c, [BM, BN]), m, n, k,
                                      BM, BN, BK, group, flat, num_warps=WARPS,
                                      num_stages=STAGES)
        runs[f"device descriptors {tag}"] = device
        runs[f"host descriptors {tag}"] = host
    from examples.matmul import matmul_tuned

    runs["cubepy matmul_tuned"] = lambda a, b, c: matmul_tuned(a, b, c, a.shape[0], b.shape[1],
                                                              a.shape[1])
    return runs


def probe(m: int, n: int, k: int, rounds: int) -> list[dict]:
    """Check each contender against torch on a NaN-filled C, then time it and cuBLAS in
    turns (median of ``rounds``)."""
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    ref = torch.matmul(a, b).float()
    rows = []
    for name, run in contenders(torch.cuda.get_device_properties(0).multi_processor_count).items():
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        try:
            run(a, b, c)
            torch.cuda.synchronize()
        except Exception as error:  # a variant this Triton cannot build is reported
            print(f"{m}x{n}x{k} {name}: failed: {type(error).__name__}: {error}"[:400])
            continue
        err = float((c.float() - ref).abs().max() / ref.abs().max())
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(do_bench(lambda run=run, c=c: run(a, b, c), warmup=25, rep=100))
            theirs.append(do_bench(lambda: torch.matmul(a, b), warmup=25, rep=100))
        t_ours, t_cublas = statistics.median(ours), statistics.median(theirs)
        rows.append({"shape": [m, n, k], "variant": name, "rel_err": err, "ms": t_ours,
                     "cublas_ms": t_cublas, "vs_cublas": t_cublas / t_ours})
        print(f"{m}x{n}x{k} {name:<28} err {err:.1e}  {t_ours * 1e3:6.1f} us  cuBLAS "
              f"{t_cublas * 1e3:6.1f} us  {t_cublas / t_ours:.3f}x", flush=True)
    return rows


def head_to_head(m: int, n: int, k: int, rounds: int) -> dict:
    """cubepy's tuned matmul, the host-descriptor kernel and cuBLAS, timed in turns."""
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    runs = contenders(torch.cuda.get_device_properties(0).multi_processor_count)
    fns = {"cubepy": lambda: runs["cubepy matmul_tuned"](a, b, c),
           "host descriptors": lambda: runs["host descriptors g16 flat"](a, b, c),
           "cuBLAS": lambda: torch.matmul(a, b)}
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(do_bench(fn, warmup=25, rep=100))
    medians = {name: statistics.median(values) for name, values in times.items()}
    host_vs_cubepy = [ours / host
                      for ours, host in zip(times["cubepy"], times["host descriptors"])]
    row = {"shape": [m, n, k], "rounds": rounds, "ms": medians, "per_round_ms": times,
           "cubepy_vs_cublas": medians["cuBLAS"] / medians["cubepy"],
           "host_vs_cublas": medians["cuBLAS"] / medians["host descriptors"],
           "host_speedup_over_cubepy": statistics.median(host_vs_cubepy)}
    print(f"{m}x{n}x{k}, {rounds} rounds in turns: cubepy {medians['cubepy'] * 1e3:.1f} us "
          f"({row['cubepy_vs_cublas']:.3f}x cuBLAS), host descriptors "
          f"{medians['host descriptors'] * 1e3:.1f} us ({row['host_vs_cublas']:.3f}x), "
          f"cuBLAS {medians['cuBLAS'] * 1e3:.1f} us; host descriptors / cubepy per round: "
          f"median {row['host_speedup_over_cubepy']:.3f}x, range "
          f"{min(host_vs_cubepy):.3f}-{max(host_vs_cubepy):.3f}x", flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192,8192x8192x1024")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=1, help="passes over every shape")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--head-to-head", type=int, default=0, metavar="N")
    args = parser.parse_args()
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    rows = []
    if args.head_to_head:
        for shape in args.shapes.split(","):
            m, n, k = (int(v) for v in shape.split("x"))
            rows.append(head_to_head(m, n, k, args.head_to_head))
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return 0
    for _ in range(args.repeat):
        for shape in args.shapes.split(","):
            m, n, k = (int(v) for v in shape.split("x"))
            rows += probe(m, n, k, args.rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
