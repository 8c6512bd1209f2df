"""The NumPy reference: evaluates an expression tree (and a reduction) under cubepy's rules,
carrying per element a bound on a correct target's deviation and which elements to skip."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .bounds import (
    V,
    any_unk,
    bitcast_v,
    cast_v,
    f64,
    in_dtype,
    lit_value,
    probe,
    round_to,
    ulp,
    wide,
    zero_sign_in,
)
from .dtypes import (
    BF16,
    BITS,
    COMPARE,
    HALF,
    MATH1,
    MATH_ULPS,
    NPCMP,
    PREC,
    ROUNDING,
    SHIFTS,
    SIGNED,
    int_range,
    is_f,
    npd,
    overflow_at,
    reduce_dtype,
)
from .tree import Node

try:
    from scipy.special import erf as _erf64
except ImportError:  # pragma: no cover - SciPy is in the [cpu] extra
    _erf64 = np.vectorize(math.erf, otypes=[np.float64])

def float_binary(op: str, d: str, a: V, b: V) -> V:
    """+ - * / // % ** maximum minimum on floats of dtype d."""
    va, vb = a.val, b.val
    wa, wb = wide(va, d), wide(vb, d)
    unk = any_unk(a, b)
    shape = va.shape
    fns = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide,
           "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
           "maximum": np.maximum, "minimum": np.minimum}
    fn = fns[op]
    if op == "pow":
        r = round_to(np.power(f64(va), f64(vb)), d) if d != "float64" else in_dtype(fn, d, va, vb)
    else:
        r = in_dtype(fn, d, va, vb)
    r64 = f64(r)
    centre, dev, flip = probe(fn, [wa, wb], [a.err, b.err], d)
    unk |= flip
    zero_div = (f64(vb) == 0)
    unk |= zero_div & b.zs & (op in ("truediv", "floordiv", "pow"))
    if op == "pow":
        unk |= (f64(va) == 0) & a.zs & (f64(vb) < 0)
    inexact = ~((centre == wide(r, d)) | (np.isnan(centre) & np.isnan(r64)))
    slack = {"add": 1, "sub": 1, "mul": 1, "truediv": 2, "floordiv": 0, "mod": 1, "pow": 4,
             "maximum": 0, "minimum": 0}[op]
    sl = np.where(inexact, slack, 0) * ulp(r64, d)
    if op == "pow":  # exact only for a whole exponent and a representable result (the docs)
        whole = (np.trunc(f64(vb)) == f64(vb)) & (np.abs(f64(vb)) <= 128)
        sl = np.where(inexact | ~whole, (4 + np.where(whole, np.abs(f64(vb)), 0)) * ulp(r64, d),
                      0)
    if op in ("floordiv", "mod"):
        q = np.floor_divide(f64(va), f64(vb))
        with np.errstate(all="ignore"):
            for sa in (-1, 1):
                for sb in (-1, 1):
                    qc = np.floor_divide(f64(va) + sa * a.err, f64(vb) + sb * b.err)
                    unk |= (qc != q) & ~(np.isnan(qc) & np.isnan(q))
        unk |= (b.err > 0) & (np.abs(f64(vb)) <= b.err)
        if op == "floordiv":
            big = 2.0 ** (51 if d == "float64" else 22)
            sl = np.where(np.abs(r64) >= big, ulp(r64, d), 0.0)
            dev = np.zeros(shape)
    err = np.where(np.isfinite(r64), dev + sl, 0.0)
    if op in ("maximum", "minimum"):
        err = np.maximum(a.err, b.err)
        both0 = (f64(va) == 0) & (f64(vb) == 0)
        zs = (r64 == 0) & ((both0 & (np.signbit(f64(va)) != np.signbit(f64(vb))))
                           | zero_sign_in(a, b) | (err > 0))
        return V(r, np.where(np.isfinite(r64), err, 0.0), unk | flip, zs)
    # overflow: a finite result near the edge, or infinity made from finite operands
    fin_ops = np.isfinite(f64(va)) & np.isfinite(f64(vb))
    from_finite = np.isinf(r64) & fin_ops
    if d in HALF:
        unk |= from_finite  # float16 chains may compute in float32 until a cast or store
    else:
        unk |= from_finite & ((a.err > 0) | (b.err > 0))
    unk |= np.isfinite(r64) & (np.abs(r64) + err >= overflow_at(d))
    unk |= np.isnan(r64) & ((a.err > 0) | (b.err > 0))
    zs = (r64 == 0) & (zero_sign_in(a, b) | (dev > 0) | (a.err > 0) | (b.err > 0))
    return V(r, err, unk, zs)


