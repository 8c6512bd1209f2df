"""The cost of NumPy's NaN rule in float atomic max/min on a GPU.

    python bench/atomic_nan_probe.py

cubepy's float ``atomic_max``/``atomic_min`` make a slot NaN when a NaN arrives and keep a NaN
slot (``np.maximum.at``'s rule), which costs a plain load before the integer atomics that
``tl.atomic_max`` issues. 16M float32 values go into 1, 1,024 and 1M slots, through a
cubepy kernel and through the same kernel written with ``tl.atomic_max`` directly, timed in
turns (five ``do_bench`` medians each).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cubepy as cube  # noqa: E402

BLOCK = 1024


@cube.kernel
def cube_atomic_max(x, out, n, n_slots, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.atomic_max(out + offs % n_slots, cube.load(x + offs, mask=mask), mask=mask)


def main() -> int:
    import torch
    import triton
    import triton.language as tl
    import triton.testing
    from gpu_bench_triton import medians_in_turns

    @triton.jit
    def tl_atomic_max(x, out, n, n_slots, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.atomic_max(out + offs % n_slots, tl.load(x + offs, mask=mask), mask=mask)

    n = 1 << 24
    x = torch.randn(n, device="cuda")
    grid = (triton.cdiv(n, BLOCK),)
    print(f"{torch.cuda.get_device_name()}: {n} float32 values, atomic max")
    for n_slots in (1, 1024, 1 << 20):
        out = torch.full((n_slots,), -float("inf"), device="cuda")
        peer, ours = medians_in_turns(
            lambda fn: triton.testing.do_bench(fn, return_mode="median"),
            lambda out=out, k=n_slots: tl_atomic_max[grid](x, out, n, k, BLOCK=BLOCK),
            lambda out=out, k=n_slots: cube_atomic_max[grid](x, out, n, k, BLOCK=BLOCK))
        print(f"  {n_slots:>8} slots: tl.atomic_max {peer:.3f} ms, cubepy {ours:.3f} ms, "
              f"cubepy / tl {ours / peer:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
