"""The conformance kernels on a CUDA GPU through Triton, with torch arrays (the device follows
the arrays). NumPy data is made on the host, copied to the GPU for the launch and back for the
check, so these tests read like their host twins in the other files."""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest
from util import (
    BF16,
    assert_close,
    cdiv,
    erf_ref,
    next_pow2,
    np_dtype,
    poison,
    random_array,
)

import cubepy as cube

pytestmark = pytest.mark.gpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
E = importlib.import_module("test_elementwise")
R = importlib.import_module("test_reductions")
MM = importlib.import_module("test_matmul")
MEM = importlib.import_module("test_memory")
CF = importlib.import_module("test_control_flow")
SH = importlib.import_module("test_shapes")
DT = importlib.import_module("test_dtypes")
NAN = importlib.import_module("test_nan")
FS = importlib.import_module("test_float_semantics")
ME = importlib.import_module("test_math_edges")
PX = importlib.import_module("test_products_and_xor")
SHAPES = importlib.import_module("test_ported_shapes")
SORTING = importlib.import_module("test_sorting")
ROWS = importlib.import_module("test_ported_rows")
CHECKS = importlib.import_module("test_asserts_and_barriers")
RD = importlib.import_module("test_rounded_division")
BP = importlib.import_module("test_block_pointers")


def _dev(a: np.ndarray):
    torch = pytest.importorskip("torch")
    if a.dtype == BF16:
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def _host(t, dtype) -> np.ndarray:
    if dtype == BF16:
        return t.float().cpu().numpy().astype(BF16)
    return t.cpu().numpy()


def gpu(kern, grid, *args, **kwargs) -> None:
    """Launch with every NumPy argument copied to the GPU, then copy each one back in place."""
    assert all(a.flags.c_contiguous for a in args if isinstance(a, np.ndarray))
    dargs = [_dev(a) if isinstance(a, np.ndarray) else a for a in args]
    kern[grid](*dargs, **kwargs)
    for a, d in zip(args, dargs):
        if isinstance(a, np.ndarray):
            a[...] = _host(d, a.dtype)


def test_gpu_target_is_available():
    assert "triton" in cube.available_targets()


@pytest.mark.parametrize(
    "dtype",
    ["int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64"],
)
def test_gpu_vector_add(rng, dtype):
    n = 5000
    x, y = random_array(rng, n, dtype), random_array(rng, n, dtype)
    out = poison(n, dtype)
    gpu(E.add_kernel, (cdiv(n, 256),), x, y, out, n, BLOCK=256)
    assert_close(out, x + y)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_gpu_gelu(rng, dtype):
    n = 3000
    x = random_array(rng, n, dtype, -3, 3)
    out = poison(n, dtype)
    gpu(E.gelu_kernel, (cdiv(n, 512),), x, out, n, BLOCK=512, target="triton")
    x64 = x.astype(np.float64)
    assert_close(out, 0.5 * x64 * (1.0 + erf_ref(x64 / np.sqrt(2.0))))