def int_binary(op: str, d: str, a: V, b: V) -> V:
    va, vb = a.val.astype(npd(d)), b.val.astype(npd(d))
    unk = any_unk(a, b)
    bits = BITS[d]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "add":
            r = va + vb
        elif op == "sub":
            r = va - vb
        elif op == "mul":
            r = va * vb
        elif op == "floordiv":
            r = np.where(vb == 0, 0, np.floor_divide(va, np.where(vb == 0, 1, vb)))
            if d in SIGNED:
                unk |= (va == int_range(d)[0]) & (vb == -1)
        elif op == "mod":
            r = np.where(vb == 0, 0, np.remainder(va, np.where(vb == 0, 1, vb)))
        elif op in ("and", "or", "xor"):
            r = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](va, vb)
        elif op in SHIFTS:
            k = vb.astype(np.int64) if d != "uint32" else vb.astype(np.int64)
            inr = (k >= 0) & (k < bits)
            ks = np.where(inr, vb, 0).astype(npd(d))
            if op == "shl":
                r = np.where(inr, np.left_shift(va, ks), 0)
            else:
                neg = (va < 0) if d in SIGNED else np.zeros(va.shape, bool)
                r = np.where(inr, np.right_shift(va, ks), np.where(neg, -1, 0))
        elif op == "maximum":
            r = np.maximum(va, vb)
        elif op == "minimum":
            r = np.minimum(va, vb)
        else:
            raise ValueError(op)
    return V(np.asarray(r).astype(npd(d)), np.zeros(va.shape), unk, np.zeros(va.shape, bool))


def _sigmoid64(t: np.ndarray) -> np.ndarray:
    """In long double, as exp(t) / (1 + exp(t)) below 0: 1 / (1 + exp(-t)) overflows there,
    where the result is still a subnormal (sigmoid(-740) is 4.2e-322; seed 12000201)."""
    e = np.exp(-np.abs(np.asarray(t, np.longdouble)))
    return np.where(t < 0, e / (1 + e), 1 / (1 + e)).astype(np.float64)


def math_unary(op: str, x: V) -> V:
    d = x.val.dtype
    name = "bfloat16" if d == BF16 else d.name
    v = f64(x.val)
    fn64 = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
            "rsqrt": lambda t: 1.0 / np.sqrt(t), "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
            "erf": _erf64, "sigmoid": _sigmoid64, "floor": np.floor,
            "ceil": np.ceil}[op]
    with np.errstate(all="ignore"):
        r = round_to(fn64(v), name)
    centre, dev, flip = probe(fn64, [v], [x.err], name)
    if op in ("sin", "cos"):
        # not monotonic: around a turning point the box's extreme lies inside it, where the
        # corners cannot see it (cos of 65.0 ** 65.0 a few ulp off); |sin a - sin b| <= |a - b|
        dev = np.maximum(dev, np.minimum(x.err, 2.0))
    r64 = f64(r)
    unk = x.unk | flip
    if op in ROUNDING:
        unk |= (np.floor(v - x.err) != np.floor(v + x.err)) | (np.ceil(v - x.err) != np.ceil(
            v + x.err))
        err = np.zeros(v.shape)
        zs = (r64 == 0) & (zero_sign_in(x) | (x.err > 0))
        return V(r, err, unk, zs)
    err = np.where(np.isfinite(r64), dev + MATH_ULPS[op] * ulp(r64, name), 0.0)
    unk |= np.isfinite(r64) & (np.abs(r64) + err >= overflow_at(name))
    unk |= np.isinf(r64) & np.isfinite(v) & (np.abs(f64(fn64(v))) < overflow_at(name) * 1.01)
    zs = (r64 == 0) & (zero_sign_in(x) | (x.err > 0) | (op in ("sin", "tanh", "erf")))
    if op == "rsqrt":
        unk |= (v == 0) & x.zs
    return V(r, err, unk, zs)


