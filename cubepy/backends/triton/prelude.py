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
    "_bf16_bits": '''
@triton.jit
def _bf16_bits(x):
    # float32 -> the int16 pattern of the nearest bfloat16, for the interpreter's stores and
    # bitcasts (its own cast reads subnormals as 0); a NaN (which _round_bf16 leaves as it is)
    # keeps its sign and its payload's high bits, and stays a NaN if those are all 0
    high = _round_bf16(x).to(tl.uint32, bitcast=True) >> 16
    return tl.where((x != x) & ((high & 0x7F) == 0), high | 0x40, high).to(tl.int16)
''',
    "_bf16_value": '''
@triton.jit
def _bf16_value(bits):
    # an int16 bfloat16 pattern -> its value in float32, exactly: subnormals and NaN payloads
    # included (the interpreter's own cast reads subnormals as 0)
    return (bits.to(tl.int32) << 16).to(tl.float32, bitcast=True)
''',
    "_sigmoid": '''
@triton.jit
def _sigmoid(x):
    # exp(x) / (1 + exp(x)) below 0: tl.sigmoid's 1 / (1 + exp(-x)) overflows to 0 there
    # where the result is a subnormal (below about -87.3 in float32)
    e = tl.exp(-tl.abs(x))
    return tl.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
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
    # the interpreter has no libdevice: C99's pow (libdevice's on a GPU), the magnitude in
    # float64, then C99's special values. exp2(y log2|x|) is off by |y log2 x| ulps of float64
    # (up to ~770 near overflow), which a float32 result hides; a float64 one takes log|x| in
    # double-double (_log_dd) instead, within 2 ulp. Both give the specials (zeros,
    # infinities, NaN, results past the range) from exp2 and log2.
    ax = tl.abs(x).to(tl.float64)
    y64 = y.to(tl.float64)
    z = y64 * tl.log2(ax)
    mag = tl.exp2(z)
    if x.dtype == tl.float64:
        # not 0, inf or NaN: _log_dd's range, exp's too; and no |y| past 1e300, where
        # _two_prod's splitting overflows (z is finite there only for |x| = 1: exp2 gives 1)
        finite = (tl.abs(z) < 1100.0) & (tl.abs(y64) < 1e300)
        log_hi, log_lo = _log_dd(tl.where(finite, ax, 1.0))
        yc = tl.where(finite, y64, 0.0)
        z_hi, z_lo = _two_prod(yc, log_hi)
        z_hi, z_lo = _two_sum(z_hi, z_lo + yc * log_lo)
        e = tl.exp(z_hi)
        # past float64's range e is inf, and e * z_lo of a negative z_lo -inf: inf it stays
        mag = tl.where(finite, tl.where(e == float("inf"), e, e + e * z_lo), mag)
    whole = tl.floor(y) == y  # the infinities too: they count as even
    # a whole exponent below 128 by repeated squaring in float64 (exact where every product
    # is): |x| ** -k as 1 / |x| ** k, or, where |x| ** k overflows though its reciprocal is
    # still a (subnormal) float64, as (1 / |x|) ** k. The reciprocal alone gave 0 for int8
    # (-28) ** -28 (3.0e-41 in float32), whose float32 28th power overflows.
    small = whole & (tl.abs(y) < 128)
    k = tl.where(small, tl.abs(y64), 0.0)
    up = tl.full(ax.shape, 1.0, tl.float64)
    down = up
    sq = ax
    inv = 1.0 / ax
    for _ in tl.static_range(7):
        bit = k % 2 == 1
        up = tl.where(bit, up * sq, up)
        down = tl.where(bit, down * inv, down)
        k = tl.floor(k * 0.5)
        sq = sq * sq
        inv = inv * inv
    powk = tl.where(y < 0, tl.where(up == INF, down, 1.0 / up), up)
    mag = tl.where(small, powk, mag).to(x.dtype)
    odd = whole & (tl.floor(y * 0.5) * 2.0 != y)
    negative = (x < 0) | (1.0 / x < 0)  # -0.0 too
    r = tl.where(negative & odd, -mag, mag)
    r = tl.where((x < 0) & (x > -INF) & (~whole), float("nan"), r)
    one = (y == 0) | (x == 1) | ((x == -1) & (tl.abs(y) == INF))
    return tl.where(one, 1.0, r)
''',
    # Double-double arithmetic (a value as hi + lo, |lo| <= half an ulp of hi) for _pow:
    # Knuth's two-sum and Dekker's product (Veltkamp's split, no fma: exact for |a|, |b|
    # below 2^996), each exact.
    "_two_sum": '''
@triton.jit
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)
''',
    "_two_prod": '''
@triton.jit
def _two_prod(a, b):
    p = a * b
    ca = 134217729.0 * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = 134217729.0 * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
''',
    "_log_dd": '''
@triton.jit
def _log_dd(x):
    # log(x) of a finite x > 0 as hi + lo, within ~2^-62 relative: x = m 2^e with sqrt(1/2) <
    # m <= sqrt(2), m near c = 2^(j/4) (j = -2..2), log(m) = log(c) + 2 atanh(s) with s =
    # (m - c) / (m + c) in double-double; |s| < 0.044 leaves the series' tail past 2s under
    # 2^-10 of it, so its float64 rounding costs ~2^-62.
    tiny = x < 2.2250738585072014e-308
    x = tl.where(tiny, x * 18014398509481984.0, x)
    bits = x.to(tl.int64, bitcast=True)
    e = ((bits >> 52) & 2047) - 1023 - tl.where(tiny, 54, 0)
    m = ((bits & 0xFFFFFFFFFFFFF) | 0x3FF0000000000000).to(tl.float64, bitcast=True)
    big = m > 1.4142135623730951
    m = tl.where(big, m * 0.5, m)
    e = tl.where(big, e + 1, e)
    # c and log(c) (hi + lo); the bounds are 2^(-3/8), 2^(-1/8), 2^(1/8), 2^(3/8). A where
    # of two float literals is float32: each starts from a float64 tile.
    zero = tl.zeros(m.shape, tl.float64)
    c = tl.where(m > 1.0905077326652577, 1.189207115002721, zero + 1.0)
    c = tl.where(m > 1.2968395546510096, 1.4142135623730951, c)
    c = tl.where(m <= 0.9170040432046712, 0.8408964152537145, c)
    c = tl.where(m <= 0.7711054127039704, 0.7071067811865476, c)
    lc_hi = tl.where(m > 1.0905077326652577, 0.1732867951399863, zero)
    lc_hi = tl.where(m > 1.2968395546510096, 0.3465735902799727, lc_hi)
    lc_hi = tl.where(m <= 0.9170040432046712, -0.17328679513998638, lc_hi)
    lc_hi = tl.where(m <= 0.7711054127039704, -0.3465735902799726, lc_hi)
    lc_lo = tl.where(m > 1.0905077326652577, 6.856931399313918e-20, zero)
    lc_lo = tl.where(m > 1.2968395546510096, 2.4442169414592898e-17, lc_lo)
    lc_lo = tl.where(m <= 0.9170040432046712, 9.61928934371463e-19, lc_lo)
    lc_lo = tl.where(m <= 0.7711054127039704, 1.2517012761299022e-18, lc_lo)
    num = m - c  # exact: m and c are within a factor of 2
    den, den_lo = _two_sum(m, c)
    s = num / den
    p, p_lo = _two_prod(s, den)
    s_lo = (((num - p) - p_lo) - s * den_lo) / den
    s2 = s * s
    t = 1.0 / 15.0
    t = t * s2 + 1.0 / 13.0
    t = t * s2 + 1.0 / 11.0
    t = t * s2 + 1.0 / 9.0
    t = t * s2 + 1.0 / 7.0
    t = t * s2 + 1.0 / 5.0
    t = t * s2 + 1.0 / 3.0
    fe = e.to(tl.float64)
    # ln2 in two parts (fdlibm's): fe * ln2_hi is exact for |e| < 2^21
    hi, lo = _two_sum(fe * 6.93147180369123816490e-01, lc_hi)
    hi, lo2 = _two_sum(hi, 2.0 * s)
    lo = lo + lo2 + (fe * 1.90821492927058770002e-10 + lc_lo + 2.0 * s_lo + 2.0 * s * s2 * t)
    return _two_sum(hi, lo)
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
    "_or": '''
