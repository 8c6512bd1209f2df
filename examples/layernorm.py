"""Layer normalization, forward and backward: Triton's fifth tutorial in cubepy.

    python examples/layernorm.py [--target cpu|cpu:debug|triton|wgsl] [--m M --n N]

y = (x - mean) * rstd * w + b over each row of x (M, N), with rstd = 1 / sqrt(var + eps).

- Forward: one cube per row, walking the row in BLOCK-wide slices (so any N fits): a pass for
  the mean, one for the variance, one to write y. It also writes mean and rstd for backward.
- Backward, dx: each of G cubes takes rows pid, pid + G, ... whole (BLOCK_N >= N), computes
  dx = rstd * (w*dy - (xhat * mean(xhat*w*dy) + mean(w*dy))) and accumulates its rows' share
  of dw = sum(dy * xhat) and db = sum(dy) in registers, then writes them as row pid of the
  (G, N) float32 partial sums.
- Backward, dw and db: a second kernel adds the G partial rows, one BLOCK_N slice of columns
  per cube. Two kernels instead of atomics: the result is the same on every run and target.

Inputs of 16-bit floats are computed in float32. Every result is checked against NumPy in
float64; exits non-zero on a mismatch.
"""

from __future__ import annotations

import sys

import numpy as np

import cubepy as cube

try:
    from . import common
except ImportError:  # run as a script: python examples/layernorm.py
    import common


@cube.kernel
def layernorm_fwd_kernel(x, y, w, b, mean, rstd, stride, N, eps, BLOCK: cube.Comptime[int]):
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    total = cube.zeros((BLOCK,), cube.float32)
    for off in range(0, N, BLOCK):
        c = off + cols
        total += cube.load(x + row * stride + c, mask=c < N, other=0.0).to(cube.float32)
    mu = cube.sum(total, axis=0) / N
    squares = cube.zeros((BLOCK,), cube.float32)
    for off in range(0, N, BLOCK):
        c = off + cols
        v = cube.load(x + row * stride + c, mask=c < N, other=0.0).to(cube.float32)
        d = cube.where(c < N, v - mu, 0.0)
        squares += d * d
    r = cube.rsqrt(cube.sum(squares, axis=0) / N + eps)
    cube.store(mean + row, mu)
    cube.store(rstd + row, r)
    for off in range(0, N, BLOCK):
        c = off + cols
        mask = c < N
        v = cube.load(x + row * stride + c, mask=mask, other=0.0).to(cube.float32)
        wv = cube.load(w + c, mask=mask, other=0.0).to(cube.float32)
        bv = cube.load(b + c, mask=mask, other=0.0).to(cube.float32)
        cube.store(y + row * stride + c, (v - mu) * r * wv + bv, mask=mask)


@cube.kernel
def layernorm_bwd_dx_kernel(dx, dy, partial_dw, partial_db, x, w, mean, rstd, stride, M, N,
                            BLOCK_N: cube.Comptime[int]):
    pid = cube.cube_pos(0)
    groups = cube.cube_count(0)
    cols = cube.arange(0, BLOCK_N)
    mask = cols < N
    wv = cube.load(w + cols, mask=mask, other=0.0).to(cube.float32)
    dw_sum = cube.zeros((BLOCK_N,), cube.float32)
    db_sum = cube.zeros((BLOCK_N,), cube.float32)
    for row in range(pid, M, groups):
        v = cube.load(x + row * stride + cols, mask=mask, other=0.0).to(cube.float32)
        dyv = cube.load(dy + row * stride + cols, mask=mask, other=0.0).to(cube.float32)
        r = cube.load(rstd + row)
        xhat = cube.where(mask, (v - cube.load(mean + row)) * r, 0.0)
        wdy = wv * dyv  # 0 past N: both loads gave 0 there
        c1 = cube.sum(xhat * wdy, axis=0) / N
        c2 = cube.sum(wdy, axis=0) / N
        cube.store(dx + row * stride + cols, (wdy - (xhat * c1 + c2)) * r, mask=mask)
        dw_sum += dyv * xhat
        db_sum += dyv
    cube.store(partial_dw + pid * N + cols, dw_sum, mask=mask)
    cube.store(partial_db + pid * N + cols, db_sum, mask=mask)


@cube.kernel
def layernorm_bwd_dwdb_kernel(partial_dw, partial_db, dw, db, G, N, BLOCK_M: cube.Comptime[int],
                              BLOCK_N: cube.Comptime[int]):
    cols = cube.cube_pos(0) * BLOCK_N + cube.arange(0, BLOCK_N)
    dw_sum = cube.zeros((BLOCK_M, BLOCK_N), cube.float32)
    db_sum = cube.zeros((BLOCK_M, BLOCK_N), cube.float32)
    for r0 in range(0, G, BLOCK_M):
        rows = r0 + cube.arange(0, BLOCK_M)
        mask = (rows[:, None] < G) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw_sum += cube.load(partial_dw + offs, mask=mask, other=0.0)
        db_sum += cube.load(partial_db + offs, mask=mask, other=0.0)
    cube.store(dw + cols, cube.sum(dw_sum, axis=0), mask=cols < N)
    cube.store(db + cols, cube.sum(db_sum, axis=0), mask=cols < N)


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _options(target: str | None) -> dict:
    return {} if target is None else {"target": target}


