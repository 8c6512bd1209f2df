"""``exp`` and ``exp2`` of one float32 lane as straight-line code that LLVM vectorizes.

Numba calls libm's ``expf`` per lane (~5 ns here: LLVM has no vector math library without
Intel's SVML), which made a lane loop's exponentials cost more than the rest of a softmax.
The lane's value is widened to float64 and reduced to ``n ln 2 + r`` with ``|r| <= ln 2 / 2``;
``e^r`` is its Taylor polynomial to degree 8 (relative error under 3e-10) and ``2^n`` is
read from a table of powers of two. Rounded once to float32, the result is correctly rounded
but for about 1 case in 4000, and within 0.51 ulp (NumPy's own float32 ``exp`` is within 2.4):
float32's accuracy is kept. Every step is a select, a multiply-add or a table read, so a lane
loop computes 8 lanes at once (~2 ns a lane). Arguments are clamped first so that the table
index stays inside it: below -110 every result rounds to 0 and above 89 to inf, as ``expf``'s;
a NaN stays NaN through the polynomial.

Example:
    >>> lines = exp_lines("e_0", "v_3", "t_0", base2=False)
    >>> lines[-1]
    'e_0 = np.float32(t_0_p * EXP_POWERS_OF_TWO[np.int64(t_0_n) + 160])'
"""

from __future__ import annotations

import math

LOWEST_POWER = -160  # 2**-160 times e**r, r >= -0.35: far below float32's smallest subnormal
HIGHEST_POWER = 130
TABLE = "EXP_POWERS_OF_TWO"
# the module-level table a kernel using exp_lines needs (Numba freezes it into the kernel)
TABLE_LINE = f"{TABLE} = np.ldexp(1.0, np.arange({LOWEST_POWER}, {HIGHEST_POWER + 1}))"
# 1/k! for k = 8 down to 0: Horner's order
_TAYLOR = [repr(1.0 / math.factorial(k)) for k in range(8, -1, -1)]


def exp_lines(result: str, value: str, tmp: str, base2: bool) -> list[str]:
    """Lines that set ``result`` (float32) to ``exp(value)``, or ``exp2(value)`` when
    ``base2``; ``tmp`` prefixes the temporaries."""
    x, n, r, p = f"{tmp}_x", f"{tmp}_n", f"{tmp}_r", f"{tmp}_p"
    scale = f" * {math.log(2)!r}" if base2 else ""
    polynomial = _TAYLOR[0]
    for c in _TAYLOR[1:]:
        polynomial = f"{c} + {r} * ({polynomial})"
    return [
        f"{x} = np.float64({value}){scale}",
        f"{x} = {x} if not {x} > 89.0 else 89.0",  # `not`: a NaN is kept
        f"{x} = {x} if not {x} < -110.0 else -110.0",
        f"{n} = np.floor({x} * {1 / math.log(2)!r} + 0.5)",
        f"{n} = {n} if {n} > {float(LOWEST_POWER)} else {float(LOWEST_POWER)}",  # NaN: any
        f"{r} = {x} - {n} * {math.log(2)!r}",
        f"{p} = {polynomial}",
        f"{result} = np.float32({p} * {TABLE}[np.int64({n}) + {-LOWEST_POWER}])",
    ]
