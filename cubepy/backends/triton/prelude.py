"""The Triton source generated kernels may need besides their own function: helper
``@triton.jit`` functions for Python semantics Triton lacks (and for what the interpreter
lacks), and module-level constants. ``codegen`` adds the ones a kernel uses, and what those
need (``with_needs``)."""

HELPERS = {
    "_floordiv": '''
@triton.jit
def _floordiv(a, b):
    # Python's floor division from Triton's truncating one, on integers; by zero 0, as NumPy
    # (a GPU's division by zero is undefined: the divisor is made 1 first)
    d = tl.where(b == 0, 1, b)
    q = a // d
    q = tl.where((a % d != 0) & ((a < 0) != (d < 0)), q - 1, q)
    return tl.where(b == 0, 0, q)
''',
    "_fmod": '''
@triton.jit
def _fmod(a, b):
    # C's fmod, exact (the interpreter computes float `%` with np.fmod; a GPU's `%` is
    # a - b * trunc(a / b), wrong once a / b rounds, so the GPU calls libdevice's fmod)
    return a % b
''',
    # NumPy's float floor_divide and remainder (npy_divmod), from the exact m = fmod(a, b):
    # a // b and a % b agree, and a // b is not floor(a / b), which rounds first
    # (-0.3 // 0.1 is -4 and -5 // inf is -1, as in NumPy).
    "_floordiv_float": '''
@triton.jit
def _floordiv_float(a, b, m):
    q = a / b  # the answer by zero (+-inf or NaN); its sign is that of a zero quotient
    if a.dtype == tl.float32:  # rounded as NumPy's: a GPU's float32 `/` is within 2 ulp
        div = tl.math.div_rn(a - m, b)
    else:
        div = (a - m) / b
    div = tl.where((m != 0) & ((b < 0) != (m < 0)), div - 1.0, div)
    whole = tl.floor(div)
    whole = tl.where(div - whole > 0.5, whole + 1.0, whole)
    whole = tl.where(div == 0, q * 0.0, whole)
    return tl.where(b == 0, q, whole)
''',
    "_floormod_float": '''
@triton.jit
def _floormod_float(a, b, m):
    # fmod moved into b's sign; a zero takes b's sign; by zero NaN (fmod's). The zero is
    # picked in integer bits: as floats, the H200's compiler folded the select of a signed
    # zero where m == 0 into m itself (its sign, a's)
    r = tl.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)
    if a.dtype == tl.float64:
        bits = tl.uint64
        sign = 0x8000000000000000
    else:
        bits = tl.uint32
        sign = 0x80000000
    zero = b.to(bits, bitcast=True) & sign
    return tl.where(m == 0, zero, r.to(bits, bitcast=True)).to(a.dtype, bitcast=True)
''',
    "_floormod_int": '''
@triton.jit
def _floormod_int(a, b):
    # the same on integers; by zero 0, as NumPy
    d = tl.where(b == 0, 1, b)
    r = a % d
    r = tl.where((r != 0) & ((r < 0) != (d < 0)), r + d, r)
    return tl.where(b == 0, 0, r)
''',
    "_round_bf16": '''
@triton.jit
def _round_bf16(x):
    # float32 -> nearest bfloat16 (ties to even), kept in float32: the interpreter's own
    # float32 -> bfloat16 cast truncates
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return tl.where(x != x, x, bits.to(tl.float32, bitcast=True))
''',
    "_tanh": '''
@triton.jit
def _tanh(x):
    # the interpreter has no libdevice; in float64: below |x| = 0.3 tanh's Taylor series to
    # x^25 (the next term is under 1e-18 of the sum); above, (1 - t) / (1 + t) with t =
    # exp(-2|x|) <= 1 (no overflow), whose 1 - t >= 0.45 loses no digits. That form alone
    # cancels for small |x|: tanh(1e-8) came out 0.
    a = tl.abs(x.to(tl.float64))
    a2 = a * a
    p = 1.5918905069328964e-05 * a2 - 3.927832388331683e-05
    p = p * a2 + 9.691537956929451e-05
    p = p * a2 - 0.00023912911424355248
    p = p * a2 + 0.000590027440945586
    p = p * a2 - 0.0014558343870513183
    p = p * a2 + 0.003592128036572481
    p = p * a2 - 0.008863235529902197
    p = p * a2 + 0.021869488536155203
    p = p * a2 - 0.05396825396825397
    p = p * a2 + 0.13333333333333333
    p = p * a2 - 0.3333333333333333
    t = tl.exp(-2.0 * a)
    r = tl.where(a < 0.3, a + a * a2 * p, (1.0 - t) / (1.0 + t))
    return tl.where(x < 0, -r, r).to(x.dtype)
''',
    "_pow": '''
@triton.jit
def _pow(x, y):
    # the interpreter has no libdevice: C99's pow (libdevice's on a GPU), the magnitude from
    # exp2/log2 in float64, then C99's special values
    ax = tl.abs(x)
    mag = tl.exp2(y.to(tl.float64) * tl.log2(ax.to(tl.float64))).to(x.dtype)
    whole = tl.floor(y) == y  # the infinities too: they count as even
    # a whole exponent below 128 by repeated squaring: exact where the result is representable
    small = whole & (tl.abs(y) < 128)
    k = tl.where(small, tl.abs(y), 0.0)
    p = tl.full(ax.shape, 1.0, ax.dtype)
    sq = ax
    for _ in tl.static_range(7):
        p = tl.where(k % 2 == 1, p * sq, p)
        k = tl.floor(k * 0.5)
        sq = sq * sq
    mag = tl.where(small, tl.where(y < 0, 1.0 / p, p), mag)
    odd = whole & (tl.floor(y * 0.5) * 2.0 != y)
    negative = (x < 0) | (1.0 / x < 0)  # -0.0 too
    r = tl.where(negative & odd, -mag, mag)
    r = tl.where((x < 0) & (x > -INF) & (~whole), NAN, r)
    one = (y == 0) | (x == 1) | ((x == -1) & (tl.abs(y) == INF))
    return tl.where(one, 1.0, r)
''',
    "_shl": '''
@triton.jit
def _shl(a, k, BITS: tl.constexpr):
    # NumPy's shift: by the width or more (or by a negative amount) every bit goes out; LLVM's
    # shl gives poison there, and AMD GPUs take the amount modulo the width
    ok = (k >= 0) & (k < BITS)
    return tl.where(ok, a << tl.where(ok, k, 0), 0)
''',
    "_shr": '''
@triton.jit
def _shr(a, k, BITS: tl.constexpr):
    # as _shl; past the width a signed value keeps only its sign (0 or -1), as by BITS - 1
    ok = (k >= 0) & (k < BITS)
    return tl.where(ok | (a < 0), a >> tl.where(ok, k, BITS - 1), 0)
''',
    # NumPy's max/min propagate NaN and its argmax/argmin pick the first NaN; tl.max,
    # tl.argmax and friends compare with maxnum (NaN loses) and `>`. One tl.reduce with these
    # combines costs what tl.max does on a GPU (max.NaN is one instruction); the interpreter
    # runs them through NumPy (backend._fast_interpreter_nan_reductions).
    "_max_nan": '''
@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
''',
    "_min_nan": '''
@triton.jit
def _min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
''',
    "_argmax_nan": '''
@triton.jit
def _argmax_nan(a, i, b, j):
    a_nan = a != a
    b_nan = b != b
    first = (a > b) | (a_nan & ~b_nan) | (((a == b) | (a_nan & b_nan)) & (i < j))
    return tl.where(first, a, b), tl.where(first, i, j)
''',
    "_argmin_nan": '''
@triton.jit
def _argmin_nan(a, i, b, j):
    a_nan = a != a
    b_nan = b != b
    first = (a < b) | (a_nan & ~b_nan) | (((a == b) | (a_nan & b_nan)) & (i < j))
    return tl.where(first, a, b), tl.where(first, i, j)
''',
    # Float atomic max/min as NumPy's np.maximum.at/np.minimum.at: a NaN value makes the slot
    # NaN, a NaN slot (either sign bit) stays NaN, and -0.0 < +0.0, so the result does not
    # depend on the order the updates land in. tl.atomic_max/min on floats are integer atomics
    # on the bits (signed max for a value whose sign bit is clear, unsigned min for one whose
    # bit is set; mirrored for min): they order numbers and zeros so, but a NaN value of the
    # wrong sign loses and a NaN slot of the wrong sign is overwritten. These helpers issue the
    # same two atomics with a NaN value given the winning sign (on the bits: PTX's abs and neg
    # leave a NaN's sign unspecified), after a plain load that leaves NaN slots alone. The
    # atomics never turn a NaN of the winning sign back into a number, so the load need only
    # see NaNs that were there before the kernel (a stale number costs an atomic that keeps
    # the NaN); a NaN of the other sign stored into the slot by something else during the
    # kernel (a store, an exchange, an atomic of the other kind) can still be overwritten.
    # Cost: one load more than tl.atomic_max. A compare-exchange loop costs as much with one
    # lane per slot but retries once per competing lane when many hit one slot (a global max),
    # and tl.atomic_cas takes no mask.
    "_atomic_minmax_nan": '''
@triton.jit
def _atomic_minmax_nan(ptr, val, mask, MAX: tl.constexpr):
    IT: tl.constexpr = tl.int32 if val.dtype == tl.float32 else tl.int64
    UT: tl.constexpr = tl.uint32 if val.dtype == tl.float32 else tl.uint64
    SIGN: tl.constexpr = -0x80000000 if val.dtype == tl.float32 else -0x8000000000000000
    MAGNITUDE: tl.constexpr = 0x7FFFFFFF if val.dtype == tl.float32 else 0x7FFFFFFFFFFFFFFF
    seen = tl.load(ptr, mask=mask)
    live = seen == seen
    if mask is not None:
        live = live & mask
    signed_ptr = ptr.to(tl.pointer_type(IT), bitcast=True)
    unsigned_ptr = ptr.to(tl.pointer_type(UT), bitcast=True)
    bits = val.to(IT, bitcast=True)
    if MAX:
        key = tl.where(val == val, bits, bits & MAGNITUDE)
        low = tl.atomic_max(signed_ptr, key, mask=live & (key >= 0))
        high = tl.atomic_min(unsigned_ptr, key.to(UT, bitcast=True), mask=live & (key < 0))
    else:
        key = tl.where(val == val, bits, bits | SIGN)
        low = tl.atomic_min(signed_ptr, key, mask=live & (key >= 0))
        high = tl.atomic_max(unsigned_ptr, key.to(UT, bitcast=True), mask=live & (key < 0))
    old = tl.where(key >= 0, low, high.to(IT, bitcast=True)).to(val.dtype, bitcast=True)
    return tl.where(live, old, seen)
''',
    "_atomic_max_nan": '''
@triton.jit
def _atomic_max_nan(ptr, val, mask=None):
    return _atomic_minmax_nan(ptr, val, mask, True)
''',
    "_atomic_min_nan": '''
@triton.jit
def _atomic_min_nan(ptr, val, mask=None):
    return _atomic_minmax_nan(ptr, val, mask, False)
''',
}
ATOMICS = {"add": "tl.atomic_add", "max": "tl.atomic_max", "min": "tl.atomic_min",
           "xchg": "tl.atomic_xchg"}