class Reference:
    """Evaluates a tree over input values (V per input) by cubepy's documented semantics."""

    def __init__(self, inputs: list[V]):
        self.inputs = inputs
        self.shape = inputs[0].val.shape

    def operand(self, n: Node, d: str) -> V:
        if n.op == "lit":
            return lit_value(n, d, self.shape)
        return cast_v(self.eval(n), n.dtype, d)

    def eval(self, n: Node) -> V:
        op = n.op
        if op == "in":
            return self.inputs[n.value]
        if op == "cast":
            return cast_v(self.eval(n.args[0]), n.args[0].dtype, n.to)
        if op == "bitcast":
            return bitcast_v(self.eval(n.args[0]), n.args[0].dtype, n.to)
        if op in ("neg", "abs", "inv"):
            x = self.eval(n.args[0])
            with np.errstate(all="ignore"):
                if op == "neg":
                    r = -x.val
                elif op == "abs":
                    r = np.abs(x.val)
                else:
                    r = ~x.val if x.val.dtype != np.bool_ else np.logical_not(x.val)
            zs = x.zs if op == "neg" else np.zeros(r.shape, bool)
            return V(np.asarray(r).astype(x.val.dtype), x.err, x.unk, zs)
        if op in MATH1 or op in ROUNDING:
            return math_unary(op, self.operand(n.args[0], n.dtype))
        if op in COMPARE:
            d = n.value
            a, b = self.operand(n.args[0], d), self.operand(n.args[1], d)
            r = NPCMP[op](a.val, b.val)
            unk = any_unk(a, b)
            if is_f(d):
                tol = a.err + b.err
                with np.errstate(all="ignore"):
                    close = np.abs(f64(a.val) - f64(b.val)) <= tol
                unk |= (tol > 0) & close
                unk |= (tol > 0) & np.isinf(f64(a.val)) & np.isinf(f64(b.val))
            return V(np.asarray(r), np.zeros(r.shape), unk, np.zeros(r.shape, bool))
        if op == "where":
            c = self.eval(n.args[0])
            c = cast_v(c, n.args[0].dtype, "bool")
            d = n.value
            a, b = self.operand(n.args[1], d), self.operand(n.args[2], d)
            cond = c.val
            return V(np.where(cond, a.val, b.val).astype(npd(d)), np.where(cond, a.err, b.err),
                     c.unk | np.where(cond, a.unk, b.unk), np.where(cond, a.zs, b.zs))
        if op == "fma":
            d, dd = n.value, n.dtype
            # as the language does: the operands meet in their common dtype (int32 and uint32
            # in uint32), then that converts to the float dtype fma computes in
            x, y, z = (cast_v(self.operand(a, d), d, dd) for a in n.args)
            fn = lambda p, q, s: p * q + s  # noqa: E731
            with np.errstate(all="ignore"):
                centre, dev, flip = probe(fn, [wide(x.val, dd), wide(y.val, dd),
                                               wide(z.val, dd)], [x.err, y.err, z.err], dd)
                r = round_to(centre, dd)
                prodw = wide(x.val, dd) * wide(y.val, dd)
                prod = np.asarray(prodw).astype(np.float64)
            r64 = f64(r)
            unk = any_unk(x, y, z) | flip
            sl = ulp(r64, dd) + np.where(np.isfinite(prod), ulp(prod, dd), 0.0)
            err = np.where(np.isfinite(r64), dev + sl, 0.0)
            unk |= np.isfinite(r64) & (np.abs(r64) + err >= overflow_at(dd))
            unk |= np.isinf(r64) & np.isfinite(f64(x.val) * 0 + f64(y.val) * 0 + f64(z.val))
            unk |= np.isnan(r64) & ((x.err > 0) | (y.err > 0) | (z.err > 0))
            # fused or not: a product past the range overflows only when not fused
            unk |= np.isfinite(f64(x.val) * 0 + f64(y.val) * 0) & ~(
                np.abs(prodw) < overflow_at(dd) * 0.5)
            zs = (r64 == 0) & np.ones(r64.shape, bool)  # fused or not: zero signs differ
            return V(r, err, unk, zs)
        d = n.value
        a, b = self.operand(n.args[0], d), self.operand(n.args[1], d)
        if is_f(d):
            return float_binary(op, d, a, b)
        if d == "bool":
            fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
            r = fn(a.val, b.val)
            return V(r, np.zeros(r.shape), any_unk(a, b), np.zeros(r.shape, bool))
        return int_binary(op, d, a, b)


