"""NumPy's float ``//``, ``%`` and ``**`` in WGSL, for f32 registers (float32, and float16,
which is computed in float32 as NumPy does) and f64.

WGSL has no fmod, its ``pow`` is undefined for a base <= 0 and for NaN, and ``a - b * floor(a
/ b)`` is wrong by up to ``|b|`` once ``a / b`` rounds (or is infinite). So:

- ``fmod_T`` is C's fmod, exact: the significands' remainder by integer long division, 8 bits
  of the quotient a step for f32 (11 for f64), then scaled back with ``ldexp``. A quotient
  below 2^8 (2^11) takes one step.
- ``floordiv_T``/``floormod_T`` are NumPy's ``npy_divmod`` built on it: the remainder moved
  into the divisor's sign, the quotient ``(a - mod) / b`` snapped to an integer.
- ``pow_T`` is C99's pow (NumPy's): the special values first, whole exponents up to 64 by
  repeated squaring (exact where every product is), the rest by ``exp2(b * log2(|a|))``
  (WGSL's ``pow`` for f32, the software ``exp_f64``/``log_f64`` for f64: within about
  ``|b log|a||`` ulps plus a few, since the log's rounding is scaled by b. A double-double
  log would fix that, but lavapipe reassociates float sums, which turns the error-free
  two-sum into 0.)

Example:
    >>> name, deps = helper_deps("floormod", "f32")
    >>> name, deps
    ('floormod_f32', ('fmod_f32',))
"""

from __future__ import annotations

# Bit layouts: (unsigned type, its literal suffix, significand bits, NaN, inf, sign bit, the
# exponent of the significand's unit at the smallest exponent, quotient bits per step: the
# most that keep the shifted remainder in the unsigned type).
_LAYOUT = {
    "f32": ("u32", "u", 23, "0x7fc00000u", "0x7f800000u", "0x80000000u", 150, 8),
    "f64": ("u64", "lu", 52, "0x7ff8000000000000lu", "0x7ff0000000000000lu",
            "0x8000000000000000lu", 1075, 11),
}

_FMOD = """fn fmod_{T}(a: {T}, b: {T}) -> {T} {{
    // C's fmod, exact (the module's docstring says how)
    let ua = bitcast<{U}>(a) & ~{SIGN};
    let ub = bitcast<{U}>(b) & ~{SIGN};
    if (ua >= {INF} || ub > {INF} || ub == 0{S}) {{ return bitcast<{T}>({NAN}); }}
    if (ua < ub) {{ return a; }}  // |a| < |b|, b = inf included
    let one = 1{S} << {M}u;
    let ea = max(i32(ua >> {M}u), 1);
    let eb = max(i32(ub >> {M}u), 1);
    let mb = (ub & (one - 1{S})) | select(0{S}, one, ub >= one);
    var r = (ua & (one - 1{S})) | select(0{S}, one, ua >= one);
    var d = ea - eb;
    loop {{
        let s = min(d, {STEP});
        r = (r << u32(s)) % mb;
        d = d - s;
        if (d <= 0) {{ break; }}
    }}
    let m = ldexp({T}(r), eb - {BIAS});
    return bitcast<{T}>(bitcast<{U}>(m) | (bitcast<{U}>(a) & {SIGN}));
}}"""

_FLOORDIV = """fn floordiv_{T}(a: {T}, b: {T}) -> {T} {{
    // NumPy's floor_divide (npy_divmod), from the exact remainder: a // b and a % b agree
    let sign = (bitcast<{U}>(a) ^ bitcast<{U}>(b)) & {SIGN};
    // by zero a / b, written as a * (+-inf): lavapipe drops a store of `a / 0.0` once inlined
    if (b == {Z}) {{ return a * bitcast<{T}>({INF} | (bitcast<{U}>(b) & {SIGN})); }}
    let m = fmod_{T}(a, b);
    var div = (a - m) / b;
    // `!(m == 0)`: lavapipe folds a float `!=` on NaN to false
    if (!(m == {Z}) && ((b < {Z}) != (m < {Z}))) {{ div = div - {O}; }}
    if (div == {Z}) {{ return bitcast<{T}>(sign); }}  // the sign of a / b
    let f = floor(div);
    return select(f, f + {O}, div - f > 0.5);
}}"""