@triton.jit
def _or(a, b):
    return a | b
''',
    # Plain Python, not @triton.jit: the interpreter runs a kernel as Python, so this sees the
    # lanes' values (arrays of its handles) and can stop the launch
    "_interpreter_assert": '''
def _interpreter_assert(cond, mask, message):
    import numpy

    def lanes(value):
        return numpy.asarray(value.handle.data if hasattr(value, "handle") else value)

    held = lanes(cond) if mask is None else lanes(cond) | ~lanes(mask).astype(bool)
    if not held.all():
        raise AssertionError(message)
''',
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
    # A float compare-and-swap on the value's bits (what the hardware compares anyway):
    # Triton before 3.9 lowers tl.atomic_cas on floats for NVIDIA only (on AMD, LLVM's
    # cmpxchg takes integers, and compiling for gfx942 fails).
    "_atomic_cas_bits": '''
@triton.jit
def _atomic_cas_bits(ptr, cmp, val):
    BITS: tl.constexpr = val.dtype.primitive_bitwidth
    IT: tl.constexpr = tl.int16 if BITS == 16 else (tl.int32 if BITS == 32 else tl.int64)
    got = tl.atomic_cas(ptr.to(tl.pointer_type(IT), bitcast=True), cmp.to(IT, bitcast=True),
                        val.to(IT, bitcast=True))
    return got.to(val.dtype, bitcast=True)
