"""Compiling a case's kernel, launching it on a target and comparing it with the reference."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import warnings
from pathlib import Path

import numpy as np

import cubepy as cube

from .bounds import V, f64, is_float_arr
from .cases import Case, Draw, grid_of, reference
from .dtypes import BF16, UNSIGNED, int_range, is_f, npd
from .tree import dtypes_used


def poison(d: str, size: int) -> np.ndarray:
    if is_f(d):
        return np.full(size, np.nan).astype(npd(d))
    if d == "bool":
        return np.ones(size, bool)
    lo, hi = int_range(d)
    return np.full(size, 77 if d in UNSIGNED else -12345 if lo < -12345 else lo, npd(d))


def launch(kernel, case: Case, dr: Draw, target: str) -> np.ndarray:
    """Run on a target; the output has 5 spare elements that must stay untouched."""
    od = case.out_dtype()
    out = poison(od, case.out_size(dr) + 5)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in dr.arrays]
    grid = grid_of(case, dr)
    if case.kind == "elementwise":
        kernel[grid](*args, out, dr.n, BLOCK=case.block, target=target)
    else:
        kernel[grid](*args, out, dr.R, dr.C, BR=case.br, BC=case.bc, target=target)
    for a, b in zip(args, dr.arrays):
        if isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=True):
            raise AssertionError("the kernel wrote to an input array")
    return out


def compare(res: V, valid: np.ndarray, got: np.ndarray, size: int) -> tuple[list, int]:
    """[(index, class)] of the mismatching elements, and the count of elements checked."""
    spare = got[size:]
    bad = []
    if not np.array_equal(spare, poison(got.dtype.name if got.dtype != BF16 else "bfloat16",
                                        5), equal_nan=True):
        bad.append((size, "out-of-bounds store"))
    ref = res.val[valid][:size]
    unk = res.unk[valid][:size]
    err = res.err[valid][:size]
    zs = res.zs[valid][:size]
    g = got[:size]
    checked = int((~unk).sum())
    if is_float_arr(ref):
        r, t = f64(ref), f64(g)
        with np.errstate(all="ignore"):
            nan_bad = np.isnan(r) != np.isnan(t)
            inf_bad = (np.isinf(r) | np.isinf(t)) & (r != t) & ~np.isnan(r) & ~np.isnan(t)
            val_bad = np.isfinite(r) & np.isfinite(t) & (np.abs(r - t) > err)
        sign_bad = (r == 0) & (t == 0) & (np.signbit(r) != np.signbit(t)) & ~zs
        for i in np.nonzero(~unk & (nan_bad | inf_bad | val_bad))[0]:
            bad.append((int(i), "value"))
        for i in np.nonzero(~unk & sign_bad)[0]:
            bad.append((int(i), "zero-sign"))
    else:
        for i in np.nonzero(~unk & (ref.astype(g.dtype) != g))[0]:
            bad.append((int(i), "value"))
    return bad, checked


class Runner:
    def __init__(self, targets: list[str], workdir: Path):
        self.targets = targets
        self.workdir = workdir
        self.supported = {t: {str(getattr(d, "name", d)) for d in cube.target_info(t).dtypes}
                          for t in targets}
        for s in self.supported.values():
            if "int1" in s:
                s.add("bool")
        self.count = 0

    def compile(self, case: Case):
        self.count += 1
        case.name = f"fz{case.seed % 10**8}_{self.count}"
        case.source = case.render()
        path = self.workdir / f"{case.name}.py"
        path.write_text(case.source)
        spec = importlib.util.spec_from_file_location(case.name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, case.name)

    def supports(self, case: Case, target: str) -> bool:
        return dtypes_used(case.expr, case.dtypes) <= self.supported[target] and \
            case.out_dtype() in self.supported[target] and \
            set(case.dtypes) <= self.supported[target]


STATE: list = []  # the worker's state file (a crash leaves its last launch there)


def note_state(**event: object) -> None:
    if STATE:
        STATE[0].write(json.dumps(event) + "\n")
        STATE[0].flush()


def run_one(runner: Runner, kernel, case: Case, dr: Draw, target: str
            ) -> tuple[list, int, np.ndarray | None, str | None]:
    note_state(event="launch", target=target, seed=case.seed, source=case.source)
    res, valid = reference(case, dr)
    size = case.out_size(dr)
    try:
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = launch(kernel, case, dr, target)
    except cube.UnsupportedError:
        return [], 0, None, "unsupported"
    except Exception as err:  # noqa: BLE001 - any other failure is a finding
        return [(0, "error")], 0, None, f"{type(err).__name__}: {err}"[:2000]
    bad, checked = compare(res, valid, got, size)
    return bad, checked, got, None
