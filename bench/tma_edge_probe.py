"""Which TMA block loads trap on this GPU (exploration for cube.make_tensor_descriptor).

Each case runs a hand-written Triton kernel in its own process (a trap ends the process's CUDA
context): a 16x16 float32 block read through ``tl.make_tensor_descriptor`` at a corner that may
lie off the array, from views whose column count does or does not make 16-byte rows.

    python bench/tma_edge_probe.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import sys, torch, triton, triton.language as tl
triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                             device="cuda"))

@triton.jit
def shifted(x, out, rows, cols, stride, r0, c0):
    desc = tl.make_tensor_descriptor(x, shape=[rows, cols], strides=[stride, 1],
                                     block_shape=[16, 16])
    v = desc.load([r0, c0])
    i = tl.arange(0, 16)
    tl.store(out + i[:, None] * 16 + i[None, :], v)

rows, cols, r0, c0 = (int(v) for v in sys.argv[1:])
stride = 32
x = torch.randn(rows, stride, device="cuda")
out = torch.empty(16, 16, device="cuda")
shifted[(1,)](x, out, rows, cols, stride, r0, c0)
torch.cuda.synchronize()
want = torch.zeros(16, 16, device="cuda")
for i in range(16):
    for j in range(16):
        if 0 <= r0 + i < rows and 0 <= c0 + j < cols:
            want[i, j] = x[r0 + i, c0 + j]
print("ok" if torch.equal(out, want) else "WRONG")
"""

CASES = [(37, 32, 0, 0), (37, 32, 30, 20), (37, 29, 0, 0), (37, 29, 30, 20), (37, 32, -7, 2),
         (37, 32, 3, -5), (37, 29, -7, 2)]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:  # @triton.jit needs its source in a file
        child = Path(folder) / "tma_edge_child.py"
        child.write_text(CHILD)
        for case in CASES:
            run_case(child, *case)


def run_case(child: Path, rows: int, cols: int, r0: int, c0: int) -> None:
    proc = subprocess.run([sys.executable, str(child), str(rows), str(cols), str(r0), str(c0)],
                          capture_output=True, text=True, timeout=120)
    last = (proc.stdout.strip().splitlines() or proc.stderr.strip().splitlines() or ["?"])[-1]
    print(f"rows {rows} cols {cols} corner ({r0}, {c0}): {last[:100]}", flush=True)


if __name__ == "__main__":
    main()