''',
}
ATOMICS = {"add": "tl.atomic_add", "max": "tl.atomic_max", "min": "tl.atomic_min",
           "xchg": "tl.atomic_xchg", "and": "tl.atomic_and", "or": "tl.atomic_or",
           "xor": "tl.atomic_xor"}
# Float max/min go through the helpers above.
FLOAT_ATOMICS = {**ATOMICS, "max": "_atomic_max_nan", "min": "_atomic_min_nan"}
# What a helper's own source uses: other helpers, and constants.
HELPER_NEEDS = {"_atomic_max_nan": {"_atomic_minmax_nan"},
                "_bf16_bits": {"_round_bf16"},
                "_atomic_min_nan": {"_atomic_minmax_nan"},
                "_pow": {"INF", "_log_dd", "_two_sum", "_two_prod"},
                "_log_dd": {"_two_sum", "_two_prod"}}
# The NaN-aware combines and the NumPy reductions the interpreter runs them as.
NAN_REDUCTIONS = {"_max_nan": "max", "_min_nan": "min", "_argmax_nan": "argmax",
                  "_argmin_nan": "argmin"}
# (no NaN constant: Triton checks at each launch that the globals a kernel read are unchanged,
# and a NaN never equals itself; generated code writes float("nan") where it needs one)
CONSTANTS = {"INF": 'INF = tl.constexpr(float("inf"))'}


def with_needs(names: set[str]) -> tuple[set[str], set[str]]:
    """The helpers and constants that ``names`` (helpers and constants) need, all of them.

    Example:
        >>> with_needs({"_atomic_max_nan", "_pow"})[0] == {"_atomic_max_nan",
        ...     "_atomic_minmax_nan", "_pow", "_log_dd", "_two_sum", "_two_prod"}
        True
    """
    closed, pending = set(), list(names)
    while pending:
        name = pending.pop()
        if name not in closed:
            closed.add(name)
            pending.extend(HELPER_NEEDS.get(name, ()))
    return {n for n in closed if n in HELPERS}, {n for n in closed if n in CONSTANTS}
