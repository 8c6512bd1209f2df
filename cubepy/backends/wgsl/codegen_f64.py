"""float64 transcendental functions in WGSL, written with f64 +-*/, floor, fma and bit casts.

WebGPU adapters either lack float64 math or get it wrong (lavapipe's exp/log/sin/pow/tanh on
f64 return garbage), so the ``wgsl`` target computes these in software: Cody-Waite range
reduction and Taylor (or atanh) polynomials, accurate to a few ulp on the ranges kernels use.
"""

from __future__ import annotations

import math


def _lit(v: float) -> str:
    return f"{v!r}lf"


def _horner(var: str, y: str, coeffs: list[float], indent: str = "    ") -> str:
    """Statements computing sum(coeffs[i] * y**i) into ``var`` (Horner's rule, fma)."""
    lines = [f"{indent}var {var} = {_lit(coeffs[-1])};"]
    lines += [f"{indent}{var} = fma({var}, {y}, {_lit(c)});" for c in reversed(coeffs[:-1])]
    return "\n".join(lines)


_EXP = [1.0 / math.factorial(k) for k in range(14)]
_SIN = [(-1) ** (j + 1) / math.factorial(2 * j + 3) for j in range(10)]
_COS = [(-1) ** (j + 1) / math.factorial(2 * j + 2) for j in range(10)]
_LOG = [1.0 / (2 * j + 1) for j in range(12)]

