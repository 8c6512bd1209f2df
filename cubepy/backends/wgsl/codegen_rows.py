"""The ops that work line by line on the ``wgsl`` target: ``SORT``, ``GATHER`` and the
reductions and scans by a combine function.

A sort sends the tile to workgroup memory, where a bitonic network orders every row along the
last axis (each invocation compares and swaps pairs, a barrier between steps), and brings it
back into the result's private array. A gather reads its source at data-dependent places,
through workgroup memory. A combine function folds each line in order, one invocation per
line, its results passing through workgroup memory to the result's layout."""

from __future__ import annotations

from ...ir import Op, Operation
from . import codegen_types as ty
from .codegen_tiles import Idx, dims_from_flat, flat_of


class RowsMixin:
    def sort(self, op: Operation) -> None:
        (x,) = op.operands
        shape, n = x.type.shape, x.type.numel
        row = shape[-1]
        t = ty.reg(x.type.dtype)
        res = self.new_priv(op.result)
        order = "descending" if op.attrs["descending"] else "ascending"
        self.line(f"// sort rows of {row} of {x.type} ({order}): a bitonic network in "
                  "workgroup memory")
        staged_before = dict(self.staged)
        self.phase_begin()
        std = self.layouts.std(n)
        todo = self.needs_staging([x], std)
        self.stage(todo)
        if todo:
            self.barrier()
        keys = self.smem.alloc(t, n)
        self.element_loop(std, shape, lambda idx: self.with_memo(lambda: self.line(
            f"{keys}[{flat_of(idx)}] = {self.ev(x, idx)};")))
        self.barrier()
        if row > 1:
            self._bitonic_steps(keys, n, row, op.attrs["descending"])
        self.element_loop(res.layout, shape, lambda idx: self.line(
            f"{res.name}[{idx.owner[1]}] = {keys}[{flat_of(idx)}];"))
        self.phase_end()
        self.staged = staged_before

    def _bitonic_steps(self, keys: str, n: int, row: int, descending: bool) -> None:
        # step (k, j) pairs element i (its bit j clear) with i + j; the pair is in order when
        # it rises within blocks of k whose bit k is clear (falls otherwise), reversed when
        # descending. Pairs never straddle rows, as j < k <= row.
        k, j, p, i = (self.fresh(name) for name in ("k", "j", "p", "i"))
        a, b = self.fresh("a"), self.fresh("b")
        self.line(f"for (var {k} = 2i; {k} <= {row}i; {k} = {k} * 2i) {{")
        self.line(f"    for (var {j} = {k} / 2i; {j} > 0i; {j} = {j} / 2i) {{")
        self.line(f"        for (var {p} = lid; {p} < {n // 2}i; {p} = {p} + {self.w}i) {{")
        self.line(f"            let {i} = ({p} / {j}) * 2i * {j} + {p} % {j};")
        self.line(f"            let {a} = {keys}[{i}];")
        self.line(f"            let {b} = {keys}[{i} + {j}];")
        rising = f"(({i} % {row}i) & {k}) == 0i"
        if descending:
            rising = f"!({rising})"
        self.line(f"            if (select(({a} < {b}), ({a} > {b}), {rising})) {{")
        self.line(f"                {keys}[{i}] = {b};")
        self.line(f"                {keys}[{i} + {j}] = {a};")
        self.line("            }")
        self.line("        }")
        self.line("        workgroupBarrier();")
        self.line("    }")
        self.line("}")

    def gather(self, op: Operation) -> None:
        """Each element reads ``src`` at its own index with the axis coordinate taken from
        ``index``: ``src`` through workgroup memory when it is materialized (any element may
        be wanted anywhere), ``index`` in the result's layout."""
        src, index = op.operands
        axis = op.attrs["axis"]
        res = self.new_priv(op.result)
        self.line(f"// gather along axis {axis} of {src.type}")
        staged_before = dict(self.staged)
        self.phase_begin()
        todo = self.needs_staging([src], None)
        todo += [v for v in self.needs_staging([index], res.layout) if v not in todo]
        self.stage(todo)
        if todo:
            self.barrier()

        def element(idx: Idx) -> None:
            dims = list(idx.dims)
            dims[axis] = f"i32({self.ev(index, idx)})"
            self.line(f"{res.name}[{idx.owner[1]}] = {self.ev(src, Idx(src.type.shape, dims))};")

        self.element_loop(res.layout, index.type.shape, lambda idx: self.with_memo(
            lambda: element(idx)))
        self.phase_end()
        self.staged = staged_before

    def combined(self, op: Operation) -> None:
        tiles, axis = op.operands, op.attrs["axis"]
        shape = tiles[0].type.shape
        n, numel = shape[axis], tiles[0].type.numel
        lines, scan = numel // n, op.op is Op.SCAN_FN
        kinds = [ty.reg(t.type) for t in tiles]
        what = "scan" if scan else "reduction"
        self.line(f"// {what} by a combine function along axis {axis} of {shape}: one "
                  "invocation per line")
        staged_before = dict(self.staged)
        self.phase_begin()
        todo = self.needs_staging(list(tiles), None)
        self.stage(todo)
        if todo:
            self.barrier()
        scratch = [self.smem.alloc(self.shared_type(t), numel if scan else lines)
                   for t in kinds]
        for j in range(-(-lines // self.w)):
            line = self.fresh("line")
            self.line(f"let {line} = lid + {j * self.w}i;" if j else f"let {line} = lid;")
            self.line(f"if ({line} < {lines}i) {{")
            self.depth += 1
            self._fold_line(op, line, scratch)
            self.depth -= 1
            self.line("}")
        self.barrier()
        for result, slot, t in zip(op.results, scratch, kinds):
            if not result.type.shape:
                self.let(result, self.from_shared(f"{slot}[0]", t))
                continue
            res = self.new_priv(result)
            self.element_loop(res.layout, result.type.shape, lambda idx, res=res, slot=slot,
                              t=t: self.line(f"{res.name}[{idx.owner[1]}] = "
                                             f"{self.from_shared(f'{slot}[{flat_of(idx)}]', t)};"))
        self.phase_end()
        self.staged = staged_before

    def _fold_line(self, op: Operation, line: str, scratch: list[str]) -> None:
        """The accumulators of one line, folded over its elements by the combine region; a
        scan keeps each step's values in ``scratch``, a reduction the last ones."""
        tiles, axis = op.operands, op.attrs["axis"]
        shape, region, k = tiles[0].type.shape, op.regions[0], len(op.operands)
        n, scan = shape[axis], op.op is Op.SCAN_FN
        out_shape = shape[:axis] + shape[axis + 1:]
        out_dims = dims_from_flat(line, out_shape) if out_shape else []
        kinds = [ty.reg(t.type) for t in tiles]

        def at(r: str) -> Idx:
            return Idx(shape, out_dims[:axis] + [r] + out_dims[axis:])

        def keep(where: str) -> None:
            for acc, slot, t in zip(accs, scratch, kinds):
                self.line(f"{slot}[{where}] = {self.to_shared(acc, t)};")

        reverse = op.attrs.get("reverse", False)
        first = f"{n - 1}i" if reverse else "0i"
        accs = [self.fresh("acc") for _ in tiles]
        for acc, tile, t in zip(accs, tiles, kinds):
            self.with_memo(lambda acc=acc, tile=tile, t=t: self.line(
                f"var {acc}: {t} = {self.ev(tile, at(first))};"))
        if scan:
            keep(flat_of(at(first)))
        r = self.fresh("r")
        loop = f"var {r} = {n - 2}i; {r} >= 0i; {r}--" if reverse else \
            f"var {r} = 1i; {r} < {n}i; {r}++"
        self.line(f"for ({loop}) {{")
        self.depth += 1
        for arg, acc in zip(region.args[:k], accs):
            self.names[arg.id] = acc
        for arg, tile in zip(region.args[k:], tiles):
            later = self.fresh("later")
            self.with_memo(lambda later=later, tile=tile: self.line(
                f"let {later} = {self.ev(tile, at(r))};"))
            self.names[arg.id] = later
        self.block(region)
        combined = [self.scalar(v) for v in region.terminator.operands]
        folded = [self.fresh("folded") for _ in accs]
        for name, value in zip(folded, combined):  # all read before any accumulator changes
            self.line(f"let {name} = {value};")
        for acc, name in zip(accs, folded):
            self.line(f"{acc} = {name};")
        if scan:
            keep(flat_of(at(r)))
        self.depth -= 1
        self.line("}")
        if not scan:
            keep(line)
