"""Fused row softmax: Triton's second tutorial in cubepy.

    python examples/fused_softmax.py [--target cpu|cpu:debug|triton|wgsl] [--rows R --cols C]

One cube per row: the row is loaded once, its max, exponentials and sum are computed on the
tile, and the result is written once (NumPy reads and writes the matrix several times). The tile
is BLOCK = the next power of two >= the row width; the masked tail reads -inf, whose exponential
adds 0 to the sum. Inputs of 16-bit floats are computed in float32. Exits non-zero if the
result differs from NumPy (float64).
"""

from __future__ import annotations

import sys

import numpy as np

import cubepy as cube

try:
    from . import common
except ImportError:  # run as a script: python examples/fused_softmax.py
    import common


@cube.kernel
def softmax_kernel(x, out, n_cols, x_row_stride, out_row_stride, BLOCK: cube.Comptime[int]):
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    mask = cols < n_cols
    v = cube.load(x + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(cube.float32)
    e = cube.exp(v - cube.max(v, axis=0))
    # The store rounds to out's dtype.
    cube.store(out + row * out_row_stride + cols, e / cube.sum(e, axis=0), mask=mask)


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def softmax(x, out, *, target: str | None = None, **options) -> None:
    """Softmax of each row of a contiguous 2-D array ``x`` into ``out`` (same shape).

    ``options`` are launch options such as ``num_warps`` (Triton: 8 or 16 suit wide rows).
    """
    rows, cols = x.shape
    if target is not None:
        options["target"] = target
    softmax_kernel[(rows,)](x, out, cols, cols, cols, BLOCK=next_pow2(cols), **options)


def softmax_reference(x: np.ndarray) -> np.ndarray:
    """Row softmax in float64 NumPy."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check(target: str, rows: int = 1823, cols: int = 781, dtype: str = "float32",
          seed: int = 0) -> bool:
    """Softmax of a random matrix on ``target`` against NumPy (UnsupportedError when the target
    has no ``dtype``)."""
    rng = np.random.default_rng(seed)
    x_host = (rng.standard_normal((rows, cols)) * 3).astype(common.np_dtype(dtype))
    x = common.to_device(x_host, target)
    out = common.empty((rows, cols), dtype, like=x)
    softmax(x, out, target=target)
    # Results are at most 1: the output's rounding dominates for 16-bit floats.
    tol = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
    return common.report(f"softmax {rows}x{cols} {dtype} (tile {next_pow2(cols)})",
                         common.max_error(out, softmax_reference(x_host)), tol)


def main(argv: list[str] | None = None) -> int:
    def extra(parser):
        parser.add_argument("--rows", type=int)
        parser.add_argument("--cols", type=int, default=781)

    args = common.parse_args(__doc__.splitlines()[0], argv, extra)
    rows = args.rows or (256 if common.small(args.target) else 1823)
    print(f"fused_softmax on target {args.target!r}")
    ok = common.run_dtypes(["float32", "float16", "bfloat16"],
                           lambda dtype: check(args.target, rows, args.cols, dtype))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
