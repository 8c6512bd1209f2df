"""Does an atomic add's memory order cost on the H200? Raw Triton, no cubepy.

    python bench/atomic_sem_probe.py

Each program adds WALK tiles of (ROWS, COLS) float32 into an output of (ROWS * WALK, COLS),
walking it as the dK/dV kernel of attention's backward pass walks dQ; every program adds to
every row block, so the adds contend as there. Timed with sem="acq_rel" (Triton's default,
and cubepy's atomic order on this target), sem="relaxed", as one TMA reduction per tile (a
tensor descriptor's atomic_add), and a plain store of the same tiles (no atomics: the floor).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
import triton.testing


@triton.jit
def adds(out, WALK: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, ROWS)
    c = tl.arange(0, COLS)
    tile = (r[:, None] * COLS + c[None, :] + pid).to(tl.float32)
    for step in range(WALK):
        at = (step * ROWS + r)[:, None] * COLS + c[None, :]
        if MODE == 0:
            tl.atomic_add(out + at, tile, sem="acq_rel")
        elif MODE == 1:
            tl.atomic_add(out + at, tile, sem="relaxed")
        elif MODE == 2:
            desc = tl.make_tensor_descriptor(out, [WALK * ROWS, COLS], [COLS, 1], [ROWS, COLS])
            desc.atomic_add([step * ROWS, 0], tile)
        else:
            tl.store(out + at + pid * 0, tile)


def atomic_opcodes(ptx: str) -> list[str]:
    """The distinct atomic and fence instructions in ``ptx`` (after any predicate)."""
    return sorted({word for line in ptx.splitlines() for word in line.split()
                   if word.startswith(("red.", "atom.", "fence.", "cp.reduce"))})


def main() -> None:
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    programs, walk = 4 * 32 * 32, 64  # 32 key blocks x 128 heads, 64 query blocks of 64 rows
    for rows, cols in ((64, 64), (64, 128), (32, 128)):
        out = torch.zeros((rows * walk, cols), device="cuda", dtype=torch.float32)
        times = {}
        for mode, name in enumerate(("acq_rel", "relaxed", "tma", "store")):
            def launch(m=mode, out=out, rows=rows, cols=cols):
                adds[(programs,)](out, walk, rows, cols, m, num_warps=4)
            times[name] = triton.testing.do_bench(launch, return_mode="median")
        gbytes = programs * walk * rows * cols * 4 / 1e9
        print(f"tiles {rows}x{cols}: " + ", ".join(
            f"{k} {v:.3f} ms ({gbytes / v * 1e3:.0f} GB/s)" for k, v in times.items()))
        for mode, name in enumerate(("acq_rel", "relaxed", "tma")):
            kernel = adds.warmup(out, walk, rows, cols, mode, num_warps=4, grid=(1,))
            print(f"  {name} PTX: {atomic_opcodes(kernel.asm['ptx'])}")


if __name__ == "__main__":
    main()