F64_HELPERS: dict[str, tuple[tuple[str, ...], str]] = {
    # name: (helpers it calls, WGSL text)
    "exp_f64": ((), f"""fn exp_f64(x: f64) -> f64 {{
    if (!(x == x)) {{ return x; }}  // NaN: lavapipe folds a float `!=` on NaN to false
    if (x > 709.782712893384lf) {{ return bitcast<f64>(0x7ff0000000000000li); }}
    if (x < -745.1332191019412lf) {{ return 0.0lf; }}
    // x = n ln2 + r, |r| <= ln2 / 2; exp(r) by Taylor to r^13
    let n = floor(x * 1.4426950408889634lf + 0.5lf);
    let r = (x - n * 6.93147180369123816490e-01lf) - n * 1.90821492927058770002e-10lf;
{_horner("p", "r", _EXP)}
    let ni = i64(n);
    let h = ni / 2li;
    return p * bitcast<f64>((h + 1023li) << 52u) * bitcast<f64>((ni - h + 1023li) << 52u);
}}"""),
    "expm1_f64": (("exp_f64",), """fn expm1_f64(x: f64) -> f64 {
    if (abs(x) >= 0.5lf) { return exp_f64(x) - 1.0lf; }
    var term = x;
    var sum = x;
    for (var k = 2; k < 20; k++) { term = term * x / f64(k); sum = sum + term; }
    return sum;
}"""),
    "log_f64": ((), f"""fn log_f64(x_in: f64) -> f64 {{
    if (!(x_in == x_in) || x_in < 0.0lf) {{ return bitcast<f64>(0x7ff8000000000000li); }}
    if (x_in == 0.0lf) {{ return bitcast<f64>(-4503599627370496li); }}
    if (x_in > 1.7976931348623157e308lf) {{ return x_in; }}
    var x = x_in;
    var e = 0li;
    if (x < 2.2250738585072014e-308lf) {{ x = x * 18014398509481984.0lf; e = -54li; }}
    // x = m 2^e with sqrt(1/2) < m <= sqrt(2); log(m) = 2 atanh(s), s = (m-1)/(m+1)
    let bits = bitcast<i64>(x);
    e = e + ((bits >> 52u) & 2047li) - 1023li;
    var m = bitcast<f64>((bits & 4503599627370495li) | 4607182418800017408li);
    if (m > 1.4142135623730951lf) {{ m = m * 0.5lf; e = e + 1li; }}
    let s = (m - 1.0lf) / (m + 1.0lf);
    let s2 = s * s;
{_horner("p", "s2", _LOG)}
    let fe = f64(e);
    return fe * 6.93147180369123816490e-01lf + (fe * 1.90821492927058770002e-10lf + 2.0lf * s * p);
}}"""),
    "sincos_f64": ((), f"""fn sincos_f64(x: f64, want_cos: bool) -> f64 {{
    if (abs(x) > 1.0e15lf || !(x == x)) {{ return bitcast<f64>(0x7ff8000000000000li); }}
    // x = k pi/2 + r, |r| <= pi/4 (pi/2 in three parts), then Taylor to r^21
    let k = floor(x * 0.6366197723675814lf + 0.5lf);
    let r = ((x - k * 1.57079632673412561417lf) - k * 6.07710050630396597660e-11lf)
        - k * 2.02226624871116645580e-21lf;
    let r2 = r * r;
{_horner("ps", "r2", _SIN)}
{_horner("pc", "r2", _COS)}
    let sinr = r + r * r2 * ps;
    let cosr = 1.0lf + r2 * pc;
    var q = i32(i64(k) & 3li);
    if (want_cos) {{ q = (q + 1) & 3; }}
    if (q == 0) {{ return sinr; }}
    if (q == 1) {{ return cosr; }}
    if (q == 2) {{ return -sinr; }}
    return -cosr;
}}"""),
    "tanh_f64": (("exp_f64", "expm1_f64"), """fn tanh_f64(x: f64) -> f64 {
    let a = abs(x);
    var t: f64;
    if (a < 0.25lf) {
        let y = expm1_f64(2.0lf * a);
        t = y / (y + 2.0lf);
    } else if (a > 20.0lf) {
        t = 1.0lf;
    } else {
        let y = exp_f64(-2.0lf * a);
        t = (1.0lf - y) / (1.0lf + y);
    }
    return select(t, -t, x < 0.0lf);
}"""),
    "erf_f64": (("exp_f64",), """fn erf_f64(x: f64) -> f64 {
    let a = abs(x);
    var r: f64;
    if (a < 1.5lf) {
        // 2/sqrt(pi) exp(-a^2) a sum_n (2a^2)^n / (1 3 5 ... (2n+1)), nested from the 32nd
        // term: positive terms, within ~3 ulp. The alternating Maclaurin series cancelled
        // (25 ulp at 2.3); exp(-a2) and the sum share a2's rounding, which mostly cancels.
        let a2 = a * a;
        let t = 2.0lf * a2;
        var s = 1.0lf;
        for (var k = 32; k >= 1; k--) { s = 1.0lf + s * t / f64(2 * k + 1); }
        r = exp_f64(-a2) * (a * s) * 1.1283791670955126lf;
    } else if (a > 6.0lf) {
        r = 1.0lf;
    } else {  // 1 - erfc, erfc by its continued fraction (within an ulp from 1.5 on)
        var k = a;
        for (var n = 90; n >= 1; n--) { k = a + (f64(n) * 0.5lf) / k; }
        r = 1.0lf - exp_f64(-a * a) * 0.5641895835477563lf / k;
    }
    return select(r, -r, x < 0.0lf);
}"""),
    # exp(x) / (1 + exp(x)) below 0, where 1 / (1 + exp(-x)) overflows to 0 for results in
    # the subnormal range
    "sigmoid_f64": (("exp_f64",), """fn sigmoid_f64(x: f64) -> f64 {
    let e = exp_f64(-abs(x));
    return select(e / (1.0lf + e), 1.0lf / (1.0lf + e), x >= 0.0lf);
}"""),
}


def f64_call(kind: str, args: list[str], use) -> str:
    """The expression of float64 math ``kind`` (an Op value) on ``args``; ``use(name)``
    registers a helper function the expression calls."""
    x = args[0]
    if kind == "exp":
        return f"{use('exp_f64')}({x})"
    if kind == "exp2":
        return f"{use('exp_f64')}({x} * 0.6931471805599453lf)"
    if kind == "log":
        return f"{use('log_f64')}({x})"
    if kind == "log2":
        return f"({use('log_f64')}({x}) * 1.4426950408889634lf)"
    if kind == "sin":
        return f"{use('sincos_f64')}({x}, false)"
    if kind == "cos":
        return f"{use('sincos_f64')}({x}, true)"
    if kind == "tanh":
        return f"{use('tanh_f64')}({x})"
    if kind == "erf":
        return f"{use('erf_f64')}({x})"
    if kind == "sigmoid":
        return f"{use('sigmoid_f64')}({x})"
    raise KeyError(kind)
