"""Reference values with error bounds: the V record, ulps, casts and the helpers the
NumPy reference builds on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import BF16, EMIN, HALF, PREC, int_range, is_f, is_i, npd, overflow_at
from .tree import Node


@dataclass
class V:
    """Reference values with, per element, a bound on a correct target's deviation (err),
    whether the result is unspecified or too close to a discontinuity to check (unk), and
    whether the sign of a zero result is unspecified (zs)."""

    val: np.ndarray
    err: np.ndarray
    unk: np.ndarray
    zs: np.ndarray


def ulp(x: np.ndarray, name: str) -> np.ndarray:
    x = np.abs(np.asarray(x, dtype=np.float64))
    finite = np.isfinite(x) & (x > 0)
    _, e = np.frexp(np.where(finite, x, 1.0))
    e = np.where(finite, e - 1, EMIN[name])
    return np.ldexp(1.0, np.maximum(e, EMIN[name]) - PREC[name] + 1)


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def wide(a: np.ndarray, name: str) -> np.ndarray:
    """Values in a precision that holds exact sums and products of a few operands."""
    return np.asarray(a).astype(np.longdouble if name == "float64" else np.float64)


def exact(val: np.ndarray, err: np.ndarray | None = None) -> V:
    shape = np.shape(val)
    return V(np.asarray(val), np.zeros(shape) if err is None else err, np.zeros(shape, bool),
             np.zeros(shape, bool))


def lit_value(n: Node, dtype: str, shape: tuple) -> V:
    v = n.value
    if is_f(dtype) and isinstance(v, float):
        arr = np.full(shape, np.float64(v)).astype(npd(dtype))
    else:
        arr = np.full(shape, v, dtype=object).astype(np.float64 if isinstance(v, float)
                                                       else np.int64)
        arr = arr.astype(npd(dtype)) if not is_f(dtype) else arr.astype(np.float64).astype(
            npd(dtype))
    return exact(arr)


def round_to(x: np.ndarray, name: str) -> np.ndarray:
    return np.asarray(x).astype(np.float64).astype(npd(name))


def cast_v(x: V, src: str, dst: str) -> V:
    """x.to(dst) by cubepy's rules, with the skip marks of unspecified casts."""
    if src == dst:
        return x
    val, err, unk, zs = x.val, x.err, x.unk.copy(), x.zs
    shape = val.shape
    if is_f(src) and is_i(dst):
        v = f64(val)
        t = np.trunc(v)
        lo, hi = int_range(dst)
        ok = np.isfinite(v) & (t >= float(lo)) & (t < float(hi) + 1.0)
        unk |= ~ok
        unk |= (np.trunc(v - err) != t) | (np.trunc(v + err) != t)
        out = np.where(ok, t, 0.0)
        if dst == "int64":
            out = np.where(ok, out, 0).astype(np.int64)
        return V(out.astype(npd(dst)), np.zeros(shape), unk, np.zeros(shape, bool))
    if is_f(src) and dst == "bool":
        v = f64(val)
        unk |= (err > 0) & (np.abs(v) <= err)
        return V(v != 0, np.zeros(shape), unk, np.zeros(shape, bool))
    if not is_f(dst):  # int/bool -> int/bool
        if dst == "bool":
            return V(val != 0, np.zeros(shape), unk, np.zeros(shape, bool))
        return V(val.astype(npd(dst)), np.zeros(shape), unk, np.zeros(shape, bool))
    # -> float
    if src == "bool" or is_i(src):
        via64 = val.astype(np.float64).astype(npd(dst))
        if dst in HALF:
            unk |= (val.astype(np.float32).astype(npd(dst)) != via64)
        if src == "int64" and dst == "float32":
            via64 = val.astype(np.float32)
        out = via64
        return V(out, np.zeros(shape), unk, np.zeros(shape, bool))
    out = val.astype(npd(dst))
    v64 = f64(val)
    if dst in HALF and src == "float64":
        unk |= ~np.isnan(v64) & (val.astype(np.float32).astype(npd(dst)) != out)
    o64 = f64(out)
    narrowing = PREC[dst] < PREC[src] or EMIN[dst] > EMIN[src]
    inexact = (o64 != v64) & np.isfinite(v64)
    new_err = err + np.where(narrowing & (inexact | (err > 0)), ulp(o64, dst), 0.0)
    newly_inf = np.isinf(o64) & np.isfinite(v64)
    unk |= newly_inf & (err > 0)
    unk |= np.isfinite(o64) & (np.abs(v64) + err >= overflow_at(dst))
    return V(out, np.where(np.isfinite(o64), new_err, 0.0), unk, zs | ((o64 == 0) & (err > 0)))


def probe(fn, args: list[np.ndarray], errs: list[np.ndarray], name: str
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fn at the centre and the corners of the error box, in a wide precision: (centre, the
    largest deviation of a corner, whether a corner changes NaN-ness or finiteness)."""
    with np.errstate(all="ignore"):
        centre = np.asarray(fn(*args))
        big = overflow_at(name)
        centre = np.where(np.abs(centre) >= big, np.copysign(np.inf, centre), centre)
        dev = np.zeros(centre.shape)
        flip = np.zeros(centre.shape, bool)
        if not any(np.any(e > 0) for e in errs):
            return centre, dev, flip
        k = len(args)
        for mask in range(1, 3**k):
            signs = [(mask // 3**i) % 3 - 1 for i in range(k)]
            if all(s == 0 for s in signs):
                continue
            c = np.asarray(fn(*[a + s * e for a, s, e in zip(args, signs, errs)]))
            c = np.where(np.abs(c) >= big, np.copysign(np.inf, c), c)
            flip |= (np.isnan(c) != np.isnan(centre)) | (np.isinf(c) != np.isinf(centre))
            flip |= np.isinf(c) & np.isinf(centre) & (np.sign(c) != np.sign(centre))
            d = np.abs(c - centre)
            dev = np.maximum(dev, np.where(np.isfinite(d), d, 0.0).astype(np.float64))
    return centre, dev, flip


def any_unk(*vs: V) -> np.ndarray:
    out = np.zeros(vs[0].val.shape, bool)
    for v in vs:
        out |= v.unk
    return out


def zero_sign_in(*vs: V) -> np.ndarray:
    out = np.zeros(vs[0].val.shape, bool)
    for v in vs:
        out |= v.zs & (f64(v.val) == 0) if is_float_arr(v.val) else False
    return out


def is_float_arr(a: np.ndarray) -> bool:
    return a.dtype == BF16 or a.dtype.kind == "f"


def in_dtype(fn, d: str, *vals: np.ndarray) -> np.ndarray:
    """NumPy's answer in dtype d (float16/bfloat16 computed in float32 and rounded)."""
    with np.errstate(all="ignore"):
        if d in HALF:
            return np.asarray(fn(*[v.astype(np.float32) for v in vals])).astype(npd(d))
        return np.asarray(fn(*vals)).astype(npd(d))


def bitcast_v(x: V, src: str, dst: str) -> V:
    """x.to(dst, bitcast=True): exact bits, so only exact values can be checked. An inexact
    value (err > 0), a zero of either sign or a NaN made by arithmetic (whose sign and payload
    differ between CPUs and GPUs) gives bits the reference cannot know."""
    val = np.ascontiguousarray(x.val.astype(npd(src)))
    unk = x.unk | (x.err > 0) | x.zs
    if is_f(src):
        unk |= np.isnan(f64(val))
    shape = val.shape
    return V(val.view(npd(dst)), np.zeros(shape), unk, np.zeros(shape, bool))
