"""How far plain Triton gets past cuBLAS with TMA on this GPU (exploration for issue 5).

Hand-written ``triton.jit`` bf16 matmuls, not cubepy: the pointer-tile kernel that cubepy
generates today, the same with TMA tensor descriptors, and a persistent TMA kernel with and
without warp specialization; each against ``torch.matmul`` in the same run. If TMA does not
beat cuBLAS here, no cubepy lowering onto it will.

    python bench/tma_probe.py
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def shape_and_dtype_runs(shapes: str, dtypes: str):
    """(m, n, k, torch dtype) for each of the probes' ``--shapes 4096x4096x4096,...`` and
    ``--dtypes bf16,fp16``, shapes outermost."""
    by_name = {"bf16": torch.bfloat16, "fp16": torch.float16}
    for shape in shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        for name in dtypes.split(","):
            yield m, n, k, by_name[name]


@triton.jit
def tile_of(tile, num_m, num_n, GROUP: tl.constexpr):
    in_group = GROUP * num_n
    first_m = (tile // in_group) * GROUP
    size = tl.minimum(num_m - first_m, GROUP)
    return first_m + (tile % in_group) % size, (tile % in_group) // size


@triton.jit
def _pointer_tile(a, b, c, N, K, pm, pn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # C's tile (pm, pn) from pointer-tile loads, K slice by K slice (inlined by Triton)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(x, y, acc)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


@triton.jit
def mm_pointers(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GROUP: tl.constexpr):
    pm, pn = tile_of(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    _pointer_tile(a, b, c, N, K, pm, pn, BM, BN, BK)


@triton.jit
def mm_pointers_persistent(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr, GROUP: tl.constexpr, SMS: tl.constexpr,
                           FLAT: tl.constexpr):
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), num_m * num_n, SMS, flatten=FLAT):
        pm, pn = tile_of(tile, num_m, num_n, GROUP)
        _pointer_tile(a, b, c, N, K, pm, pn, BM, BN, BK)


@triton.jit
def _tma_tile(a_desc, b_desc, c_desc, K, pm, pn, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr):
    # C's tile (pm, pn) from TMA block loads (inlined by Triton)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([k, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tl.bfloat16))


@triton.jit
def mm_tma(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           GROUP: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tile_of(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    _tma_tile(a_desc, b_desc, c_desc, K, pm, pn, BM, BN, BK)


@triton.jit
def mm_tma_persistent(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      GROUP: tl.constexpr, SMS: tl.constexpr, WS: tl.constexpr,
                      FLAT: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), num_m * num_n, SMS, flatten=FLAT,
                         warp_specialize=WS):
        pm, pn = tile_of(tile, num_m, num_n, GROUP)
        _tma_tile(a_desc, b_desc, c_desc, K, pm, pn, BM, BN, BK)


def probe_shape(m: int, n: int, k: int, sms: int) -> None:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    expected = torch.matmul(a, b).float()
    cublas = triton.testing.do_bench(lambda: torch.matmul(a, b))
    print(f"{m}x{n}x{k}: cuBLAS {cublas * 1e3:.1f} us", flush=True)

    def tiles(bm: int, bn: int) -> int:
        return triton.cdiv(m, bm) * triton.cdiv(n, bn)

    cases = []
    for bm, bn, bk, w, s in [(128, 256, 64, 8, 3), (128, 256, 32, 8, 5)]:
        def pointers(bm=bm, bn=bn, bk=bk, w=w, s=s):
            mm_pointers[(tiles(bm, bn),)](a, b, c, m, n, k, bm, bn, bk, 8, num_warps=w,
                                          num_stages=s)
        cases.append((f"pointers {bm}x{bn}x{bk} w{w} s{s}", pointers))
        for flat in (False, True):
            def pointers_persistent(bm=bm, bn=bn, bk=bk, w=w, s=s, flat=flat):
                grid = (min(sms, tiles(bm, bn)),)
                mm_pointers_persistent[grid](a, b, c, m, n, k, bm, bn, bk, 8, sms, flat,
                                             num_warps=w, num_stages=s)
            cases.append((f"pointers persistent{' flat' if flat else ''} {bm}x{bn}x{bk} "
                          f"w{w} s{s}", pointers_persistent))
            for ws in (False, True):
                def persistent(bm=bm, bn=bn, bk=bk, w=w, s=s, ws=ws, flat=flat):
                    grid = (min(sms, tiles(bm, bn)),)
                    mm_tma_persistent[grid](a, b, c, m, n, k, bm, bn, bk, 8, sms, ws, flat,
                                            num_warps=w, num_stages=s)
                cases.append((f"tma persistent{' flat' if flat else ''}{' ws' if ws else ''} "
                              f"{bm}x{bn}x{bk} w{w} s{s}", persistent))
    for name, fn in cases:
        try:
            c.zero_()
            fn()
            err = float((c.float() - expected).abs().max() / expected.abs().max())
            ms = triton.testing.do_bench(fn)
            print(f"  {name:<40} {ms * 1e3:8.1f} us {2 * m * n * k / ms / 1e9:5.0f} TFLOP/s "
                  f"{cublas / ms:.3f}x cuBLAS  err {err:.1e}", flush=True)
        except Exception as exc:  # a variant this Triton cannot build: reported
            print(f"  {name:<40} failed: {str(exc).splitlines()[0][:120]}", flush=True)


def main() -> None:
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024)]:
        probe_shape(m, n, k, sms)


if __name__ == "__main__":
    main()
