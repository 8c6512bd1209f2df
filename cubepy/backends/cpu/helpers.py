"""Run-time helpers the generated CPU code calls, written once in the subset of Python that
Numba compiles. ``jit_helpers`` compiles them; in debug mode they run as plain Python.

Tiles are C-contiguous NumPy arrays. float16 and bfloat16 live in float32 registers and in
uint16 storage; the conversions below round to nearest even, as the GPUs do.
"""

from __future__ import annotations

import math

import numpy as np

# ---- memory ----


def load_t(arr, offs, mask):
    """Gather ``arr[offs]`` where ``mask`` (masked-off elements are 0)."""
    out = np.zeros(offs.shape, arr.dtype)
    o, m, r = offs.reshape(-1), mask.reshape(-1), out.reshape(-1)
    for i in range(o.size):
        if m[i]:
            r[i] = arr[o[i]]
    return out


def load_t_nomask(arr, offs):
    out = np.empty(offs.shape, arr.dtype)
    o, r = offs.reshape(-1), out.reshape(-1)
    for i in range(o.size):
        r[i] = arr[o[i]]
    return out


def store_t(arr, offs, vals, mask):
    o, v, m = offs.reshape(-1), vals.reshape(-1), mask.reshape(-1)
    for i in range(o.size):
        if m[i]:
            arr[o[i]] = v[i]


def store_t_nomask(arr, offs, vals):
    o, v = offs.reshape(-1), vals.reshape(-1)
    for i in range(o.size):
        arr[o[i]] = v[i]


def store_ts(arr, offs, val, mask):
    o, m = offs.reshape(-1), mask.reshape(-1)
    for i in range(o.size):
        if m[i]:
            arr[o[i]] = val


def row_unmasked(mask2d, i):
    """Whether every element of row ``i`` is inside the mask (then the row is one slice)."""
    for j in range(mask2d.shape[1]):
        if not mask2d[i, j]:
            return False
    return True


def load_rows(arr, base, row_stride, m, n, mask):
    """Load an (m, n) tile whose rows are contiguous: row i starts at base + i*row_stride."""
    out = np.zeros((m, n), arr.dtype)
    mk = mask.reshape(m, n)
    for i in range(m):
        start = base + i * row_stride
        if row_unmasked(mk, i):
            out[i, :] = arr[start:start + n]
        else:
            for j in range(n):
                if mk[i, j]:
                    out[i, j] = arr[start + j]
    return out


def load_rows_nomask(arr, base, row_stride, m, n):
    out = np.empty((m, n), arr.dtype)
    for i in range(m):
        start = base + i * row_stride
        out[i, :] = arr[start:start + n]
    return out


def store_rows(arr, base, row_stride, m, n, vals, mask):
    v, mk = vals.reshape(m, n), mask.reshape(m, n)
    for i in range(m):
        start = base + i * row_stride
        if row_unmasked(mk, i):
            arr[start:start + n] = v[i, :]
        else:
            for j in range(n):
                if mk[i, j]:
                    arr[start + j] = v[i, j]


def store_rows_nomask(arr, base, row_stride, m, n, vals):
    v = vals.reshape(m, n)
    for i in range(m):
        start = base + i * row_stride
        arr[start:start + n] = v[i, :]


# ---- reductions over the last axis of a 2-D (outer, n) array ----


def rsum(x, dtype):
    # Partial sums, then a tree, as NumPy's pairwise sum and a GPU's tile sum round: 128
    # running sums (each of n/128 values, a contiguous inner loop that vectorizes) are added
    # by halves, so the error grows with n/128 + log2(128), not n. One running sum was as
    # accurate only where LLVM vectorized it into partial sums: unoptimized (CUBEPY_CPU_OPT=0), a
    # float32 mean of 4096 values near 1e6 was off by 30.
    m, n = x.shape
    out = np.zeros(m, dtype)
    width = min(n, 128)
    part = np.empty(width, dtype)
    for i in range(m):
        for k in range(width):
            part[k] = x[i, k]
        for start in range(width, n, width):  # tile sizes are powers of two: whole blocks
            for k in range(min(width, n - start)):
                part[k] += x[i, start + k]
        w = width
        while w > 1:
            if w % 2:
                part[0] += part[w - 1]
                w -= 1
            w //= 2
            for k in range(w):
                part[k] += part[k + w]
        if width:
            out[i] = part[0]
    return out