def reduce_ref(kind: str, v: V, axis: int | None, dtype: str) -> V:
    """cube.<kind>(v, axis) on the reference values."""
    val, err, unk, zs = v.val, v.err, v.unk, v.zs
    if axis is None:
        val, err, unk, zs = (a.reshape(-1) for a in (val, err, unk, zs))
        axis = 0
    n = val.shape[axis]
    anyunk = unk.any(axis=axis)
    if kind in ("argmax", "argmin"):
        fn = np.argmax if kind == "argmax" else np.argmin
        idx = fn(val if dtype != "bfloat16" else val.astype(np.float32), axis=axis)
        out_unk = anyunk.copy()
        if is_f(dtype):
            x = f64(val)
            best = np.take_along_axis(x, np.expand_dims(idx, axis), axis)
            ebest = np.take_along_axis(err, np.expand_dims(idx, axis), axis)
            with np.errstate(all="ignore"):
                near = (np.abs(x - best) <= err + ebest) & ((err + ebest) > 0)
            near &= np.arange(n).reshape([-1 if i == axis else 1 for i in range(x.ndim)]) \
                != np.expand_dims(idx, axis)
            out_unk |= near.any(axis=axis)
        return V(idx.astype(np.int32), np.zeros(idx.shape), out_unk, np.zeros(idx.shape, bool))
    if kind == "sum":
        rd = reduce_dtype(dtype)
        if not is_f(dtype):
            with np.errstate(all="ignore"):
                r = np.add.reduce(val.astype(npd(rd)), axis=axis, dtype=npd(rd))
            return V(r, np.zeros(r.shape), anyunk, np.zeros(r.shape, bool))
        w = wide(val, dtype)
        with np.errstate(all="ignore"):
            s = np.sum(w, axis=axis)
            absum = np.sum(np.abs(f64(val)), axis=axis)
        r = round_to(s, dtype)
        r64 = f64(r)
        e = err.sum(axis=axis) + n * 2.0 ** -PREC[dtype] * absum + ulp(r64, dtype)
        # partial sums of the finite values may overflow, in an order the target picks, and
        # then meet an infinity of the other sign (NaN) or not (inf): seed 10002646
        x64 = f64(val)
        with np.errstate(all="ignore"):
            finite = np.sum(np.where(np.isfinite(x64), np.abs(x64), 0.0), axis=axis)
        finite_e = err.sum(axis=axis) + n * 2.0 ** -PREC[dtype] * finite
        out_unk = anyunk | (finite + finite_e >= overflow_at(dtype))
        out_unk |= np.isinf(r64) & np.isfinite(absum)
        out_unk |= np.isnan(r64) & (err > 0).any(axis=axis)
        neg0 = ((f64(val) == 0) & (np.signbit(f64(val)) | zs)).any(axis=axis)
        zsr = (r64 == 0) & (neg0 | (e > 0) | (err > 0).any(axis=axis))
        return V(r, np.where(np.isfinite(r64), e, 0.0), out_unk, zsr)
    fn = np.max if kind == "max" else np.min
    r = fn(val if dtype != "bfloat16" else val.astype(np.float32), axis=axis).astype(npd(dtype))
    if not is_f(dtype):
        return V(r, np.zeros(r.shape), anyunk, np.zeros(r.shape, bool))
    r64 = f64(r)
    e = err.max(axis=axis)
    x = f64(val)
    mixed = ((x == 0) & (np.signbit(x) != np.expand_dims(np.signbit(r64), axis))).any(axis=axis)
    zsr = (r64 == 0) & (mixed | (e > 0) | ((x == 0) & zs).any(axis=axis))
    out_unk = anyunk | (np.isnan(r64) & (err > 0).any(axis=axis))
    return V(r, np.where(np.isfinite(r64), e, 0.0), out_unk, zsr)