@pytest.mark.parametrize("fn", list(E.MATH))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_math(rng, fn, dtype):
    kern, ref, ranges = E.MATH[fn]
    n = 2000
    inputs = [random_array(rng, n, dtype, lo, hi) for lo, hi in ranges]
    out = poison(n, dtype)
    gpu(kern, (cdiv(n, 256),), *inputs, out, n, BLOCK=256)
    assert_close(out, ref(*[a.astype(np.float64) for a in inputs]))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_gpu_floor_div_mod(rng, dtype):
    n = 1000
    x = random_array(rng, n, dtype, -100, 100)
    y = random_array(rng, n, dtype, 1, 12) * np.where(rng.random(n) < 0.5, -1, 1).astype(dtype)
    outs = [poison(n, dtype) for _ in range(4)]
    gpu(E.divmod_kernel, (cdiv(n, 128),), x, y, *outs, n, BLOCK=128)
    for got, want in zip(outs, [x // y, x % y, x // np_dtype(dtype).type(-3), x % 7]):
        assert_close(got, want)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
def test_gpu_integer_division_by_zero_gives_zero(rng, dtype):
    n = 1000
    x = random_array(rng, n, dtype, 0 if dtype == "uint32" else -100, 100)
    y = random_array(rng, n, dtype, 0, 6)
    outs = [poison(n, dtype) for _ in range(4)]
    gpu(E.divmod_kernel, (cdiv(n, 128),), x, y, *outs, n, BLOCK=128, SIGNED=dtype != "uint32")
    with np.errstate(divide="ignore"):
        for got, want in zip(outs[:2], [x // y, x % y]):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_gpu_the_most_negative_integer_divided_by_minus_one_wraps(dtype):
    low = np.iinfo(np_dtype(dtype)).min
    x = np.array([low, low, low + 1, 5, low, -7, low, 9], np_dtype(dtype))
    y = np.array([-1, 1, -1, -1, 2, -1, -1, 0], np_dtype(dtype))
    outs = [poison(8, dtype) for _ in range(4)]
    gpu(E.divmod_kernel, (1,), x, y, *outs, 8, BLOCK=8)
    with np.errstate(divide="ignore", over="ignore"):
        for got, want in zip(outs[:2], [x // y, x % y]):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("width", [37, 100, 1000])
def test_gpu_softmax(rng, width):
    rows = 64
    x = random_array(rng, (rows, width), "float32", -4, 4)
    out = poison((rows, width), "float32")
    gpu(R.softmax_row_kernel, (rows,), x, out, width, width, BLOCK=next_pow2(width))
    assert_close(out, R.softmax_ref(x))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gpu_layernorm(rng, dtype):
    rows, width, eps = 32, 300, 1e-5
    x = random_array(rng, (rows, width), dtype, -3, 3)
    w, b = random_array(rng, width, dtype, 0.5, 1.5), random_array(rng, width, dtype, -1, 1)
    out, mean, rstd = poison((rows, width), dtype), poison(rows, "float32"), poison(rows, "float32")
    gpu(R.layernorm_kernel, (rows,), x, w, b, out, mean, rstd, width, width, eps, BLOCK=512)
    x64 = x.astype(np.float64)
    r = 1.0 / np.sqrt(x64.var(axis=1) + eps)
    expected = (x64 - x64.mean(axis=1)[:, None]) * r[:, None] * w.astype(np.float64) + b
    assert_close(mean, x64.mean(axis=1), atol=1e-5)  # sums of 300 float32 terms
    assert_close(rstd, r, rtol=1e-4)
    assert_close(out, expected, **({"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {}))


@pytest.mark.parametrize("op", list(R.OPS))
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_gpu_reduce_rows_and_cols(rng, op, dtype):
    M, N = 37, 45
    x = (
        random_array(rng, (M, N), dtype, -2, 2)
        if dtype == "float32"
        else random_array(rng, (M, N), dtype, -1000, 1000)
    )
    ref = {"sum": np.sum, "max": np.max, "min": np.min}[op]
    fill = R._fill(op, dtype)
    rows, cols = poison(M, dtype), poison(N, dtype)
    gpu(R.reduce_axis1_kernel, (cdiv(M, 16),), x, rows, M, N, N, fill, OP=R.OPS[op], BM=16, BN=64)
    gpu(R.reduce_axis0_kernel, (cdiv(N, 16),), x, cols, M, N, N, fill, OP=R.OPS[op], BM=64, BN=16)
    tol = {"atol": 1e-5} if op == "sum" and dtype == "float32" else {}  # 45-term float32 sums
    assert_close(rows, ref(x, axis=1).astype(rows.dtype), **tol)
    assert_close(cols, ref(x, axis=0).astype(cols.dtype), **tol)


def test_gpu_argmax_ties_and_cumsum(rng):
    M, N = 30, 45
    x = random_array(rng, (M, N), "int32", 0, 4)
    out = poison(M, "int32")
    gpu(R.argmax_rows_kernel, (cdiv(M, 16),), x, out, M, N, N, np.int32(-1000), BM=16, BN=64)
    assert_close(out, np.argmax(x, axis=1).astype(np.int32))
    for axis in (0, 1):
        cs = poison((13, 29), "int32")
        xs = np.ascontiguousarray(x[:13, :29])
        gpu(R.cumsum_2d_kernel, (1,), xs, cs, 13, 29, 29, AXIS=axis, BM=16, BN=32)
        assert_close(cs, np.cumsum(xs, axis=axis))


@pytest.mark.parametrize(
    "in_dtype,out_dtype,blocks",
    [
        ("float32", "float32", (32, 32, 16)),
        ("float16", "float32", (64, 64, 32)),
        ("bfloat16", "float32", (32, 64, 32)),
        ("float64", "float64", (16, 32, 16)),
    ],
)
def test_gpu_matmul_ragged(rng, in_dtype, out_dtype, blocks):
    M, N, K = 67, 45, 83
    a = random_array(rng, (M, K), in_dtype, -1, 1)
    b = random_array(rng, (K, N), in_dtype, -1, 1)
    c = poison((M, N), out_dtype)
    BM, BN, BK = blocks
    acc64 = out_dtype == "float64"
    grid = (cdiv(M, BM), cdiv(N, BN))
    gpu(
        MM.matmul_kernel, grid, a, b, c, M, N, K, K, 1, N, 1, N, 1, ACC64=acc64, BM=BM, BN=BN, BK=BK
    )
    expected = a.astype(np.float64) @ b.astype(np.float64)
    # float32 inputs must not be rounded to TF32: the result must match float32 arithmetic.
    assert_close(c, expected, **({"rtol": 1e-4, "atol": 1e-4} if out_dtype == "float32" else {}))


def test_gpu_batched_matmul_and_trans(rng):
    B, M, N, K = 3, 19, 23, 37
    a = random_array(rng, (B, M, K), "float32", -1, 1)
    b = random_array(rng, (B, K, N), "float32", -1, 1)
    c = poison((B, M, N), "float32")
    gpu(MM.bmm_kernel, (cdiv(M, 16), cdiv(N, 16), B), a, b, c, M, N, K, BM=16, BN=16, BK=16)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    x = random_array(rng, (50, 35), "float32")
    t = poison((35, 50), "float32")
    gpu(SH.trans_kernel, (cdiv(50, 32), cdiv(35, 16)), x, t, 50, 35, BM=32, BN=16)
    assert_close(t, x.T)


def test_gpu_atomics(rng):
    n, bins = 20000, 16
    x = random_array(rng, n, "int32", 0, bins)
    base = random_array(rng, bins, "int32", 100, 200)
    hist = base.copy()
    gpu(MEM.histogram_kernel, (cdiv(n, 256),), x, hist, n, BLOCK=256)
    assert_close(hist, base + np.bincount(x, minlength=bins).astype(np.int32))

    counter, tickets = np.array([1234], np.int32), poison(n, "int32")
    gpu(MEM.ticket_kernel, (cdiv(n, 256),), counter, tickets, n, BLOCK=256)
    assert counter[0] == 1234 + n
    np.testing.assert_array_equal(np.sort(tickets), 1234 + np.arange(n, dtype=np.int32))

    slot, old = np.array([-5], np.int32), poison(64, "int32")
    gpu(MEM.cas_lock_kernel, (64,), slot, old)
    winners = np.flatnonzero(old == -5)
    assert len(winners) == 1 and slot[0] == winners[0] + 1


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_gpu_atomic_max_min(rng, dtype):
    n, slots = 5000, 7
    x = random_array(rng, n, dtype, -1000, 1000)
    idx = random_array(rng, n, "int32", 0, slots)
    mx0, mn0 = (
        random_array(rng, slots, dtype, -1000, 1000),
        random_array(rng, slots, dtype, -1000, 1000),
    )
    mx, mn = mx0.copy(), mn0.copy()
    gpu(MEM.atomic_minmax_kernel, (cdiv(n, 128),), x, idx, mx, mn, n, BLOCK=128)
    np.maximum.at(mx0, idx, x)
    np.minimum.at(mn0, idx, x)
    assert_close(mx, mx0)
    assert_close(mn, mn0)


@pytest.mark.parametrize("case", ["one_update_per_slot", "many_updates_per_slot"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_atomic_max_min_with_nan(rng, dtype, case):
    """As np.maximum.at/np.minimum.at, with NaN values and NaN slots of both signs: on the GPU
    many lanes race for each slot, and PTX's bit-level NaN handling differs from the
    interpreter's."""
    for _ in range(5):
        x, idx, slots = getattr(NAN, case)(rng, dtype)
        n = len(x)
        mx, mn = slots.copy(), slots.copy()
        old_mx, old_mn = poison(n, dtype), poison(n, dtype)
        gpu(NAN.atomic_nan_kernel, (cdiv(n, 128),), x, idx, mx, mn, old_mx, old_mn, n,
            BLOCK=128)
        NAN.check_atomic_nan(x, idx, slots, mx, mn, old_mx, old_mn)


def test_gpu_control_flow(rng):
    n = 64
    x = random_array(rng, n, "int32", 1, 1000)
    steps = poison(n, "int32")
    gpu(CF.collatz_kernel, (n,), x, steps)
    assert_close(steps, np.array([CF._collatz(int(v)) for v in x], dtype=np.int32))

    n_rows, n_cols = 23, 150
    m = random_array(rng, (n_rows, n_cols), "float32")
    s, mx = poison(n_cols, "float32"), poison(n_cols, "float32")
    gpu(CF.column_stats_kernel, (cdiv(n_cols, 64),), m, s, mx, n_rows, n_cols, BLOCK=64)
    assert_close(s, m.astype(np.float64).sum(axis=0), atol=1e-5)
    assert_close(mx, m.max(axis=0))

    v = random_array(rng, 20 * 64 - 7, "float32")
    flags = random_array(rng, 20, "int32", -1, 2)
    out = poison(v.shape, "float32")
    gpu(CF.runtime_if_kernel, (20,), v, flags, out, v.size, BLOCK=64)
    f = np.repeat(flags, 64)[: v.size]
    assert_close(out, np.where(f > 0, 2 * v + 1.0, np.where(f == 0, v + 0.5, -v - 1.0)))


@pytest.mark.parametrize(
    "src,dst",
    [
        ("float32", "int32"),
        ("float32", "float16"),
        ("float32", "bfloat16"),
        ("int8", "float32"),
        ("uint8", "int32"),
        ("float64", "float32"),
    ],
)
def test_gpu_casts(rng, src, dst):
    n = 1000
    x = random_array(rng, n, src, *((0, 256) if src == "uint8" else (-100, 100)))
    expected = x.astype(np_dtype(dst))
    out = poison(n, dst)
    gpu(DT.CAST_KERNELS[dst], (cdiv(n, 128),), x, out, n, BLOCK=128)
    assert_close(out, expected)


DESC = importlib.import_module("test_descriptors")


@pytest.mark.parametrize("in_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("aligned", [True, False])
def test_gpu_descriptor_matmul_tma_and_its_fallback(rng, in_dtype, aligned):
    """K = 64 and N = 40 keep rows 16-byte aligned: the TMA variant runs. K = 70 does not:
    the pointer variant runs. Both must agree with NumPy, ragged M, N and K included."""
    M, N, K = 45, 40, 64 if aligned else 70
    a = random_array(rng, (M, K), in_dtype, -1, 1)
    b = random_array(rng, (K, N), in_dtype, -1, 1)
    c = poison((M, N), "float32")
    args = (_dev(a), _dev(b), _dev(c), M, N, K)
    blocks = {"BM": 16, "BN": 16, "BK": 16}
    DESC.descriptor_matmul[(cdiv(M, 16), cdiv(N, 16))](*args, **blocks)
    compiled, _, _ = DESC.descriptor_matmul.compiled(args, dict(blocks))
    uses_tma = compiled.tma_guard is not None and compiled.tma_guard.allows(list(args))
    assert uses_tma == aligned
    assert_close(_host(args[2], np.float32), a.astype(np.float64) @ b.astype(np.float64),
                 rtol=1e-4, atol=1e-4)


def test_gpu_descriptor_blocks_off_the_edges(rng):
    rows, cols = 37, 29
    padded = random_array(rng, (rows, cols + 3), "float32", -1, 1)
    out = poison((rows, cols), "float32")
    gpu(DESC.descriptor_shift, (cdiv(rows, 16), cdiv(cols, 16)), padded, out, rows, cols,
        cols + 3, -7, 2, BR=16, BC=16)
    assert_close(out, DESC._shift_expected(padded[:, :cols], -7, 2))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_gpu_float_floor_divide_remainder_and_pow(rng, dtype):
    """NumPy's `//` and `%` from libdevice's exact fmod (a GPU's own float `%` is
    a - b * trunc(a / b)), C99's pow (libdevice's, and multiplications for small whole
    constant exponents), and a literal zero divisor."""
    a, b = FS.special_pairs(dtype)
    if dtype in ("float32", "float64"):  # quotients past 2^24: the remainder stays exact
        a = np.concatenate([a, rng.uniform(-1e30, 1e30, 300).astype(dtype)])
        b = np.concatenate([b, rng.uniform(-1e-3, 1e-3, 300).astype(dtype)])
    n, grid = a.size, (cdiv(a.size, 128),)
    outs = [poison(n, dtype) for _ in range(7)]
    gpu(E.divmod_kernel, grid, a, b, *outs[:4], n, BLOCK=128)
    gpu(FS.by_zero_kernel, (1,), a, *outs[4:], n, BLOCK=next_pow2(n))
    for got, want in zip(outs, FS.divmod_refs(a, b)):
        FS.assert_same(got, want)
    pows = [poison(n, dtype) for _ in range(6)]
    gpu(E.pow_kernel, grid, a, b, pows[0], n, BLOCK=128)
    gpu(FS.pow_constant_kernel, (1,), a, *pows[1:], n, BLOCK=next_pow2(n))
    for got, k in zip(pows, [b, 2, 3, -1, -2, 5]):
        k = np.broadcast_to(np.asarray(k, a.dtype), a.shape)
        FS.assert_pow(got, FS.numpy_ref(np.power, a, k), a, k)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_sigmoid_of_large_negative_arguments(dtype):
    # exp(x) / (1 + exp(x)) below 0: a subnormal result, or 0 where the GPU's exp flushes;
    # float32 exp is ex2.approx of x log2(e), 15 ulp off at -88 (libdevice's float64 is not)
    x = np.resize(np.array(ME.SIGMOID_ARGUMENTS[dtype], dtype), 64)
    out = poison(64, dtype)
    gpu(ME.lanes_kernel, (1,), x, out, B=64, FN="sigmoid")
    ME.assert_sigmoid_close(x, out, dtype, coarse_exp=dtype == "float32", flushes=True)


@pytest.mark.parametrize("kind", ["and", "or", "xor"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
def test_gpu_atomic_bitwise(rng, kind, dtype):
    x, idx, acc0 = MEM.bitwise_case(rng, kind, dtype)
    acc, old = acc0.copy(), np.zeros(x.size, x.dtype)
    gpu(MEM.atomic_bits_kernel, (cdiv(x.size, 128),), x, idx, acc, old, x.size, BLOCK=128,
        KIND=kind)
    MEM.assert_bitwise_atomics(kind, x, idx, acc0, acc, old)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_gpu_cumprod(rng, dtype, axis):
    x = PX.factors(rng, (PX.M, PX.N), dtype)
    out = np.zeros((PX.M, PX.N), np_dtype(dtype))
    gpu(PX.cumprod_2d, (1,), x, out, PX.M, PX.N, AXIS=axis, BM=16, BN=32)
    assert_close(out, PX.cumprod_reference(x, axis).astype(np.float64))


@pytest.mark.parametrize("kind", ["xor", "or"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "int8"])
def test_gpu_xor_sum_and_reduce_or(rng, dtype, kind):
    x, outs = PX.xor_case(rng, dtype, kind)
    gpu(PX.xor_sum_2d, (1,), x, *outs, PX.M, PX.N, BM=16, BN=32, KIND=kind)
    PX.assert_xor_sums(x, outs, kind)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_gpu_flip(rng, dtype):
    r, c = SHAPES.FLIP_R, SHAPES.FLIP_C
    x = random_array(rng, (r, c), dtype, -50, 50)
    outs = [np.zeros((r, c), x.dtype) for _ in range(3)] + [np.zeros(r, x.dtype)]
    gpu(SHAPES.flipped_2d, (1,), x, *outs, R=r, C=c)
    SHAPES.assert_flipped(x, outs)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_gpu_join_split_interleave(rng, dtype):
    n = SHAPES.PAIRS_N
    a, b = (random_array(rng, n, dtype, -50, 50) for _ in range(2))
    joined, mixed = np.zeros((n, 2), a.dtype), np.zeros(2 * n, a.dtype)
    first, second, scaled = (np.zeros(n, a.dtype) for _ in range(3))
    gpu(SHAPES.pairs, (1,), a, b, joined, mixed, first, second, scaled, N=n)
    SHAPES.assert_pairs(a, b, joined, mixed, first, second, scaled)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "bool"])
@pytest.mark.parametrize("dim, descending", [(-1, False), (0, True)])
def test_gpu_sort_and_topk(rng, dtype, dim, descending):
    rows, cols, k = SORTING.ROWS, SORTING.COLS, 4
    x = SORTING.sort_case(rng, (rows, cols), dtype)
    out = np.zeros_like(x)
    top = np.zeros((k, cols) if dim == 0 else (rows, k), x.dtype)
    gpu(SORTING.sorted_2d, (1,), x, out, top, R=rows, C=cols, DIM=dim, DESC=descending, K=k)
    SORTING.assert_sorted_2d(x, out, top, dim % 2, descending, k)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
@pytest.mark.parametrize("axis, m, index_dtype", [(0, ROWS.R, "int32"), (1, 2 * ROWS.C, "int64")])
def test_gpu_gather(rng, dtype, axis, m, index_dtype):
    src, index = ROWS.gather_case(rng, dtype, axis, m, index_dtype)
    out = np.zeros(index.shape, src.dtype)
    gpu(ROWS.gathered, (1,), src, index, out, R=ROWS.R, C=ROWS.C, AXIS=axis, M=m)
    assert ROWS.same_bits(out, ROWS.gather_reference(src, index, axis))


def test_gpu_histogram_softmax_and_keep_dims(rng):
    n, bins = 200, 32
    x = rng.integers(0, bins + 8, n).astype(np.int32)
    counts, masked = np.zeros(bins, np.int32), np.zeros(bins, np.int32)
    gpu(ROWS.counted, (1,), x, n, counts, masked, BLOCK=256, BINS=bins)
    ROWS.assert_histograms(x, counts, masked)
    v = random_array(rng, (ROWS.R, ROWS.C), "float32", -30, 30)
    by_rows, by_cols = np.zeros_like(v), np.zeros_like(v)
    gpu(ROWS.softmaxes, (1,), v, by_rows, by_cols, R=ROWS.R, C=ROWS.C)
    assert_close(by_rows, ROWS.softmax_reference(v, 1))
    assert_close(by_cols, ROWS.softmax_reference(v, 0))
    outs = [np.zeros_like(v) for _ in range(3)] + [np.zeros(v.shape, np.int32)]
    gpu(ROWS.kept_dims, (1,), v, *outs, R=ROWS.R, C=ROWS.C)
    np.testing.assert_array_equal(outs[1], v - v.max(axis=0, keepdims=True))
    np.testing.assert_array_equal(outs[3], np.broadcast_to(v.argmax(axis=1)[:, None], v.shape))


def test_gpu_debug_barrier_assume_and_a_holding_assert(rng):
    x = rng.standard_normal(256).astype(np.float32)
    scratch, out = np.zeros(256, np.float32), np.zeros(256, np.float32)
    gpu(CHECKS.reversed_through_memory, (1,), x, scratch, out, BLOCK=256)
    np.testing.assert_array_equal(out, (x + 1.0)[::-1])
    strided = np.zeros(64, np.float32)
    gpu(CHECKS.promised, (1,), x, strided, 64, 2, BLOCK=64)
    np.testing.assert_array_equal(strided, x[:128:2])
    index = rng.integers(0, 100, 100).astype(np.int32)
    picked = np.zeros(100, np.float32)
    gpu(CHECKS.checked_gather, (4,), x[:100].copy(), index, picked, 100, BLOCK=32)
    np.testing.assert_array_equal(picked, x[:100][index])


def test_gpu_reduction_options_and_scans_of_moved_tiles(rng):
    r, c = ROWS.R, ROWS.C
    x, outs = ROWS.reduction_options_case(rng)
    gpu(ROWS.triton_reduction_options, (1,), x, *outs, R=r, C=c)
    ROWS.assert_reduction_options(x, outs)
    of_flipped, of_transposed = np.zeros_like(x), np.zeros((c, r), np.int32)
    gpu(ROWS.scans_of_moved_tiles, (1,), x, of_flipped, of_transposed, R=r, C=c)
    np.testing.assert_array_equal(of_flipped, np.cumsum(x[:, ::-1], axis=1))
    np.testing.assert_array_equal(of_transposed, np.cumsum(x.T, axis=1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_gpu_div_rn_and_sqrt_rn(rng, dtype):
    x, y = RD.rounding_case(rng, dtype)
    outs = [np.zeros(RD.N, x.dtype) for _ in range(3)]
    gpu(RD.rounded, (4,), x, y, *outs, RD.N, BLOCK=256)
    RD.assert_rounded(x, y, outs)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gpu_block_pointers(rng, dtype):
    m, n, k = 37, 45, 70
    a, b = random_array(rng, (m, k), dtype, -1, 1), random_array(rng, (k, n), dtype, -1, 1)
    c = np.full((m, n), np.nan, a.dtype)
    gpu(BP.block_matmul, (cdiv(m, 16), cdiv(n, 16)), a, b, c, m, n, k, BM=16, BN=16, BK=16)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64),
                 atol=1e-4 if dtype == "float32" else 2e-2)
    x = random_array(rng, 150, "float32")
    out = np.zeros(100, np.float32)
    for _ in range(2):  # a NaN literal (the padding) once failed the second launch
        gpu(BP.strided_copy, (1,), x, out, 50, 3, BLOCK=16)
        np.testing.assert_array_equal(out[:50], x[::3])
