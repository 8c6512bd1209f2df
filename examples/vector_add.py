"""Vector addition: Triton's first tutorial in cubepy.

    python examples/vector_add.py [--target cpu|cpu:debug|triton|wgsl] [--n 98432]

Each cube adds BLOCK consecutive elements; the mask keeps the last cube inside the arrays.
Exits non-zero if the result differs from NumPy.
"""

from __future__ import annotations

import sys

import numpy as np

import cubepy as cube

try:
    from . import common
except ImportError:  # run as a script: python examples/vector_add.py
    import common


@cube.kernel
def add_kernel(x, y, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n  # the last cube may hang over the end of the arrays
    cube.store(out + offs, cube.load(x + offs, mask=mask) + cube.load(y + offs, mask=mask),
               mask=mask)


def add(x, y, out, *, block: int = 1024, target: str | None = None) -> None:
    """``out = x + y`` for 1-D arrays of one dtype on one device (NumPy, torch, DeviceArray)."""
    n = x.shape[0]
    options = {} if target is None else {"target": target}
    add_kernel[(cube.cdiv(n, block),)](x, y, out, n, BLOCK=block, **options)


def check(target: str, n: int = 98_432, dtype: str = "float32", seed: int = 0) -> bool:
    """Add two random vectors on ``target`` and compare with NumPy (UnsupportedError when the
    target has no ``dtype``)."""
    rng = np.random.default_rng(seed)
    x_host = rng.standard_normal(n).astype(common.np_dtype(dtype))
    y_host = rng.standard_normal(n).astype(common.np_dtype(dtype))
    x, y = common.to_device(x_host, target), common.to_device(y_host, target)
    out = common.empty((n,), dtype, like=x)
    add(x, y, out, target=target)
    want = x_host.astype(np.float64) + y_host.astype(np.float64)
    # One rounding of the sum: half an ulp of values up to about 8.
    tol = {"float32": 1e-6, "float16": 8e-3, "bfloat16": 6e-2}[dtype]
    return common.report(f"vector add, {n} {dtype}", common.max_error(out, want), tol)


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(__doc__.splitlines()[0], argv,
                             lambda p: p.add_argument("--n", type=int, default=98_432))
    print(f"vector_add on target {args.target!r}")
    ok = common.run_dtypes(["float32", "float16", "bfloat16"],
                           lambda dtype: check(args.target, args.n, dtype))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
