"""Reporting findings: shrinking them (one per target, class and set of operations), writing
repro scripts, and the summary."""

from __future__ import annotations

import argparse
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .bounds import V, f64
from .cases import Case, Draw, grid_of, reference
from .dtypes import BF16, FLOATS
from .run import Runner, compare, run_one
from .shrink import fails, shrink
from .tree import subtrees


def array_literal(a: object) -> str:
    if not isinstance(a, np.ndarray):
        d = "bool_" if isinstance(a, np.bool_) else np.asarray(a).dtype.name
        return f"np.{d}({a.item()!r})"
    name = "bfloat16" if a.dtype == BF16 else a.dtype.name
    if name in FLOATS:
        items = ", ".join(repr(float(x)) for x in f64(a))
        items = items.replace("nan", "np.nan").replace("inf", "np.inf")
        dt = "ml_dtypes.bfloat16" if name == "bfloat16" else f"np.{name}"
        return f"np.array([{items}]).astype({dt})"
    if name == "bool":
        return f"np.array({[bool(x) for x in a]!r})"
    return f"np.array({[int(x) for x in a]!r}, dtype=np.{name})"


def repro_script(case: Case, dr: Draw, target: str, expected: V, valid, got) -> str:
    size = case.out_size(dr)
    od = case.out_dtype()
    if case.kind == "elementwise":
        call = f"{case.name}[{grid_of(case, dr)}](*args, out, {dr.n}, BLOCK={case.block}, " \
               f"target=TARGET)"
    else:
        call = f"{case.name}[{grid_of(case, dr)}](*args, out, {dr.R}, {dr.C}, BR={case.br}, " \
               f"BC={case.bc}, target=TARGET)"
    exp = expected.val[valid][:size]
    dt = "ml_dtypes.bfloat16" if od == "bfloat16" else f"np.{'bool_' if od == 'bool' else od}"
    src = case.source.replace("import cubepy as cube\n", "")
    args_text = "\n".join(f"    {array_literal(a)},  # noqa: E501" for a in dr.arrays)
    return f'''"""Found by bench/fuzz_differential.py (seed {case.seed}) on {target}."""
import sys

import ml_dtypes  # noqa: F401
import numpy as np

import cubepy as cube
{src}

TARGET = sys.argv[1] if len(sys.argv) > 1 else {target!r}
args = [
{args_text}
]
out = np.zeros({size}, {dt})
{call}
print("got     ", out.tolist())
print("expected", {array_literal(exp)}.tolist())  # noqa: E501
'''


@dataclass
class Finding:
    target: str
    klass: str
    case: Case
    draw: Draw
    note: str
    expected: object
    got: object
    small: str = ""


def describe(case: Case) -> str:
    return "\n".join(line for line in case.source.splitlines()
                     if line.startswith("    t") or "cube.load" in line or "r = cube." in line)


def shrink_finding(runner: Runner, f: Finding, shrink_seconds: float) -> tuple[Case, Draw]:
    """The finding's case and draw, shrunk (or as found, if shrinking fails)."""
    try:
        small_case, small_draw = shrink(runner, f.case, f.draw, f.target, f.klass,
                                        int(f.small), shrink_seconds)
        small_case.name = f"repro_{f.case.seed}"
        small_case.source = small_case.render()
        kernel = runner.compile(small_case)
        small_case.name = kernel.__name__
    except Exception:  # noqa: BLE001
        small_case, small_draw = f.case, f.draw
        traceback.print_exc()
    return small_case, small_draw


def write_repro(folder: Path, f: Finding, script: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    safe = f.target.replace(":", "_")
    (folder / f"seed{f.case.seed}_{safe}_{f.klass.replace(' ', '_')}.py").write_text(script)


def report_findings(runner: Runner, findings: list[Finding], targets: list[str],
                    args: argparse.Namespace) -> list[tuple]:
    """Shrink and report: one finding per (target, class, set of operations), within a budget."""
    reports = []
    seen: set[str] = set()
    shrunk_keys: dict[tuple, int] = {}
    shrink_start = time.time()
    for f in findings:
        ops = frozenset(n.op for _, n in subtrees(f.case.expr)) | {f.case.kind, f.case.rkind}
        coarse = (f.target, f.klass, ops)
        shrunk_keys[coarse] = shrunk_keys.get(coarse, 0) + 1
        if shrunk_keys[coarse] > 1 or time.time() - shrink_start > args.shrink_total:
            continue
        small_case, small_draw = shrink_finding(runner, f, args.shrink_seconds)
        key = f"{f.target}|{f.klass}|{describe(small_case)}"
        if key in seen:
            continue
        seen.add(key)
        res, valid = reference(small_case, small_draw)
        bad, _, got, note = run_one(runner, runner.compile(small_case), small_case, small_draw,
                                    f.target)
        daz_res, _ = reference(small_case, small_draw, daz=True)
        ftz = got is not None and not compare(daz_res, valid, got, len(got) - 5)[0]
        other_targets = [t for t in targets if t != f.target and runner.supports(small_case, t)
                         and fails(runner, small_case, small_draw, t, f.klass)]
        script = repro_script(small_case, small_draw, f.target, res, valid, got)
        reports.append((f, small_case, small_draw, note, ftz, other_targets, script, got, res,
                        valid))
        if args.repros:
            write_repro(Path(args.repros), f, script)
    return reports


def print_report(report: tuple) -> None:
    """One distinct finding of the summary."""
    f, c, dr, note, ftz, others, _script, got, res, valid = report
    size = len(got) - 5 if got is not None else 0
    print(f"\n--- {f.target} [{f.klass}]{' (subnormals flushed)' if ftz else ''} "
          f"also on: {others or '-'}  (seed {f.case.seed})")
    if note:
        print("   ", note[:400])
    print(c.source.split("@cube.kernel", 1)[1])
    print("inputs:", [array_literal(a) for a in dr.arrays], "n/R/C:", dr.n, dr.R, dr.C)
    if got is not None:
        bad = compare(res, valid, got, size)[0]
        idx = [i for i, _ in bad if i < size][:6]
        print("at", idx, "expected:", res.val[valid][:size][idx].tolist(), "got:",
              got[:size][idx].tolist())
