"""Random generation of type-correct expression trees (and the literals they use)."""

from __future__ import annotations

import numpy as np

from .dtypes import (
    ALL,
    ARITH,
    BITOPS,
    BITS,
    COMPARE,
    HALF,
    MATH1,
    ROUNDING,
    SHIFTS,
    int_range,
    is_f,
    is_i,
)
from .tree import Invalid, Node, infer

INT_LITS = [0, 1, 2, 3, 5, 7, -1, -2, -3, 8, 16, 31, 32, 63, 64, 100, 127, -128, 255, 1000,
            -1000, 65535, 2**31 - 1, -(2**31), 2**32 - 1, 2**40, -(2**63)]
FLOAT_LITS = [0.0, -0.0, 0.5, 1.0, -1.0, 2.0, 3.0, -2.5, 0.1, 1e-3, 10.0, 100.0, 0.3333,
              1e30, -1e30, 1e-30, 65504.0, 1e-7, 7.0, 0.75, 1e300]


def literal_for(rng: np.random.Generator, other: str) -> object:
    if is_f(other) and rng.random() < 0.7 or other == "bool":
        # zeros and ones most often: the constants compilers like to fold
        v = float(rng.choice(FLOAT_LITS)) if rng.random() < 0.6 else \
            float(rng.choice([0.0, -0.0, 1.0, -1.0, 2.0, 0.5]))
        if other in HALF and abs(v) > 6e4:
            v = 3.0
        if other != "float64" and abs(v) > 1e38:
            v = 1e30
        return v
    if rng.random() < 0.1:
        return float(rng.choice([0.0, 1.0, -0.5, 2.0]))
    v = int(rng.choice(INT_LITS))
    if is_i(other):
        lo, hi = int_range(other)
        if not lo <= v <= hi:
            v = int(rng.integers(0, 8))
    return v


class Generator:
    """Random, type-correct expression trees."""

    def __init__(self, rng: np.random.Generator, input_dtypes: list[str], wgsl_only: bool):
        self.rng = rng
        self.inputs = input_dtypes
        self.pool = ("bool", "int32", "uint32", "int64", "float16", "float32", "float64") \
            if wgsl_only else ALL

    def leaf(self) -> Node:
        i = int(self.rng.integers(0, len(self.inputs)))
        return Node("in", value=i, dtype=self.inputs[i])

    def maybe_literal(self, other: Node) -> Node:
        return Node("lit", value=literal_for(self.rng, other.dtype or "float32"))

    def expr(self, depth: int) -> Node:
        for _ in range(20):
            try:
                n = self._expr(depth)
                infer(n, self.inputs)
                return n
            except Invalid:
                continue
        return self.leaf()

    def _expr(self, depth: int) -> Node:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            return self.leaf()
        kind = rng.choice(["math", "unary", "cast", "arith", "cmpwhere", "bits", "minmax",
                           "fma", "pow", "bitcast"],
                          p=[.14, .08, .13, .25, .12, .1, .07, .03, .05, .03])
        sub = lambda: self.expr(depth - 1)  # noqa: E731
        if kind == "math":
            op = str(rng.choice(MATH1 + ROUNDING))
            return Node(op, [sub()])
        if kind == "unary":
            return Node(str(rng.choice(["neg", "abs", "inv"])), [sub()],
                        spelling=int(rng.integers(0, 2)))
        if kind == "cast":
            return Node("cast", [sub()], to=str(rng.choice(self.pool)),
                        spelling=int(rng.integers(0, 2)))
        if kind == "bitcast":
            a = sub()
            same_width = [d for d in self.pool
                          if d not in ("bool", a.dtype) and BITS[d] == BITS[a.dtype]]
            if not same_width:
                raise Invalid("nothing of the width to bitcast to")
            return Node("bitcast", [a], to=str(rng.choice(same_width)),
                        spelling=int(rng.integers(0, 2)))
        if kind == "fma":
            return Node("fma", [sub(), sub(), sub()])
        if kind == "cmpwhere":
            a = sub()
            b = self.maybe_literal(a) if rng.random() < 0.3 else sub()
            cond = Node(str(rng.choice(COMPARE)), [a, b])
            if rng.random() < 0.4:
                return cond
            if rng.random() < 0.15:
                cond = sub()  # a non-bool condition is compared with zero
            x = sub()
            y = self.maybe_literal(x) if rng.random() < 0.25 else sub()
            if rng.random() < 0.5:
                x, y = y, x
            return Node("where", [cond, x, y])
        if kind == "arith":
            op = str(rng.choice(ARITH[:-1]))
        elif kind == "pow":
            op = "pow"
        elif kind == "bits":
            op = str(rng.choice(BITOPS + SHIFTS))
        else:
            op = str(rng.choice(["maximum", "minimum"]))
        a = sub()
        if rng.random() < 0.3:
            b = self.maybe_literal(a)
            if op in SHIFTS:
                b = Node("lit", value=int(rng.integers(-1, BITS.get(a.dtype, 32) + 3)))
            if op == "pow" and rng.random() < 0.6:
                b = Node("lit", value=int(rng.choice([0, 1, 2, 3, -1, -2, 4, 5, 7, 64, 65]))
                         if rng.random() < 0.6 else float(rng.choice([0.5, 2.0, -1.0, 3.0])))
            if rng.random() < 0.2 and op not in SHIFTS:
                a, b = b, a
        else:
            b = sub()
        return Node(op, [a, b], spelling=int(rng.integers(0, 2)))
