"""Shrinking a mismatch: cut the draw to the failing element, replace subtrees by operands."""

from __future__ import annotations

import time

from .bounds import lit_value
from .cases import Case, Draw
from .run import Runner, run_one
from .tree import Node, clone, infer, replace, subtrees, used_inputs


def single_element_draw(case: Case, dr: Draw, index: int) -> tuple[Case, Draw] | None:
    """The draw cut down to the one failing element (elementwise) or the failing row/column."""
    if case.kind == "elementwise":
        arrays = []
        for i, (a, sc) in enumerate(zip(dr.arrays, case.scalar)):
            if sc:
                arrays.append(a)
            elif case.holes[i] and index % 3 == 1:  # the lane read `other`
                arrays.append(lit_value(Node("lit", value=case.other[i]), case.dtypes[i],
                                        (1,)).val)
            else:
                arrays.append(a[index:index + 1].copy())
        c2 = Case(**{**case.__dict__})
        c2.holes = [False] * len(case.holes)
        c2.block = 16
        return c2, Draw(arrays, n=1)
    if case.post and case.axis is not None:
        index = index // dr.C if case.axis == 1 else index % dr.C
    elif case.post:
        return None
    if case.axis == 1:
        arrays = [a if sc else a[index * dr.C:(index + 1) * dr.C].copy()
                  for a, sc in zip(dr.arrays, case.scalar)]
        return Case(**{**case.__dict__}), Draw(arrays, R=1, C=dr.C)
    if case.axis == 0:
        arrays = [a if sc else a.reshape(dr.R, dr.C)[:, index].copy()
                  for a, sc in zip(dr.arrays, case.scalar)]
        return Case(**{**case.__dict__}), Draw(arrays, R=dr.R, C=1)
    return None


def window_draw(case: Case, dr: Draw, index: int) -> tuple[Case, Draw] | None:
    """Elementwise: the three elements around the failing one, keeping `offs % 3`."""
    if case.kind != "elementwise":
        return None
    j = index - index % 3
    arrays = [a if sc else a[j:j + 3].copy() for a, sc in zip(dr.arrays, case.scalar)]
    c2 = Case(**{**case.__dict__})
    c2.block = 16
    return c2, Draw(arrays, n=min(3, dr.n - j))


def drop_inputs(case: Case, dr: Draw) -> tuple[Case, Draw]:
    """Renumber the inputs to those the expression still uses."""
    keep = sorted(used_inputs(case.expr))
    mapping = {old: new for new, old in enumerate(keep)}
    expr = clone(case.expr)
    for _, n in subtrees(expr):
        if n.op == "in":
            n.value = mapping[n.value]
    c2 = Case(**{**case.__dict__})
    c2.expr = expr
    for f in ("dtypes", "scalar", "other", "holes"):
        setattr(c2, f, [getattr(case, f)[i] for i in keep])
    return c2, Draw([dr.arrays[i] for i in keep], n=dr.n, R=dr.R, C=dr.C)


def fails(runner: Runner, case: Case, dr: Draw, target: str, klass: str) -> bool:
    try:
        infer(case.expr, case.dtypes)
        if not runner.supports(case, target):
            return False
        kernel = runner.compile(case)
    except Exception:  # noqa: BLE001 - a candidate the rules refuse
        return False
    bad, _, _, note = run_one(runner, kernel, case, dr, target)
    if klass == "error":
        return note is not None and note != "unsupported"
    return any(k == klass for _, k in bad)


def shrink(runner: Runner, case: Case, dr: Draw, target: str, klass: str, index: int,
           budget: float) -> tuple[Case, Draw]:
    t0 = time.time()
    cut = single_element_draw(case, dr, index) if klass != "out-of-bounds store" else None
    if cut and fails(runner, *cut, target, klass):
        case, dr = cut
    elif klass != "out-of-bounds store":
        cut = window_draw(case, dr, index)
        if cut and fails(runner, *cut, target, klass):
            case, dr = cut
    changed = True
    while changed and time.time() - t0 < budget:
        changed = False
        for path, node in list(subtrees(case.expr)):
            if time.time() - t0 > budget:
                break
            cands = [a for a in node.args if a.op != "lit"]
            if node.op not in ("in", "lit"):
                cands += [Node("in", value=i) for i in sorted(used_inputs(node))]
            for cand in cands:
                c2 = Case(**{**case.__dict__})
                c2.expr = replace(case.expr, path, clone(cand))
                if c2.expr.op == "lit":
                    continue
                if fails(runner, c2, dr, target, klass):
                    case, changed = c2, True
                    break
            if changed:
                break
    case, dr = drop_inputs(case, dr)
    infer(case.expr, case.dtypes)
    return case, dr
