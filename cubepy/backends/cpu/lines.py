"""The CPU target's ops that work line by line along an axis, in its tile form: ``SORT``,
``GATHER``, the reductions and scans by a combine function (written out as loops over each
line, the combine region's ops inside) and ``device_assert``."""

from __future__ import annotations

import math

from ...ir import Op, Operation
from ..base import assert_message
from .registers import reg


class LineOps:
    def sort(self, op: Operation) -> None:
        x = op.operands[0]
        rows = f"{self.n(x)}.reshape(({x.type.numel // x.type.shape[-1]}, {x.type.shape[-1]}))"
        self.line(f"{self.n(op.result)} = rsort({rows}, {op.attrs['descending']})"
                  f".reshape({x.type.shape})")

    def combined(self, op: Operation) -> None:
        """A reduction or scan by a combine function: each line along the axis folded in
        order (from its end for a reversed scan) by the combine region's ops, in a loop."""
        tiles, axis = op.operands, op.attrs["axis"]
        shape, k = tiles[0].type.shape, len(tiles)
        perm = tuple(d for d in range(len(shape)) if d != axis) + (axis,)
        moved = tuple(shape[d] for d in perm)
        outer, n = math.prod(moved[:-1]), shape[axis]
        scan = op.op is Op.SCAN_FN
        rows, outs = [], []
        for tile in tiles:
            src = self.n(tile)
            if perm != tuple(range(len(shape))):
                src = f"np.ascontiguousarray(np.transpose({src}, {perm}))"
            rows.append(self.fresh("lines"))
            self.line(f"{rows[-1]} = {src}.reshape(({outer}, {n}))")
            outs.append(self.fresh("folded"))
            self.line(f"{outs[-1]} = np.empty({(outer, n) if scan else (outer,)}, "
                      f"{reg(tile.type.dtype)})")
        reverse = op.attrs.get("reverse", False)
        first, rest = (n - 1, f"range({n - 2}, -1, -1)") if reverse else (0, f"range(1, {n})")
        accs = [self.fresh("acc") for _ in tiles]
        line, j = self.fresh("line"), self.fresh("j")
        region = op.regions[0]
        self.line(f"for {line} in range({outer}):")
        self.depth += 1
        for acc, lines, out in zip(accs, rows, outs):
            self.line(f"{acc} = {lines}[{line}, {first}]")
            if scan:
                self.line(f"{out}[{line}, {first}] = {acc}")
        self.line(f"for {j} in {rest}:")
        self.depth += 1
        for arg, acc in zip(region.args[:k], accs):
            self.alias(arg, acc)
        for arg, lines in zip(region.args[k:], rows):
            self.alias(arg, self.fresh("later"))
            self.line(f"{self.n(arg)} = {lines}[{line}, {j}]")
        self.block(region)
        combined = [self.n(v) for v in region.terminator.operands]
        self.line(f"{', '.join(accs)} = {', '.join(combined)}")
        if scan:
            for acc, out in zip(accs, outs):
                self.line(f"{out}[{line}, {j}] = {acc}")
        self.depth -= 1
        if not scan:
            for acc, out in zip(accs, outs):
                self.line(f"{out}[{line}] = {acc}")
        self.depth -= 1
        inverse = tuple(perm.index(d) for d in range(len(shape)))
        for result, out in zip(op.results, outs):
            if scan:
                value = f"{out}.reshape({moved})"
                if inverse != tuple(range(len(shape))):
                    value = f"np.ascontiguousarray(np.transpose({value}, {inverse}))"
            elif result.type.is_scalar:
                value = f"{reg(result.type.dtype)}({out}[0])"
            else:
                value = f"{out}.reshape({result.type.shape})"
            self.line(f"{self.n(result)} = {value}")

    def device_assert(self, op: Operation) -> None:
        names = [self.n(v) for v in op.operands]
        if all(v.type.is_scalar for v in op.operands):
            holds = names[0] if len(names) == 1 else f"({names[0]} or not {names[1]})"
        else:
            holds = f"np.all({names[0]})" if len(names) == 1 else \
                f"np.all({names[0]} | ~({names[1]}))"
        self.line(f"if not {holds}:")
        self.line(f"    raise AssertionError({assert_message(op)!r})")

    def gather(self, op: Operation) -> None:
        # as (outer, n, inner) blocks around the axis, src's n and the index's m apart
        src, index = op.operands
        axis, shape = op.attrs["axis"], index.type.shape
        outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        self.line(f"{self.n(op.result)} = rgather("
                  f"{self.n(src)}.reshape(({outer}, {src.type.shape[axis]}, {inner})), "
                  f"{self.n(index)}.reshape(({outer}, {shape[axis]}, {inner})))"
                  f".reshape({shape})")