def rmax(x):
    out = np.empty(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        acc = x[i, 0]
        for j in range(1, x.shape[1]):
            v = x[i, j]
            if v > acc or v != v:
                acc = v
        out[i] = acc
    return out


def rmin(x):
    out = np.empty(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        acc = x[i, 0]
        for j in range(1, x.shape[1]):
            v = x[i, j]
            if v < acc or v != v:
                acc = v
        out[i] = acc
    return out


def rargmax(x):
    out = np.empty(x.shape[0], np.int32)
    for i in range(x.shape[0]):
        best, at = x[i, 0], 0
        for j in range(1, x.shape[1]):
            v = x[i, j]
            if v > best or (v != v and best == best):  # the first NaN wins, as NumPy's
                best, at = v, j
        out[i] = at
    return out


def rargmin(x):
    out = np.empty(x.shape[0], np.int32)
    for i in range(x.shape[0]):
        best, at = x[i, 0], 0
        for j in range(1, x.shape[1]):
            v = x[i, j]
            if v < best or (v != v and best == best):  # the first NaN wins, as NumPy's
                best, at = v, j
        out[i] = at
    return out


def rcumsum(x, dtype):
    out = np.empty(x.shape, dtype)
    for i in range(x.shape[0]):
        acc = dtype(0)
        for j in range(x.shape[1]):
            acc += x[i, j]
            out[i, j] = acc
    return out


def rcumprod(x, dtype):
    out = np.empty(x.shape, dtype)
    for i in range(x.shape[0]):
        acc = dtype(1)
        for j in range(x.shape[1]):
            acc *= x[i, j]
            out[i, j] = acc
    return out


def rxor(x):
    out = np.zeros(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i] ^= x[i, j]
    return out


def div_rn(a, b):
    # compiled without fast-math (namespace.IEEE): LLVM may not divide through a reciprocal
    return a / b


def sqrt_rn(x):
    return np.sqrt(x)


def ror(x):
    out = np.zeros(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i] |= x[i, j]
    return out


def rgather(src, index):
    out = np.empty(index.shape, src.dtype)
    for i in range(index.shape[0]):
        for j in range(index.shape[1]):
            for k in range(index.shape[2]):
                out[i, j, k] = src[i, index[i, j, k], k]
    return out


def rsort(x, descending):
    out = np.empty_like(x)
    n = x.shape[1]
    for i in range(x.shape[0]):
        row = np.sort(x[i])
        for j in range(n):
            out[i, j] = row[n - 1 - j] if descending else row[j]
    return out


def dot_int(a, b, acc):
    out = acc.copy()
    for i in range(a.shape[0]):
        for k in range(a.shape[1]):
            aik = a[i, k]
            for j in range(b.shape[1]):
                out[i, j] += aik * b[k, j]
    return out


# ---- math NumPy lacks ----


def erf_scalar(x):
    return math.erf(x)


# ---- float16 / bfloat16 storage (uint16) <-> float32 registers ----


def bf16_to_f32_t(raw):
    return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_bits_to_bf16(b):
    # round to nearest even; a NaN keeps its sign and payload's high bits, and one with only
    # low bits stays a NaN
    if (b & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
        high = b >> np.uint32(16)
        return np.uint16(high if high & np.uint32(0x7F) else high | np.uint32(0x40))
    rounded = b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))
    return np.uint16(rounded >> np.uint32(16))


def f32_to_bf16_t(x):
    bits = np.ascontiguousarray(x).view(np.uint32).reshape(-1)
    out = np.empty(bits.size, np.uint16)
    for i in range(bits.size):
        out[i] = f32_bits_to_bf16(bits[i])
    return out.reshape(x.shape)


def f16_bits_to_f32(h):
    # float32 bits built directly (a NaN keeps its sign and payload, which bitcasts read; one
    # through float64 would come back quiet), no float64 power: lane loops convert per element
    sign = (h & 0x8000) << 16
    exp = (h >> 10) & 0x1F
    mant = h & 0x3FF
    if exp == 0:  # zero or subnormal: mant * 2**-24, exact in float32
        value = np.float32(mant) * np.float32(5.960464477539063e-08)
        return -value if sign else value
    if exp == 31:  # infinity or NaN
        return np.uint32(sign | 0x7F800000 | (mant << 13)).view(np.float32)
    return np.uint32(sign | ((exp + 112) << 23) | (mant << 13)).view(np.float32)


def f32_to_f16_bits(f):
    # every case computed and one chosen, no branches: float16 lane loops ran about 2x faster
    # this way than with an early return per case (BENCHMARKS.md, "16-bit floats on the cpu
    # target"); round to nearest even throughout
    b = np.int64(np.float32(f).view(np.uint32))
    sign = (b >> 16) & 0x8000
    absb = b & 0x7FFFFFFF
    # a normal float16: drop 13 mantissa bits, rounding (a carry moves into the exponent)
    normal = (absb - 0x38000000 + 0xFFF + ((absb >> 13) & 1)) >> 13
    # below the smallest normal: |f| * 2**24 (exact in float32), from a finite stand-in for
    # the values that take another case
    small = np.uint32(min(absb, 0x38800000)).view(np.float32)
    subnormal = np.int64(np.rint(small * np.float32(16777216.0)))
    # NaN: sign and payload's high bits; only low bits: a quiet NaN
    payload = (absb >> 13) & 0x3FF
    nan = 0x7C00 | payload | (0x200 if payload == 0 else 0)
    h = normal if absb >= 0x38800000 else subnormal
    h = 0x7C00 if absb >= 0x477FF000 else h  # rounds to at least 65520, or infinity
    h = nan if absb > 0x7F800000 else h
    return sign | h


def f16_to_f32_t(raw):
    out = np.empty(raw.shape, np.float32)
    r, o = raw.reshape(-1), out.reshape(-1)
    for i in range(r.size):
        o[i] = f16_bits_to_f32(np.int64(r[i]))
    return out


def f32_to_f16_t(x):
    out = np.empty(x.shape, np.uint16)
    xf, o = np.ascontiguousarray(x).reshape(-1), out.reshape(-1)
    for i in range(xf.size):
        o[i] = np.uint16(f32_to_f16_bits(xf[i]))
    return out


def round_f16_t(x):
    return f16_to_f32_t(f32_to_f16_t(x))


def round_bf16_t(x):
    return bf16_to_f32_t(f32_to_bf16_t(x))


def bf16_to_f32_s(raw):
    # bit views of scalars, not one-element arrays: an array per element cost ~100x the
    # arithmetic of a bfloat16 kernel's lane loop (BENCHMARKS.md, "16-bit floats on the cpu
    # target")
    return np.uint32(np.uint32(raw) << np.uint32(16)).view(np.float32)


def f32_to_bf16_s(x):
    return f32_bits_to_bf16(np.float32(x).view(np.uint32))


def f16_to_f32_s(raw):
    return f16_bits_to_f32(np.int64(raw))


def f32_to_f16_s(x):
    return np.uint16(f32_to_f16_bits(np.float32(x)))


def round_f16_s(x):
    return f16_to_f32_s(f32_to_f16_s(x))


def round_bf16_s(x):
    return bf16_to_f32_s(f32_to_bf16_s(x))


def fpow(a, b):
    # Compiled without fastmath's `afn` and `nsz` (namespace.EXACT): with `afn` LLVM turns
    # pow(x, float(n)) of an int n into its powi intrinsic, whose library call Numba's JIT
    # leaves unresolved, and the kernel crashed (SIGSEGV) on `x ** k` for an int tile k; with
    # `nsz` it turns pow(x, 0.5) into sqrt(x), and (-0.0) ** 0.5 gave -0.0 (C99: +0.0).
    # Debug mode runs fpow_debug instead.
    return a ** b


def fpow_debug(a, b):
    # NumPy computes `array ** 0.5`, and np.power by a scalar or broadcast 0.5, as np.sqrt
    # ((-inf) ** 0.5 is NaN there, C99's pow gives inf); NumPy scalars, and an exponent array
    # of its own, take C's pow.
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    if not shape:
        return a ** b
    return np.power(a, np.array(np.broadcast_to(b, shape)))


NAMES = [name for name, obj in list(globals().items())
         if callable(obj) and getattr(obj, "__module__", None) == __name__]
