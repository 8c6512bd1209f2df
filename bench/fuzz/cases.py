"""Cases (one random kernel: source templates, inputs, expression) and draws (the inputs of
one run), and the reference result of a case on a draw."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .bounds import V, exact, f64, is_float_arr, lit_value
from .draws import draw_values
from .dtypes import ALL, SIGNED, int_range, is_f, npd, reduce_dtype
from .generate import Generator
from .reference import Reference, reduce_ref
from .tree import Invalid, Node, infer, render, render_literal, used_inputs

ELEMENTWISE = """
@cube.kernel
def {name}({params}out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
{loads}{body}    cube.store(out + offs, {result}, mask=mask)
"""

REDUCTION = """
@cube.kernel
def {name}({params}out, R, C, BR: cube.Comptime[int], BC: cube.Comptime[int]):
    rows = {rows}
    cols = {cols}
    m = (rows[:, None] < R) & (cols[None, :] < C)
    p = rows[:, None] * C + cols[None, :]
{loads}{body}    r = cube.{kind}({result}, axis={axis})
{post}    cube.store({store})
"""


@dataclass
class Case:
    seed: int
    kind: str  # "elementwise" or "reduce"
    dtypes: list[str]
    scalar: list[bool]
    other: list[object]  # the masked load's `other=` per input (None: plain load)
    holes: list[bool]  # elementwise: that input's load also masks out every third element
    expr: Node
    block: int = 128
    br: int = 8
    bc: int = 16
    rkind: str = "sum"
    axis: int | None = 1
    post: str = ""  # reduce: a binary op of the tile and the broadcast result, stored 2-D
    name: str = ""
    source: str = ""

    def render(self) -> str:
        names, loads = [], []
        for i in range(len(self.dtypes)):
            if self.scalar[i]:
                names.append(f"s{i}")
                continue
            names.append(f"a{i}")
            if self.kind == "elementwise":
                mask = "mask & (offs % 3 != 1)" if self.holes[i] else "mask"
                other = "" if self.other[i] is None else \
                    f", other={render_literal(self.other[i])}"
                loads.append(f"    a{i} = cube.load(x{i} + offs, mask={mask}{other})\n")
            else:
                loads.append(f"    a{i} = cube.load(x{i} + p, mask=m, "
                             f"other={render_literal(self.other[i])})\n")
        lines: list[str] = []
        result = render(self.expr, names, lines, [0])
        if result in names:  # the bare input: copy it through an operation-free line
            lines.append(f"t0 = {result}")
            result = "t0"
        body = "".join(f"    {line}\n" for line in lines)
        params = "".join(f"{n.replace('a', 'x')}, " if n.startswith("a") else f"{n}, "
                         for n in names)
        if self.kind == "elementwise":
            text = ELEMENTWISE.format(name=self.name, params=params, loads="".join(loads),
                                      body=body, result=result)
        else:
            rows = "cube.cube_pos(0) * BR + cube.arange(0, BR)" if self.axis == 1 \
                else "cube.arange(0, BR)"
            cols = "cube.cube_pos(0) * BC + cube.arange(0, BC)" if self.axis == 0 \
                else "cube.arange(0, BC)"
            store = {1: "out + rows, r, mask=rows < R", 0: "out + cols, r, mask=cols < C",
                     None: "out + 0, r"}[self.axis]
            post = ""
            if self.post:
                rb = {1: "r[:, None]", 0: "r[None, :]", None: "r"}[self.axis]
                node = self.post_node()
                lines2: list[str] = []
                u = render(node, [result, rb], lines2, [100])
                post = "".join(f"    {line}\n" for line in lines2)
                store = f"out + rows[:, None] * C + cols[None, :], {u}, mask=m"
            text = REDUCTION.format(name=self.name, params=params, loads="".join(loads),
                                    body=body, result=result, kind=self.rkind, axis=self.axis,
                                    rows=rows, cols=cols, store=store, post=post)
        return 'import cubepy as cube\n\nINF = float("inf")\nNAN = float("nan")\n\n' + text

    def reduced_dtype(self) -> str:
        d = self.expr.dtype
        if self.rkind in ("argmax", "argmin"):
            return "int32"
        return reduce_dtype(d) if self.rkind == "sum" else d

    def post_node(self) -> Node:
        node = Node(self.post, [Node("in", value=0), Node("in", value=1)])
        infer(node, [self.expr.dtype, self.reduced_dtype()])
        return node

    def out_dtype(self) -> str:
        if self.kind == "elementwise":
            return self.expr.dtype
        if self.post:
            return self.post_node().dtype
        return self.reduced_dtype()

    def out_size(self, dr: Draw) -> int:
        if self.kind == "elementwise":
            return dr.n
        if self.post:
            return dr.R * dr.C
        return {1: dr.R, 0: dr.C, None: 1}[self.axis]


def other_for(rng: np.random.Generator, d: str) -> object:
    if is_f(d):
        return float(rng.choice([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 0.5]))
    if d == "bool":
        return bool(rng.integers(0, 2))
    lo, hi = int_range(d)
    return int(rng.choice([0, 1, -1, 7, lo, hi]) if d in SIGNED else rng.choice([0, 1, 7, hi]))


def make_case(seed: int, wgsl_share: float) -> Case:
    rng = np.random.default_rng(seed)
    wgsl_only = rng.random() < wgsl_share
    pool = ("bool", "int32", "uint32", "int64", "float16", "float32", "float64") if wgsl_only \
        else ALL
    k = int(rng.integers(1, 4))
    if rng.random() < 0.5:
        dtypes = [str(rng.choice(pool))] * k
    else:
        dtypes = [str(rng.choice(pool)) for _ in range(k)]
    kind = "reduce" if rng.random() < 0.3 else "elementwise"
    scalar = [bool(i > 0 and rng.random() < 0.2 and d not in ("bfloat16", "bool"))
              for i, d in enumerate(dtypes)]
    other, holes = [], []
    for d in dtypes:
        if kind == "reduce" or rng.random() < 0.4:
            other.append(other_for(rng, d))
            holes.append(kind == "elementwise" and rng.random() < 0.7)
        else:
            other.append(None)
            holes.append(False)
    gen = Generator(rng, dtypes, wgsl_only)
    for _ in range(10):
        expr = gen.expr(int(rng.integers(1, 5)))
        if any(not scalar[i] for i in used_inputs(expr)):
            break
    else:
        scalar = [False] * k
    case = Case(seed, kind, dtypes, scalar, other, holes, expr)
    case.block = int(rng.choice([16, 32, 64, 128, 256]))
    case.br = int(rng.choice([2, 4, 8, 16]))
    case.bc = int(rng.choice([4, 8, 16, 32]))
    case.rkind = str(rng.choice(["sum", "max", "min", "argmax", "argmin"]))
    case.axis = [0, 1, None][int(rng.integers(0, 3))]
    if expr.dtype == "bool" and case.rkind in ("max", "min"):
        case.rkind = "sum"
    if kind == "reduce" and rng.random() < 0.35:
        case.post = str(rng.choice(["sub", "add", "mul", "truediv", "maximum", "lt", "eq"]))
        try:
            case.post_node()
        except Invalid:
            case.post = ""
    return case


@dataclass
class Draw:
    arrays: list[object]  # per input: an array, or a NumPy scalar
    n: int = 0
    R: int = 0
    C: int = 0


def make_draw(case: Case, rng: np.random.Generator) -> Draw:
    if case.kind == "elementwise":
        n = int(rng.integers(1, 3 * case.block + 1)) if rng.random() < 0.8 else \
            int(rng.integers(1, 9))
        size, dr = n + 5, Draw([], n=n)
    else:
        if case.axis == 1:
            R, C = int(rng.integers(1, 3 * case.br + 1)), int(rng.integers(1, case.bc + 1))
        elif case.axis == 0:
            R, C = int(rng.integers(1, case.br + 1)), int(rng.integers(1, 3 * case.bc + 1))
        else:
            R, C = int(rng.integers(1, case.br + 1)), int(rng.integers(1, case.bc + 1))
        size, dr = R * C, Draw([], R=R, C=C)
    for d, sc in zip(case.dtypes, case.scalar):
        if sc:
            dr.arrays.append(npd(d).type(draw_values(rng, d, 1, scalar=True)[0]))
        else:
            dr.arrays.append(draw_values(rng, d, size))
    return dr


def grid_of(case: Case, dr: Draw) -> tuple[int, ...]:
    if case.kind == "elementwise":
        return (-(-dr.n // case.block),)
    if case.axis == 1:
        return (-(-dr.R // case.br),)
    if case.axis == 0:
        return (-(-dr.C // case.bc),)
    return (1,)


def tile_inputs(case: Case, dr: Draw) -> tuple[list[V], np.ndarray]:
    """The values each input's tile holds (masked lanes: `other`), and which outputs count."""
    vs = []
    if case.kind == "elementwise":
        g = grid_of(case, dr)[0]
        total = g * case.block
        idx = np.arange(total)
        valid = idx < dr.n
        for i, (d, a) in enumerate(zip(case.dtypes, dr.arrays)):
            if case.scalar[i]:
                vs.append(exact(np.full(total, a, dtype=npd(d))))
                continue
            full = np.zeros(total, dtype=npd(d))
            full[: dr.n] = a[: dr.n]
            on = valid & ~((idx % 3 == 1) & case.holes[i])
            if case.other[i] is not None:
                fill = lit_value(Node("lit", value=case.other[i]), d, (total,)).val
                full = np.where(on, full, fill).astype(npd(d))
            vs.append(exact(full))
        return vs, valid
    g = grid_of(case, dr)[0]
    rows = g * case.br if case.axis == 1 else case.br
    cols = g * case.bc if case.axis == 0 else case.bc
    for i, (d, a) in enumerate(zip(case.dtypes, dr.arrays)):
        if case.scalar[i]:
            vs.append(exact(np.full((rows, cols), a, dtype=npd(d))))
            continue
        fill = lit_value(Node("lit", value=case.other[i]), d, (rows, cols)).val
        fill[: dr.R, : dr.C] = a[: dr.R * dr.C].reshape(dr.R, dr.C)
        vs.append(exact(fill))
    if case.post:
        valid = ((np.arange(rows) < dr.R)[:, None] & (np.arange(cols) < dr.C)[None, :])
        valid = valid.reshape(-1)
    elif case.axis == 1:
        valid = np.arange(rows) < dr.R
    elif case.axis == 0:
        valid = np.arange(cols) < dr.C
    else:
        valid = np.ones(1, bool)
    return vs, valid


def reference(case: Case, dr: Draw, daz: bool = False) -> tuple[V, np.ndarray]:
    vs, valid = tile_inputs(case, dr)
    if daz:  # subnormal inputs read as zero (what a flushing target computes)
        for v in vs:
            if is_float_arr(v.val):
                x = f64(v.val)
                tiny = float(ml_dtypes.finfo(v.val.dtype).tiny)
                v.val = np.where(np.abs(x) < tiny, 0.0 * x, x).astype(v.val.dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tile = Reference(vs).eval(case.expr)
        res = tile
        if case.kind == "reduce":
            res = reduce_ref(case.rkind, tile, case.axis, case.expr.dtype)
            if case.post:
                shape = tile.val.shape
                pick = {1: (slice(None), None), 0: (None, slice(None)), None: ()}[case.axis]
                red = V(*(np.broadcast_to(np.asarray(a)[pick], shape).copy()
                          for a in (res.val, res.err, res.unk, res.zs)))
                res = Reference([tile, red]).eval(case.post_node())
                res = V(*(a.reshape(-1) for a in (res.val, res.err, res.unk, res.zs)))
            elif case.axis is None:
                res = V(*(np.atleast_1d(a) for a in (res.val, res.err, res.unk, res.zs)))
    return res, valid