# Float max/min go through the helpers above.
FLOAT_ATOMICS = {**ATOMICS, "max": "_atomic_max_nan", "min": "_atomic_min_nan"}
# What a helper's own source uses: other helpers, and constants.
HELPER_NEEDS = {"_atomic_max_nan": {"_atomic_minmax_nan"},
                "_atomic_min_nan": {"_atomic_minmax_nan"}, "_pow": {"INF", "NAN"}}
# The NaN-aware combines and the NumPy reductions the interpreter runs them as.
NAN_REDUCTIONS = {"_max_nan": "max", "_min_nan": "min", "_argmax_nan": "argmax",
                  "_argmin_nan": "argmin"}
CONSTANTS = {"INF": 'INF = tl.constexpr(float("inf"))', "NAN": 'NAN = tl.constexpr(float("nan"))'}


def with_needs(names: set[str]) -> tuple[set[str], set[str]]:
    """The helpers and constants that ``names`` (helpers and constants) need, all of them.

    Example:
        >>> with_needs({"_atomic_max_nan", "_pow"})[0] == {"_atomic_max_nan",
        ...     "_atomic_minmax_nan", "_pow"}
        True
    """
    closed, pending = set(), list(names)
    while pending:
        name = pending.pop()
        if name not in closed:
            closed.add(name)
            pending.extend(HELPER_NEEDS.get(name, ()))
    return {n for n in closed if n in HELPERS}, {n for n in closed if n in CONSTANTS}
