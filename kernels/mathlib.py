"""Math the language does not have as builtins, written in cubepy (``@cube.func``, inlined).

Every function takes a float32 or float64 tile and returns one of the same dtype; the
algorithms avoid cancellations that fast-math reassociation could undo, so they hold on every
target. Accuracy: a few ulp in float32; float64 results within about 1e-14 relative.

Example (inside a kernel):
    y = mathlib.log1p(v)
"""

from __future__ import annotations

import cubepy as cube

PI = 3.141592653589793
HALF_PI = 1.5707963267948966
QUARTER_PI = 0.7853981633974483
TAN_3PI_8 = 2.414213562373095
TAN_PI_8 = 0.41421356237309503
LN10_INV = 0.4342944819032518


@cube.func
def log1p(x):
    # Near 0 a Taylor series (error below x**8 / 8); elsewhere log(1 + x) loses at most
    # eps / |x| < 1e-14 relative for float64 (and rounds fine for float32).
    small = cube.abs(x) < 0.01
    series = x * (1.0 + x * (-0.5 + x * (1.0 / 3.0 + x * (-0.25 + x * (0.2 + x * (
        -1.0 / 6.0 + x * (1.0 / 7.0)))))))
    return cube.where(small, series, cube.log(1.0 + cube.where(small, 0.0, x)))


@cube.func
def expm1(x):
    small = cube.abs(x) < 0.01
    series = x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (
        1.0 / 720.0 + x * (1.0 / 5040.0)))))))
    return cube.where(small, series, cube.exp(cube.where(small, 0.0, x)) - 1.0)


@cube.func
def tan(x):
    return cube.sin(x) / cube.cos(x)


@cube.func
def atan(x):
    # Range reduction to |t| <= tan(pi/8), then a short odd polynomial (float32 accuracy);
    # float64 takes one Newton step on tan(y) = x, which doubles the correct digits.
    a = cube.abs(x)
    big = a > TAN_3PI_8
    mid = a > TAN_PI_8
    t = cube.where(big, -1.0 / cube.maximum(a, 1e-30), cube.where(mid, (a - 1.0) / (a + 1.0), a))
    base = cube.where(big, HALF_PI, cube.where(mid, QUARTER_PI, 0.0))
    z = t * t
    y = base + (((0.0805374449538 * z - 0.138776856032) * z + 0.199777106478) * z
                - 0.333329491539) * z * t + t
    if x.dtype == cube.float64:
        c = cube.cos(y)
        y = y - (cube.sin(y) * c - a * c * c)
    return cube.where(x < 0.0, -y, y)


@cube.func
def atan2(y, x):
    ratio = atan(cube.abs(y) / cube.where(x == 0.0, 1.0, cube.abs(x)))
    angle = cube.where(x == 0.0, cube.where(y == 0.0, 0.0, HALF_PI),
                       cube.where(x < 0.0, PI - ratio, ratio))
    return cube.where(y < 0.0, -angle, angle)


@cube.func
def round_half_even(x):
    # floor(x + 0.5), moved back one where x sat exactly halfway and that landed on an odd
    # integer: NumPy's and torch's rounding.
    r = cube.floor(x + 0.5)
    halfway = (r - x) == 0.5
    odd = (r - 2.0 * cube.floor(r * 0.5)) != 0.0
    return cube.where(halfway & odd, r - 1.0, r)


@cube.func
def trunc(x):
    return cube.where(x < 0.0, cube.ceil(x), cube.floor(x))


@cube.func
def sign(x):
    r = cube.where(x > 0, 1, cube.where(x < 0, -1, 0)).to(x.dtype)
    if x.dtype.is_float:  # NaN is neither > 0 nor < 0; NumPy's sign gives it back
        r = cube.where(x != x, x, r)
    return r


@cube.func
def softplus(x):
    # log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
    return cube.maximum(x, 0.0) + log1p(cube.exp(-cube.abs(x)))


@cube.func
def gelu(x):
    return x * 0.5 * (1.0 + cube.erf(x * 0.7071067811865476))


@cube.func
def silu(x):
    return x * cube.sigmoid(x)


@cube.func
def int_pow(base, exponent, BITS):
    # Square and multiply over the exponent's bits (unrolled); negative exponents give 0
    # except for bases 1 and -1, as integer division would.
    result = base * 0 + 1
    b = base
    e = exponent
    for _ in cube.static_range(BITS):
        result = cube.where((e & 1) != 0, result * b, result)
        b = b * b
        e = e >> 1
    negative = exponent < 0
    unit = cube.where(base == 1, 1, cube.where(base == -1, cube.where((exponent & 1) != 0, -1, 1),
                                               0)).to(base.dtype)
    return cube.where(negative, unit, result)