_FLOORMOD = """fn floormod_{T}(a: {T}, b: {T}) -> {T} {{
    // NumPy's remainder: C's fmod moved into b's sign; a zero takes b's sign; by zero NaN
    let m = fmod_{T}(a, b);
    if (m == {Z}) {{ return bitcast<{T}>(bitcast<{U}>(b) & {SIGN}); }}
    return select(m, m + b, (b < {Z}) != (m < {Z}));
}}"""

_POWK = """fn powk_{T}(a: {T}, k: i32) -> {T} {{
    // a ** k for a whole k >= 0 by repeated squaring: exact where every product is
    var j = k;
    var x = a;
    var r = {O};
    loop {{
        if ((j & 1) != 0) {{ r = r * x; }}
        j = j >> 1u;
        if (j == 0) {{ break; }}
        x = x * x;
    }}
    return r;
}}"""

_POWI = """fn powi_{T}(a: {T}, n: i32) -> {T} {{
    // a ** n for a whole n; a ** -k as 1 / a ** k, or, where a ** k overflows though its
    // reciprocal is still a (subnormal) float, as (1 / a) ** k
    let r = powk_{T}(a, abs(n));
    if (n >= 0) {{ return r; }}
    // overflow read from the bits: NVIDIA's Vulkan compiler folds `abs(r) > MAX` to false
    if ((bitcast<{U}>(r) & ~{SIGN}) >= {INF}) {{ return powk_{T}({O} / a, -n); }}
    return {O} / r;
}}"""

_POW = """fn pow_{T}(a: {T}, b: {T}) -> {T} {{
    // C99's pow, as NumPy's
    if (b == {Z} || a == {O}) {{ return {O}; }}
    if (!(a == a) || !(b == b)) {{ return a + b; }}  // NaN (`==`: lavapipe folds NaN `!=`)
    let inf = bitcast<{T}>({INF});
    let ax = abs(a);
    let ab = abs(b);
    let whole = floor(b) == b;  // infinities too: they count as even
    let odd = whole && ab < {ODD_LIMIT} && !(fract(b * 0.5) == {Z});
    let negative = (bitcast<{U}>(a) & {SIGN}) != 0{S};  // -0.0 too
    var mag: {T};
    if (ab == inf) {{
        mag = select(select({Z}, inf, b > {Z}), select(inf, {Z}, b > {Z}), ax < {O});
        mag = select(mag, {O}, ax == {O});
    }} else if (ax == {Z} || ax == inf) {{
        mag = select(inf, {Z}, (b > {Z}) == (ax == {Z}));
    }} else if (negative && !whole) {{
        return bitcast<{T}>({NAN});  // a finite negative base, a fractional exponent
    }} else if (whole && ab <= 64.0) {{
        mag = powi_{T}(ax, i32(b));
    }} else {{
        mag = {GENERAL};
    }}
    return select(mag, -mag, negative && odd);
}}"""

_TEXT = {"fmod": _FMOD, "floordiv": _FLOORDIV, "floormod": _FLOORMOD, "powk": _POWK,
         "powi": _POWI, "pow": _POW}
_DEPS = {"fmod": (), "floordiv": ("fmod",), "floormod": ("fmod",), "powk": (),
         "powi": ("powk",), "pow": ("powi",)}
# |b| from which every float is even; f64's general case is computed in software.
_ODD_LIMIT = {"f32": "16777216.0", "f64": "9007199254740992.0lf"}
_GENERAL = {"f32": "pow(ax, b)", "f64": "exp_f64(b * log_f64(ax))"}


def helper_deps(kind: str, t: str) -> tuple[str, tuple[str, ...]]:
    """(name, the names of the helpers it calls) of helper ``kind`` for register type ``t``;
    f64's ``pow`` also calls codegen_f64's ``exp_f64`` and ``log_f64``."""
    deps = tuple(f"{d}_{t}" for d in _DEPS[kind])
    if kind == "pow" and t == "f64":
        deps += ("exp_f64", "log_f64")
    return f"{kind}_{t}", deps


def helper_text(kind: str, t: str) -> str:
    """The WGSL text of helper ``kind`` (fmod, floordiv, floormod, powk, powi, pow) for
    ``t``."""
    u, s, m, nan, inf, sign, bias, step = _LAYOUT[t]
    zero, one = ("0.0f", "1.0f") if t == "f32" else ("0.0lf", "1.0lf")
    return _TEXT[kind].format(
        T=t, U=u, S=s, M=m, NAN=nan, INF=inf, SIGN=sign, BIAS=bias, STEP=step, Z=zero, O=one,
        ODD_LIMIT=_ODD_LIMIT[t], GENERAL=_GENERAL[t])
