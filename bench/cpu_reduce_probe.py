"""burn's ``Cpu`` backend reductions against NumPy: time, ratio and error per op and shape.

    .venv/bin/python bench/cpu_reduce_probe.py [--runs 5] [--ops sum,var] [--dtypes float32]
                                               [--shapes 4096x4096] [--json out.json]

Each row is one op over one axis (``all``: every axis) of a random tensor, timed as the median
of ``--runs`` calls after a warm-up call that compiles the kernels (its time is printed as
``first``). The NumPy peer runs in the same process on the same array; ``ratio`` is burn's time
over NumPy's (NumPy runs on one core, the Cpu backend on every core). ``err`` is the largest
error against a float64 NumPy result, relative to that result's largest magnitude.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import numpy as np

import burn


def _np_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _np_layer_norm(a: np.ndarray, axis: int) -> np.ndarray:
    mean = a.mean(axis, keepdims=True)
    return (a - mean) / np.sqrt(a.var(axis, keepdims=True) + 1e-5)


# op -> (burn call, NumPy call); axis None is every axis
OPS: dict[str, tuple[Callable, Callable]] = {
    "sum": (lambda t, ax: t.sum(ax), lambda a, ax: a.sum(ax)),
    "mean": (lambda t, ax: t.mean(ax), lambda a, ax: a.mean(ax)),
    "max": (lambda t, ax: t.max(ax), lambda a, ax: a.max(ax)),
    "argmax": (lambda t, ax: t.argmax(ax), lambda a, ax: a.argmax(ax)),
    "var": (lambda t, ax: t.var(ax), lambda a, ax: a.var(ax, ddof=1)),
    "softmax": (lambda t, ax: burn.softmax(t, ax), _np_softmax),
    "layer_norm": (lambda t, ax: burn.layer_norm(t, t.shape[-1]), _np_layer_norm),
    "cumsum": (lambda t, ax: t.cumsum(ax), lambda a, ax: a.cumsum(ax)),
}
# the axes each op is probed along: layer_norm normalizes the last axis only
AXES: dict[str, tuple[int | None, ...]] = {
    "sum": (1, 0, None), "mean": (1, 0), "max": (1, 0, None), "argmax": (1, 0),
    "var": (1, 0), "softmax": (1, 0), "layer_norm": (1,),
    "cumsum": (1, 0),
}
SHAPES = ((4096, 4096), (65536, 64), (64, 65536))


def median_s(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def probe(op: str, shape: tuple[int, ...], dtype: str, axis: int | None, runs: int,
          backend: object) -> dict[str, object]:
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype) + 1.0
    t = burn.from_numpy(a, backend=backend)
    run_burn, run_np = OPS[op]
    start = time.perf_counter()
    got = run_burn(t, axis).numpy()
    first = time.perf_counter() - start
    want = run_np(a.astype(np.float64), axis)
    if op == "argmax":  # ties aside, the index picks the same value
        flat = a.reshape(-1) if axis is None else None
        picked = flat[got] if axis is None else np.take_along_axis(
            a, np.expand_dims(got, axis), axis).squeeze(axis)
        best = a.max(axis)
        err = float(np.max(np.abs(picked - best)))
    else:
        err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
    burn_s = median_s(lambda: run_burn(t, axis), runs)
    np_s = median_s(lambda: run_np(a, axis), runs)
    return {"op": op, "shape": "x".join(map(str, shape)), "dtype": dtype,
            "axis": "all" if axis is None else axis, "first_s": first, "burn_ms": burn_s * 1e3,
            "numpy_ms": np_s * 1e3, "ratio": burn_s / np_s, "err": err}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in SHAPES))
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    backend = burn.backend_for("cpu")
    shapes = [tuple(int(n) for n in s.split("x")) for s in args.shapes.split(",")]
    rows = []
    print(f"{'op':<10} {'shape':<11} {'dtype':<8} {'axis':>4} {'first s':>8} {'burn ms':>9} "
          f"{'numpy ms':>9} {'ratio':>7} {'err':>8}", flush=True)
    for dtype in args.dtypes.split(","):
        for op in args.ops.split(","):
            for shape in shapes:
                for axis in AXES[op]:
                    if shape != (4096, 4096) and axis != 1:
                        continue  # the other shapes probe short and long rows only
                    row = probe(op, shape, dtype, axis, args.runs, backend)
                    rows.append(row)
                    print(f"{op:<10} {row['shape']:<11} {dtype:<8} {row['axis']!s:>4} "
                          f"{row['first_s']:8.2f} {row['burn_ms']:9.2f} {row['numpy_ms']:9.2f} "
                          f"{row['ratio']:7.2f} {row['err']:8.1e}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
