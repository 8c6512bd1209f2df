"""Reductions (sum, max, min, xor, argmax, argmin along an axis or all axes), cumsum and cumprod.

A reduction of R elements into O outputs gives each output T = min(R, W/O) invocations: each
folds the elements r = t, t+T, ... of its output (reading lazy operands where they are
computed, materialized ones from their registers or from workgroup memory), then the T
partials are combined: with subgroup shuffles (T <= subgroup) or subgroup reductions plus
a short serial fold through workgroup memory (T > subgroup) when the device has subgroups,
else with a tree in workgroup memory (one barrier per level).
"""

from __future__ import annotations

from ...ir import Operation
from ...ir import dtypes as dt
from . import codegen_types as ty
from .codegen_tiles import Idx, dims_from_flat, flat_of

SUBGROUP_TYPES = ("f32", "i32", "u32")


def _simple(expr: str) -> bool:
    return expr.replace("_", "").isalnum()


def _insert(out_dims: list[str], axis: int, r: str) -> list[str]:
    return out_dims[:axis] + [r] + out_dims[axis:]


class ReduceMixin:
    def _combine(self, kind: str, dtype: dt.DType, a: str, b: str) -> str:
        """The expression folding value ``b`` into accumulator ``a``."""
        if kind == "sum":
            return f"{a} + {b}"
        if kind in ("xor", "or"):
            return f"{a} {'^' if kind == 'xor' else '|'} {b}"
        cmp = ">" if kind == "max" else "<"
        if dtype.is_bool:
            return f"({a} {'|' if kind == 'max' else '&'} {b})"
        if dtype.is_float:  # NaN wins (`==`: lavapipe folds a float `!=` on NaN to false)
            return f"select({a}, {b}, {b} {cmp} {a} || !({b} == {b}))"
        return f"{'max' if kind == 'max' else 'min'}({a}, {b})"

    def _replaces(self, base: str, dtype: dt.DType, v: str, best: str, i: str | None = None,
                  at: str | None = None) -> str:
        """Whether value ``v`` (index ``i``) replaces ``best`` (index ``at``) in an argmax
        (``base`` "max") or argmin: it is larger (smaller), or the first NaN, as NumPy's;
        without indices ``v`` comes later, so a tie keeps ``best``. NaN tests use ``==``:
        lavapipe folds a float ``!=`` on NaN to false."""
        cmp = ">" if base == "max" else "<"
        if dtype.is_bool:  # WGSL orders no bools (and workgroup memory holds them as u32)
            v, best = f"u32({v})", f"u32({best})"
        earlier = "" if i is None else f" || ({v} == {best} && {i} < {at})"
        if not dtype.is_float:
            return f"{v} {cmp} {best}{earlier}"
        v_nan, best_nan = f"!({v} == {v})", f"!({best} == {best})"
        # a select, not one `||` chain: lavapipe runs the chain as branches, 1.5x the time
        # of an argmax over workgroup memory
        nan_earlier = "false" if i is None else f"{v_nan} && {i} < {at}"
        return f"select({v} {cmp} {best} || {v_nan}{earlier}, {nan_earlier}, {best_nan})"

    def _identity(self, kind: str, dtype: dt.DType) -> str:
        if kind in ("sum", "xor", "or"):
            return ty.literal(0, dtype)
        return ty.lowest(dtype) if kind in ("max", "argmax") else ty.highest(dtype)

    def reduce(self, op: Operation) -> None:  # noqa: C901 - the phases of one reduction
        (x,) = op.operands
        axis, kind = op.attrs["axis"], op.attrs["kind"]
        is_arg = kind in ("argmax", "argmin")
        shape = x.type.shape
        r_len = shape[axis]
        out_shape = shape[:axis] + shape[axis + 1:]
        n_out = max(1, op.result.type.numel)
        acc_dtype = x.type.dtype if is_arg else op.result.type.dtype
        t = ty.reg(acc_dtype)
        w = self.w
        per = min(r_len, max(1, w // n_out))
        items = n_out * per
        scalar_result = not op.result.type.shape
        combine_threads = per > 1 or scalar_result
        # (an xor or or of subgroups is a tree through workgroup memory: subgroupXor and
        # subgroupOr are newer)
        sg = self.target.subgroup if t in SUBGROUP_TYPES and kind not in ("xor", "or") \
            else None
        # One element per invocation along the last axis, or a whole 1-D tile over all the
        # invocations: each reads the elements it owns (slot j is element lid + j*W).
        owned = axis == len(shape) - 1 and per == r_len and combine_threads and items <= w
        wide = n_out == 1 and per == w and r_len % w == 0 and r_len // w <= 16
        own_layout = self.layouts.std(x.type.numel) if owned or wide else None
        todo = self.needs_staging([x], own_layout)
        staged_before = dict(self.staged)
        res = None if scalar_result else self.new_priv(op.result)
        self.line(f"// {kind} over axis {axis} of {x.type}: {per} invocation(s) per output")
        if todo or combine_threads:
            self.phase_begin()
        if todo:
            self.stage(todo)
            self.barrier()
        base_kind = kind[3:] if is_arg else kind
        val, arg = self.fresh("acc"), self.fresh("at") if is_arg else None

        def fold(value: str, index: str) -> None:
            if not _simple(value):
                name = self.fresh("x")
                self.line(f"let {name} = {value};")
                value = name
            if not is_arg:
                self.line(f"{val} = {self._combine(base_kind, acc_dtype, val, value)};")
                return
            better = self._replaces(base_kind, acc_dtype, value, val)
            self.line(f"if ({better}) {{ {val} = {value}; {arg} = {index}; }}")

        def partial(i: str) -> None:
            """Fold this invocation's elements of output i / per into val (and arg)."""
            o, r0 = (f"({i} / {per}i)", f"({i} % {per}i)") if per > 1 else (i, "0i")
            out_dims = dims_from_flat(o, out_shape) if out_shape else []
            if per == r_len:
                idx = Idx(shape, _insert(out_dims, axis, r0))
                if owned:
                    idx = Idx(shape, idx.dims, "lid", (own_layout, "0"))
                self.with_memo(lambda: fold(
                    ty.convert(self.ev(x, idx), x.type.dtype, acc_dtype), r0))
                return
            if wide:
                for j in range(r_len // w):
                    flat = f"(lid + {j * w}i)" if j else "lid"
                    idx = Idx(shape, _insert(out_dims, axis, flat), flat, (own_layout, str(j)))
                    self.with_memo(lambda idx=idx, flat=flat: fold(
                        ty.convert(self.ev(x, idx), x.type.dtype, acc_dtype), flat))
                return
            r = self.fresh("r")
            self.line(f"for (var {r} = {r0}; {r} < {r_len}i; {r} += {per}i) {{")
            self.depth += 1
            idx = Idx(shape, _insert(out_dims, axis, r))
            self.with_memo(lambda: fold(ty.convert(self.ev(x, idx), x.type.dtype, acc_dtype), r))
            self.depth -= 1
            self.line("}")

        def declare(first_r: str) -> None:
            self.line(f"var {val}: {t} = {self._identity(kind, acc_dtype)};")
            if is_arg:  # ties and all-identity rows resolve to the smallest index
                self.line(f"var {arg}: i32 = {first_r};")

        if not combine_threads:  # one invocation per output: the partial is the result
            for j in range(-(-items // w)):
                self.line("{")
                self.depth += 1
                i = self.fresh("i")
                self.line(f"let {i} = lid + {j * w}i;" if j else f"let {i} = lid;")
                guard = (j + 1) * w > items
                if guard:
                    self.line(f"if ({i} < {items}i) {{")
                    self.depth += 1
                declare("0i")
                partial(i)
                self.line(f"{res.name}[{j}] = {arg if is_arg else val};")
                if guard:
                    self.depth -= 1
                    self.line("}")
                self.depth -= 1
                self.line("}")
            if todo:
                self.phase_end()
            self.staged = staged_before
            return
        declare(f"(lid % {per}i)" if per > 1 else "0i")
        if items < w:
            self.line(f"if (lid < {items}i) {{")
            self.depth += 1
            partial("lid")
            self.depth -= 1
            self.line("}")
        else:
            partial("lid")
        if todo:
            self.barrier()  # the staged operand is read; its slots may be reused below
            self.smem.begin()
        groups = self._combine_threads(kind, acc_dtype, t, val, arg, per, items, sg)
        # now `groups` partials per output lie in workgroup memory: fold them
        sv, si, count = groups
        out_val = self.fresh("red")
        if scalar_result:
            self._fold_groups(kind, acc_dtype, t, sv, si, "0i", count, out_val)
            self.let(op.result, out_val)
        else:
            self.line(f"if (lid < {n_out}i) {{")
            self.depth += 1
            self._fold_groups(kind, acc_dtype, t, sv, si, "lid", count, out_val)
            self.line(f"{res.name}[0] = {out_val};")
            self.depth -= 1
            self.line("}")
        self.phase_end()
        self.staged = staged_before

    def _combine_threads(self, kind, dtype, t, val, arg, per, items, sg):
        """Combine the partials of ``per`` consecutive invocations; returns (value slot, index
        slot, partials per output) of what is left in workgroup memory."""
        is_arg = arg is not None
        base = kind[3:] if is_arg else kind
        st = self.shared_type(t)
        if sg and per <= sg:
            m = 1
            while m < per:
                if is_arg:
                    ov, oi = self.fresh("ov"), self.fresh("oi")
                    self.line(f"let {ov} = subgroupShuffleXor({val}, {m}u);")
                    self.line(f"let {oi} = subgroupShuffleXor({arg}, {m}u);")
                    better = self._replaces(base, dtype, ov, val, oi, arg)
                    self.line(f"if ({better}) {{ {val} = {ov}; {arg} = {oi}; }}")
                else:
                    other = f"subgroupShuffleXor({val}, {m}u)"
                    self.line(f"{val} = {self._combine(kind, dtype, val, other)};")
                m *= 2
            sv = self.smem.alloc(st, max(1, items // per))
            si = self.smem.alloc("i32", max(1, items // per)) if is_arg else None
            self.line(f"if (lid < {items}i && lid % {per}i == 0i) {{")
            self.line(f"    {sv}[lid / {per}i] = {self.to_shared(val, t)};")
            if is_arg:
                self.line(f"    {si}[lid / {per}i] = {arg};")
            self.line("}")
            self.barrier()
            return sv, si, 1
        if sg:
            fn = {"sum": "subgroupAdd", "max": "subgroupMax", "min": "subgroupMin"}[base]
            # subgroupMax/Min of floats may drop NaN (SPIR-V leaves it unspecified): a NaN in
            # any lane is found apart and wins, as in NumPy; its first lane is the argmax
            nan = self.fresh("nan") if dtype.is_float and base != "sum" else None
            if nan:
                self.line(f"let {nan} = subgroupMax(select(0u, 1u, !({val} == {val}))) != 0u;")
            best = f"select({fn}({val}), {ty.literal(float('nan'), dtype)}, {nan})" if nan \
                else f"{fn}({val})"
            if is_arg:
                name = self.fresh("best")
                self.line(f"let {name} = {best};")
                hit = f"select({val} == {name}, !({val} == {val}), {nan})" if nan \
                    else f"{val} == {name}"
                self.line(f"{arg} = subgroupMin(select(2147483647i, {arg}, {hit}));")
                best = name
            self.line(f"{val} = {best};")
            groups = per // sg
            sv = self.smem.alloc(st, max(1, items // sg))
            si = self.smem.alloc("i32", max(1, items // sg)) if is_arg else None
            self.line(f"if (lid < {items}i && lid % {sg}i == 0i) {{")
            self.line(f"    {sv}[lid / {sg}i] = {self.to_shared(val, t)};")
            if is_arg:
                self.line(f"    {si}[lid / {sg}i] = {arg};")
            self.line("}")
            self.barrier()
            return sv, si, groups
        sv = self.smem.alloc(st, items)
        si = self.smem.alloc("i32", items) if is_arg else None
        self.line(f"if (lid < {items}i) {{")
        self.line(f"    {sv}[lid] = {self.to_shared(val, t)};")
        if is_arg:
            self.line(f"    {si}[lid] = {arg};")
        self.line("}")
        self.barrier()
        s = per // 2
        while s >= 1:
            a, b = f"{sv}[lid]", f"{sv}[lid + {s}i]"
            self.line(f"if (lid < {items}i && lid % {per}i < {s}i) {{")
            if is_arg:
                ia, ib = f"{si}[lid]", f"{si}[lid + {s}i]"
                better = self._replaces(base, dtype, b, a, ib, ia)
                self.line(f"    if ({better}) {{ {a} = {b}; {ia} = {ib}; }}")
            else:
                va, vb = self.from_shared(a, t), self.from_shared(b, t)
                self.line(f"    {a} = {self.to_shared(self._combine(kind, dtype, va, vb), t)};")
            self.line("}")
            self.barrier()
            s //= 2
        # the result of output o is at o * per: copy them to the front
        if per > 1:
            return _Strided(sv, per), (_Strided(si, per) if si else None), 1
        return sv, si, 1

    def _fold_groups(self, kind, dtype, t, sv, si, o: str, count: int, out: str) -> None:
        def at(slot, j: str) -> str:
            if isinstance(slot, _Strided):
                return f"{slot.name}[{o} * {slot.step}i]"
            return f"{slot}[{o} * {count}i + {j}]" if count > 1 else f"{slot}[{o}]"

        is_arg = si is not None
        if count == 1:
            first = at(si, "0i") if is_arg else self.from_shared(at(sv, "0i"), t)
            self.line(f"let {out} = {first};")
            return
        base = kind[3:] if is_arg else kind
        v = self.fresh("v")
        self.line(f"var {v}: {t} = {self.from_shared(at(sv, '0i'), t)};")
        if is_arg:
            a = self.fresh("a")
            self.line(f"var {a}: i32 = {at(si, '0i')};")
        j = self.fresh("j")
        self.line(f"for (var {j} = 1i; {j} < {count}i; {j}++) {{")
        if is_arg:
            self.line(f"    let cv = {at(sv, j)}; let ci = {at(si, j)};")
            better = self._replaces(base, dtype, "cv", v, "ci", a)
            self.line(f"    if ({better}) {{ {v} = cv; {a} = ci; }}")
        else:
            self.line(f"    {v} = {self._combine(kind, dtype, v, self.from_shared(at(sv, j), t))};")
        self.line("}")
        self.line(f"let {out} = {a if is_arg else v};")

    # ---- cumsum ----

    def scan(self, op: Operation) -> None:
        (x,) = op.operands
        axis = op.attrs["axis"]
        shape = x.type.shape
        r_len = shape[axis]
        out_shape = shape[:axis] + shape[axis + 1:]
        lines = x.type.numel // r_len
        acc_dtype = op.result.type.dtype
        t = ty.reg(acc_dtype)
        res = self.new_priv(op.result)
        product = op.attrs["kind"] == "cumprod"  # on the line loop below, not _scan_rows
        if not product and axis == len(shape) - 1 and self.w % r_len == 0 and res.layout == \
                self.layouts.std(x.type.numel):
            self._scan_rows(x, res, r_len, acc_dtype)
            return
        todo = self.needs_staging([x], None)
        staged_before = dict(self.staged)
        self.line(f"// {op.attrs['kind']} over axis {axis} of {x.type}: one invocation per line")
        self.phase_begin()
        self.stage(todo)
        if todo:
            self.barrier()
        scratch = self.smem.alloc(self.shared_type(t), x.type.numel)
        w = self.w
        for j in range(-(-lines // w)):
            i = self.fresh("line")
            self.line(f"let {i} = lid + {j * w}i;" if j else f"let {i} = lid;")
            self.line(f"if ({i} < {lines}i) {{")
            self.depth += 1
            acc = self.fresh("acc")
            self.line(f"var {acc}: {t} = {ty.literal(1 if product else 0, acc_dtype)};")
            r = self.fresh("r")
            self.line(f"for (var {r} = 0i; {r} < {r_len}i; {r}++) {{")
            self.depth += 1
            out_dims = dims_from_flat(i, out_shape) if out_shape else []
            idx = Idx(shape, _insert(out_dims, axis, r))

            def body(idx=idx, acc=acc) -> None:
                v = ty.convert(self.ev(x, idx), x.type.dtype, acc_dtype)
                self.line(f"{acc} = {acc} {'*' if product else '+'} {v};")
                self.line(f"{scratch}[{flat_of(idx)}] = {self.to_shared(acc, t)};")

            self.with_memo(body)
            self.depth -= 1
            self.line("}")
            self.depth -= 1
            self.line("}")
        self.barrier()
        self.element_loop(res.layout, shape, lambda idx: self.line(
            f"{res.name}[{idx.owner[1]}] = {self.from_shared(f'{scratch}[{flat_of(idx)}]', t)};"))
        self.phase_end()
        self.staged = staged_before


    def _scan_rows(self, x, res, r_len: int, acc_dtype) -> None:
        """cumsum along the last axis when a row fits in the workgroup: invocation ``lid`` owns
        element ``r = lid % R`` of a row in each slot, so a row is R consecutive invocations;
        scan them with subgroup scans (plus the totals of earlier subgroups of the row) or with
        a Hillis-Steele scan in workgroup memory."""
        t = ty.reg(acc_dtype)
        layout = res.layout
        w, n = self.w, x.type.numel
        sg = self.target.subgroup if t in SUBGROUP_TYPES else None
        self.line(f"// cumsum over rows of {r_len}: {r_len} invocations per row")
        zero = ty.literal(0, acc_dtype)
        staged_before = dict(self.staged)
        todo = self.needs_staging([x], layout)
        if todo:
            self.phase_begin()
            self.stage(todo)
            self.barrier()
        r = f"(lid % {r_len}i)"
        values = []
        for k in range(layout.slots):  # every slot read before the scans reuse the memory
            v = self.fresh("v")
            values.append(v)
            self.line(f"var {v}: {t} = {zero};")
            e = f"(lid + {k * w}i)" if k else "lid"
            guard = (k + 1) * w > n
            if guard:
                self.line(f"if ({e} < {n}i) {{")
                self.depth += 1
            idx = Idx(x.type.shape, dims_from_flat(e, x.type.shape), e, (layout, str(k)))
            self.with_memo(lambda idx=idx, v=v: self.line(
                f"{v} = {ty.convert(self.ev(x, idx), x.type.dtype, acc_dtype)};"))
            if guard:
                self.depth -= 1
                self.line("}")
        if todo:  # the staged operand is read: a barrier before its slots are reused
            self.phase_end()
        for k, v in enumerate(values):
            self.phase_begin()
            if sg and r_len <= sg:
                d = 1
                while d < r_len:
                    self.line(f"{{ let up = subgroupShuffleUp({v}, {d}u); "
                              f"if ({r} >= {d}i) {{ {v} = {v} + up; }} }}")
                    d *= 2
            elif sg:
                self.line(f"{v} = subgroupInclusiveAdd({v});")
                totals = self.smem.alloc(self.shared_type(t), w // sg)
                self.line(f"if (lid % {sg}i == {sg - 1}i) {{ {totals}[lid / {sg}i] = {v}; }}")
                self.barrier()
                g = self.fresh("g")
                self.line(f"for (var {g} = (lid / {r_len}i) * {r_len // sg}i; {g} < lid / {sg}i; "
                          f"{g}++) {{ {v} = {v} + {totals}[{g}]; }}")
            else:
                buf = self.smem.alloc(self.shared_type(t), w)
                self.line(f"{buf}[lid] = {v};")
                d = 1
                while d < r_len:
                    self.barrier()
                    up = self.fresh("up")
                    self.line(f"var {up}: {t} = {zero};")
                    self.line(f"if ({r} >= {d}i) {{ {up} = {buf}[lid - {d}i]; }}")
                    self.barrier()
                    self.line(f"{v} = {v} + {up};")
                    self.line(f"{buf}[lid] = {v};")
                    d *= 2
            self.phase_end()
            self.line(f"{res.name}[{k}] = {v};")
        self.staged = staged_before


class _Strided:
    """Partials of output o at ``name[o * step]`` (a tree's results)."""

    def __init__(self, name: str, step: int):
        self.name, self.step = name, step