def layernorm_forward(x, w, b, y, mean, rstd, *, eps: float = 1e-5, max_block: int = 4096,
                      target: str | None = None) -> None:
    """``y = layernorm(x) * w + b`` over the rows of a contiguous (M, N) ``x``; also writes
    the float32 ``mean`` and ``rstd`` (M,) that the backward kernels read."""
    m, n = x.shape
    block = min(max_block, next_pow2(n))
    layernorm_fwd_kernel[(m,)](x, y, w, b, mean, rstd, n, n, eps, BLOCK=block,
                               **_options(target))


def layernorm_backward(dy, x, w, mean, rstd, dx, dw, db, *, groups: int = 64,
                       target: str | None = None) -> None:
    """Gradients of ``layernorm_forward``: ``dx`` (M, N) and ``dw``, ``db`` (N,), given the
    upstream gradient ``dy``. ``groups`` cubes share the rows (and the partial sums)."""
    m, n = x.shape
    groups = max(1, min(groups, m))
    partial_dw = common.empty((groups, n), "float32", like=x)
    partial_db = common.empty((groups, n), "float32", like=x)
    layernorm_bwd_dx_kernel[(groups,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, n, m, n,
                                       BLOCK_N=next_pow2(n), **_options(target))
    block_n = 32
    layernorm_bwd_dwdb_kernel[(cube.cdiv(n, block_n),)](
        partial_dw, partial_db, dw, db, groups, n, BLOCK_M=32, BLOCK_N=block_n,
        **_options(target))


def reference(x, w, b, dy, eps: float = 1e-5) -> dict[str, np.ndarray]:
    """y, mean, rstd and the gradients dx, dw, db in float64 NumPy."""
    x, w, b, dy = (np.asarray(v, np.float64) for v in (x, w, b, dy))
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + eps)
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    dx = rstd[:, None] * (wdy - (xhat * (xhat * wdy).mean(axis=1, keepdims=True)
                                 + wdy.mean(axis=1, keepdims=True)))
    return {"y": xhat * w + b, "mean": mean, "rstd": rstd, "dx": dx,
            "dw": (dy * xhat).sum(axis=0), "db": dy.sum(axis=0)}


def check(target: str, m: int = 1151, n: int = 1500, dtype: str = "float32",
          max_block: int = 1024, groups: int = 64, seed: int = 0) -> bool:
    """Forward and backward on ``target`` against NumPy in float64 (UnsupportedError when the
    target has no ``dtype``)."""
    rng = np.random.default_rng(seed)
    host_dtype = common.np_dtype(dtype)
    hosts = {"x": (rng.standard_normal((m, n)) * 2 + 0.5).astype(host_dtype),
             "w": rng.uniform(0.5, 1.5, n).astype(host_dtype),
             "b": rng.uniform(-0.5, 0.5, n).astype(host_dtype),
             "dy": rng.standard_normal((m, n)).astype(host_dtype)}
    x, w, b, dy = (common.to_device(hosts[k], target) for k in ("x", "w", "b", "dy"))
    got = {"y": common.empty((m, n), dtype, like=x), "mean": common.empty((m,), "float32", x),
           "rstd": common.empty((m,), "float32", x), "dx": common.empty((m, n), dtype, like=x),
           "dw": common.empty((n,), dtype, like=x), "db": common.empty((n,), dtype, like=x)}
    layernorm_forward(x, w, b, got["y"], got["mean"], got["rstd"], max_block=max_block,
                      target=target)
    layernorm_backward(dy, x, w, got["mean"], got["rstd"], got["dx"], got["dw"], got["db"],
                       groups=groups, target=target)
    want = reference(hosts["x"], hosts["w"], hosts["b"], hosts["dy"])
    # float32 math throughout, sums of n (or m) terms off by about sqrt(n) ulps; outputs rounded
    # to their dtype: a few of its ulps, relative to the largest magnitude of each result.
    rel = {"float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    ok = True
    for name, array in got.items():
        scale = max(1.0, float(np.max(np.abs(want[name]))))
        terms = m if name in ("dw", "db") else n
        tol = (0.0 if name in ("mean", "rstd") else rel) + 2e-7 * np.sqrt(terms)
        ok &= common.report(f"layernorm {m}x{n} {dtype}: {name}",
                            common.max_error(array, want[name]), tol * scale)
    return ok


def main(argv: list[str] | None = None) -> int:
    def extra(parser):
        parser.add_argument("--m", type=int)
        parser.add_argument("--n", type=int)

    args = common.parse_args(__doc__.splitlines()[0], argv, extra)
    small = common.small(args.target)
    m = args.m or (150 if small else 1151)
    n = args.n or (300 if small else 1500)
    # A forward tile narrower than the row, so the kernel's column loop runs.
    max_block = 256 if small else 1024
    print(f"layernorm on target {args.target!r}")
    ok = common.run_dtypes(["float32", "float16", "bfloat16"],
                           lambda dtype: check(args.target, m, n, dtype, max_block))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
