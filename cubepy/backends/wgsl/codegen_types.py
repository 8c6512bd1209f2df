"""WGSL spellings of cubepy dtypes: register and storage types, literals, helper functions.

Registers: float16 values live in ``f32`` registers (as on the cpu target: they are rounded at
casts and stores), bool in ``bool``, pointers are ``i32`` element offsets into their binding.
Storage follows ``buffers.py``: bool is one ``u32`` per element, float16 is ``f16``.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...ir import Type
from ...ir import dtypes as dt

REG = {
    "bool": "bool", "int32": "i32", "uint32": "u32", "int64": "i64", "float32": "f32",
    "float16": "f32", "float64": "f64",
}
STORAGE = {
    "bool": "u32", "int32": "i32", "uint32": "u32", "int64": "i64", "float32": "f32",
    "float16": "f16", "float64": "f64",
}

# WGSL keywords and reserved words a kernel argument could be named after (others get a suffix),
# and the predeclared names a declaration would shadow: address spaces and access modes (an
# argument named `uniform` broke `var<uniform>`), type aliases and builtin functions.
RESERVED = frozenset("""
alias array atomic bitcast bool break case const const_assert continue continuing default
diagnostic discard else enable f16 f32 f64 false fn for if i32 i64 let loop mat2x2 override
ptr requires return sampler struct switch texture_1d true u32 u64 var vec2 vec3 vec4 while
NULL Self abstract active alignas alignof as asm asm_fragment async attribute auto await become
cast catch class co_await co_return co_yield coherent column_major common compile
compile_fragment concept const_cast consteval constexpr constinit crate debugger decltype delete
demote demote_to_helper do dynamic_cast enum explicit export extends extern external fallthrough
filter final finally friend from fxgroup get goto groupshared highp impl implements import inline
instanceof interface layout lowp macro macro_rules match mediump meta mod module move mut
mutable namespace new nil noexcept noinline nointerpolation non_coherent noncoherent
noperspective null nullptr of operator package packoffset partition pass patch pixelfragment
precise precision premerge priv protected pub public readonly ref regardless register
reinterpret_cast require resource restrict self set shared sizeof smooth snorm static
static_assert static_cast std subroutine super target template this thread_local throw trait
try type typedef typeid typename typeof union unless unorm unsafe unsized use using varying
virtual volatile wgsl where with writeonly yield
main lid params wid nwg
function private workgroup uniform storage read write read_write
vec2f vec3f vec4f vec2h vec3h vec4h vec2i vec3i vec4i vec2u vec3u vec4u mat2x3 mat2x4 mat3x2
mat3x3 mat3x4 mat4x2 mat4x3 mat4x4
abs acos acosh all any arrayLength asin asinh atan atan2 atanh ceil clamp cos cosh
countLeadingZeros countOneBits countTrailingZeros cross degrees determinant distance dot exp
exp2 extractBits faceForward firstLeadingBit firstTrailingBit floor fma fract frexp insertBits
inverseSqrt ldexp length log log2 max min mix modf normalize pow quantizeToF16 radians reflect
refract reverseBits round saturate select sign sin sinh smoothstep sqrt step tan tanh transpose
trunc atomicLoad atomicStore atomicAdd atomicSub atomicMax atomicMin atomicAnd atomicOr
atomicXor atomicExchange atomicCompareExchangeWeak storageBarrier workgroupBarrier
workgroupUniformLoad
""".split())


def reg(t: Type | dt.DType) -> str:
    """The WGSL type of a value in registers (pointers are i32 offsets)."""
    if isinstance(t, Type):
        if t.is_ptr:
            return "i32"
        t = t.dtype
    return REG[t.name]


def storage(dtype: dt.DType) -> str:
    return STORAGE[dtype.name]


def ident(name: str) -> str:
    """``name`` as a WGSL identifier (reserved words and odd characters replaced)."""
    base = re.sub(r"\W", "_", name) or "v"
    if base[0].isdigit():
        base = "v" + base
    if base.startswith("__"):
        base = "u" + base
    if base in RESERVED:
        base += "_"
    return base


def _f32_text(value: float) -> str:
    v = float(np.float32(value))
    if math.isnan(v):
        return "bitcast<f32>(0x7fc00000u)"
    if math.isinf(v):
        return "bitcast<f32>(0x7f800000u)" if v > 0 else "bitcast<f32>(0xff800000u)"
    text = repr(v)
    if "e" not in text and "." not in text:
        text += ".0"
    return f"{text}f"


def _f64_text(value: float) -> str:
    v = float(value)
    if math.isnan(v):
        return "bitcast<f64>(0x7ff8000000000000lu)"
    if math.isinf(v):
        return "bitcast<f64>(0x7ff0000000000000lu)" if v > 0 else \
            "bitcast<f64>(0xfff0000000000000lu)"
    text = repr(v)
    if "e" not in text and "." not in text:
        text += ".0"
    return f"{text}lf"


def literal(value: object, dtype: dt.DType) -> str:
    """A WGSL expression of ``value`` in the register type of ``dtype``."""
    name = dtype.name
    if name == "bool":
        return "true" if bool(value) else "false"
    if name == "float32":
        return _f32_text(float(value))
    if name == "float16":  # rounded to float16 once, kept in an f32 register
        return _f32_text(float(np.float16(float(value))))
    if name == "float64":
        return _f64_text(float(value))
    v = int(value)
    if name == "int32":
        v = (v + 2**31) % 2**32 - 2**31
        return f"{v}i" if v > -(2**31) else "i32(-2147483647i - 1i)"
    if name == "uint32":
        return f"{v % 2**32}u"
    if name == "int64":
        v = (v + 2**63) % 2**64 - 2**63
        return f"{v}li" if v > -(2**63) else "i64(-9223372036854775807li - 1li)"
    raise TypeError(f"no WGSL literal for {name}")


def zero(t: Type | dt.DType) -> str:
    dtype = t.dtype if isinstance(t, Type) else t
    if isinstance(t, Type) and t.is_ptr:
        return "0i"
    return literal(0, dtype)


def lowest(dtype: dt.DType) -> str:
    """The identity of max: -inf or the smallest integer."""
    if dtype.is_float:
        return literal(float("-inf"), dtype)
    if dtype.is_bool:
        return "false"
    if dtype.kind == "u":
        return literal(0, dtype)
    return literal(-(2 ** (dtype.bits - 1)), dtype)


def highest(dtype: dt.DType) -> str:
    """The identity of min: +inf or the largest integer."""
    if dtype.is_float:
        return literal(float("inf"), dtype)
    if dtype.is_bool:
        return "true"
    if dtype.kind == "u":
        return literal(2**dtype.bits - 1, dtype)
    return literal(2 ** (dtype.bits - 1) - 1, dtype)


ROUND_TO_F16 = "round_to_f16_f32"


def round_to_f16(expr: str) -> str:
    """The f32 ``expr`` rounded to float16's precision, kept in f32: a call of the helper
    ``ROUND_TO_F16`` (``HELPERS["round_to_f16"]``), which the module adds wherever its name is
    used. A call, not the expression inline: the rounding reads its operand eight times, and
    nested casts would repeat the text of the inner ones eightfold each."""
    return f"{ROUND_TO_F16}({expr})"


def convert(expr: str, src: dt.DType, dst: dt.DType) -> str:
    """``expr`` (a register value of ``src``) converted to ``dst`` as the cpu target does:
    floats truncate toward zero into integers, anything nonzero (NaN too) is true."""
    if src == dst:
        return expr
    s, d = REG[src.name], REG[dst.name]
    if dst.is_bool:
        if src.is_float:  # lavapipe folds a float `!=` to false on NaN; NaN is true
            return f"(!({expr} == {literal(0, src)}))"
        return f"({expr} != {literal(0, src)})"
    if src.is_bool:
        return f"select({literal(0, dst)}, {literal(1, dst)}, {expr})"
    if dst.name == "float16":  # round to float16, keep in f32
        return round_to_f16(expr if s == "f32" else f"f32({expr})")
    if s == d:
        return expr
    if s == "u32" and d == "i64":  # naga sign-extends u32 -> i64
        return f"(i64({expr}) & 4294967295li)"
    if s == "i32" and d == "i64":
        # lavapipe compares a sign-extended i32 with a constant wrongly (`i64(x) >= 0li` is
        # always true, so //, %, shifts and where went wrong); zero-extending x with its sign
        # bit flipped and taking the bias off is the same number by a route it gets right
        return f"(bitcast<i64>(u64(bitcast<u32>({expr}) ^ 2147483648u)) - 2147483648li)"
    return f"{d}({expr})"


def to_storage(expr: str, dtype: dt.DType) -> str:
    if dtype.is_bool:
        return f"select(0u, 1u, {expr})"
    if dtype.name == "float16":
        return f"f16({expr})"
    return expr


def from_storage(expr: str, dtype: dt.DType) -> str:
    if dtype.is_bool:
        return f"({expr} != 0u)"
    if dtype.name == "float16":
        return f"f32({expr})"
    return expr


# Helper functions emitted once per module when used; `{T}` is the register type.
HELPERS = {
    # Python's floor semantics from the remainder a - q*b alone, so the result is right
    # whichever way a driver rounds the quotient (NVIDIA's Vulkan and lavapipe differed).
    # By zero 0, as NumPy (WGSL's own `/` gives the dividend, its `%` 0). Unsigned types use
    # them too: their sign tests are always false.
    "floordiv": """fn floordiv_{T}(a: {T}, b: {T}) -> {T} {{
    if (b == {Z}) {{ return {Z}; }}
    let q = a / b;
    let r = a - q * b;
    if ((r != {Z}) && ((r < {Z}) != (b < {Z}))) {{ return q - {O}; }}
    return q;
}}""",
    "floormod": """fn floormod_{T}(a: {T}, b: {T}) -> {T} {{
    if (b == {Z}) {{ return {Z}; }}
    let r = a - (a / b) * b;
    if ((r != {Z}) && ((r < {Z}) != (b < {Z}))) {{ return r + b; }}
    return r;
}}""",
    # NumPy's shifts: by the width or more (or by a negative amount) every bit goes out, where
    # WGSL takes the amount modulo the width (`1 << 33` would be 2).
    "shl": """fn shl_{T}(a: {T}, k: {T}) -> {T} {{
    return select({Z}, a << u32(k), k >= {Z} && k < {W});
}}""",
    "shr": """fn shr_{T}(a: {T}, k: {T}) -> {T} {{
    return select(select({Z}, a >> {W1}u, a < {Z}), a >> u32(k), k >= {Z} && k < {W});
}}""",
    # float32 tanh: the adapter's cancels for small |x| (lavapipe: tanh(1e-8) = 3e-8). Below
    # |x| = 0.3 the Taylor series to x^11 (the next term is under 2e-9 of the sum); above,
    # (1 - t) / (1 + t) with t = exp(-2|x|) <= 1, whose 1 - t >= 0.45 loses no digits.
    "tanh": """fn tanh_{T}(x: {T}) -> {T} {{
    let a = abs(x);
    let a2 = a * a;
    let p = -0.33333333 + a2 * (0.13333333 + a2 * (-0.053968254 + a2 * (0.021869489
        + a2 * -0.0088632355)));
    let t = exp(-2.0 * a);
    let r = select(({O} - t) / ({O} + t), a + a * a2 * p, a < 0.3);
    return select(r, -r, x < {Z});
}}""",
    # The high word of the 64-bit product of two 32-bit bit patterns, from 16-bit halves (WGSL
    # has no 64-bit integers everywhere): `mid` adds at most 0xffff + 0xffff + 0xfffe0001,
    # which fits in 32 bits, and the high word cannot overflow.
    "umulhi": """fn umulhi_{T}(a: {T}, b: {T}) -> {T} {{
    let x = bitcast<u32>(a);
    let y = bitcast<u32>(b);
    let x0 = x & 0xffffu;
    let x1 = x >> 16u;
    let y0 = y & 0xffffu;
    let y1 = y >> 16u;
    let cross = x1 * y0;
    let mid = ((x0 * y0) >> 16u) + (cross & 0xffffu) + x0 * y1;
    return bitcast<{T}>(x1 * y1 + (cross >> 16u) + (mid >> 16u));
}}""",
    # float32 erf. Below |x| = 0.5 the Maclaurin series to x^11 (the next term is under 3e-8
    # of the sum): 1 - erfc cancels there (erf(9.4e-6) was 2 % off). Above, |error| < 1.2e-7
    # (Numerical Recipes' erfc by a Chebyshev fit) on values of 0.52 or more.
    "erf": """fn erf_{T}(x: {T}) -> {T} {{
    let x2 = x * x;
    let series = 1.1283791671 * x * ({O} + x2 * (-0.33333333 + x2 * (0.1 + x2 * (-0.023809524
        + x2 * (0.0046296296 + x2 * -0.00075757576)))));
    let z = abs(x);
    let t = {O} / ({O} + 0.5 * z);
    let p = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277))))))));
    let r = {O} - t * exp(p);
    return select(select(-r, r, x >= {Z}), series, z < 0.5);
}}""",
    # exp(x) / (1 + exp(x)) below 0, where 1 / (1 + exp(-x)) overflows to 0 for results in
    # the subnormal range (where the adapter keeps subnormals)
    "sigmoid": """fn sigmoid_{T}(x: {T}) -> {T} {{
    let e = exp(-abs(x));
    return select(e / ({O} + e), {O} / ({O} + e), x >= {Z});
}}""",
    # Float16's precision (to nearest, ties to even), kept in f32. Neither `f32(f16(x))` nor a
    # pack to 16 bits and back: NVIDIA's Vulkan driver folds those to `x`. In integers instead:
    # float16's normal range drops 13 of f32's 23 fraction bits (a carry moves into the
    # exponent, as it should); its subnormals are multiples of 2^-24, rounded by `round` after
    # an exact scaling; from 65520 on the value rounds to infinity; NaN stays NaN. The ranges
    # are told apart on the magnitude's bits (2^-14, 65520, infinity): with float compares
    # (`abs(x) < ...`, `!(x == x)`) a NaN came out as -0.0 on NVIDIA's driver (run 191).
    "round_to_f16": """fn round_to_f16_{T}(x: f32) -> f32 {{
    let bits = bitcast<u32>(x);
    let magnitude = bits & 0x7fffffffu;
    let normal = bitcast<f32>((bits + 0xfffu + ((bits >> 13u) & 1u)) & 0xffffe000u);
    let tiny = round(x * 16777216.0f) * 5.9604645e-8f;
    let infinity = bitcast<f32>((bits & 0x80000000u) | 0x7f800000u);
    let finite = select(select(normal, tiny, magnitude < 0x38800000u), infinity,
                        magnitude >= 0x477ff000u);
    return select(finite, x, magnitude > 0x7f800000u);
}}""",
}


def helper(kind: str, t: str) -> tuple[str, str]:
    """(function name, WGSL text) of a helper for register type ``t``."""
    zero_, one = {"i32": ("0i", "1i"), "u32": ("0u", "1u"), "i64": ("0li", "1li"),
                  "f32": ("0.0f", "1.0f"), "f64": ("0.0lf", "1.0lf")}[t]
    bits = 64 if "64" in t else 32
    width = f"{bits}{zero_[1:]}"  # the bit width as a literal of type t: 32i, 32u, 64li
    return f"{kind}_{t}", HELPERS[kind].format(T=t, Z=zero_, O=one, W=width, W1=bits - 1)
