"""Shared by the backends that generate Python-shaped source (``cpu`` and ``triton``): value
naming, indentation, and structured control flow. Each backend renders the other ops.

Loop-carried values, ``if`` results and the block arguments that receive them share one
variable, so a loop is emitted as Python mutates variables::

    acc = init
    for k in range(lb, ub, step):
        ...
        acc = new_acc
"""

from __future__ import annotations

import keyword
import re

from ..ir import Block, Function, Op, Operation, Value


class PyEmitter:
    """Renders a function's IR as indented Python lines. Subclasses implement ``render``."""

    indent_unit = "    "

    def __init__(self, fn: Function):
        self.fn = fn
        self.lines: list[str] = []
        self.depth = 0
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.last_line: tuple[str, int] | None = None

    # ---- naming ----

    def fresh(self, hint: str | None) -> str:
        base = re.sub(r"\W", "_", hint or "v") or "v"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "v_" + base
        n = 0
        while f"{base}_{n}" in self.used:
            n += 1
        name = f"{base}_{n}"
        self.used.add(name)
        return name

    def name(self, value: Value) -> str:
        if value.id not in self.names:
            self.names[value.id] = self.fresh(value.name)
        return self.names[value.id]

    def ref(self, value: Value) -> str:
        """How generated code refers to ``value`` (a backend may inline expressions)."""
        return self.name(value)

    def alias(self, value: Value, name: str) -> None:
        self.names[value.id] = name

    # ---- output ----

    def line(self, text: str) -> None:
        self.lines.append(self.indent_unit * self.depth + text)

    def source_comment(self, op: Operation) -> None:
        """A comment naming the user's line, once per line, so generated code reads back (and
        cpu:debug can name the line an error came from); the file too when it is not the
        kernel's (a @cube.func defined elsewhere)."""
        if op.loc is None or (op.loc.file, op.loc.line) == self.last_line:
            return
        self.last_line = (op.loc.file, op.loc.line)
        elsewhere = self.fn.loc is not None and op.loc.file != self.fn.loc.file
        self.line(f"# line {op.loc.line}{f' of {op.loc.file}' if elsewhere else ''}")

    def block(self, block: Block) -> None:
        for op in block.ops:
            if op.op is not Op.YIELD:
                self.emit(op)

    def emit(self, op: Operation) -> None:
        """One op of a block: its source comment, then control flow or ``render``."""
        self.source_comment(op)
        if op.op is Op.FOR:
            self.emit_for(op)
        elif op.op is Op.WHILE:
            self.emit_while(op)
        elif op.op is Op.IF:
            self.emit_if(op)
        else:
            self.render(op)

    def assign_yield(self, block: Block, targets: list[str]) -> None:
        term = block.terminator
        if term is None or not targets:
            return
        self.assign_carried(targets, [self.ref(v) for v in term.operands])

    def assign_carried(self, targets: list[str], values: list[str]) -> None:
        """Hook: carried variables (loop and ``if`` results) take ``values``, all at once."""
        pairs = [(t, v) for t, v in zip(targets, values) if t != v]
        if pairs:
            self.line(", ".join(t for t, _ in pairs) + " = " + ", ".join(v for _, v in pairs))

    def carried_names(self, op: Operation) -> list[str]:
        names = [self.fresh(r.name) for r in op.results]
        for result, name in zip(op.results, names):
            self.alias(result, name)
        return names

    # ---- control flow ----

    def emit_for(self, op: Operation) -> None:
        lb, ub, step, *inits = op.operands
        (body,) = op.regions
        carried = self.carried_names(op)
        for slot, (name, init) in enumerate(zip(carried, inits)):
            self.assign_carried([name], [self.carried_init(op, slot, init)])
        for arg, name in zip(body.args[1:], carried):
            self.alias(arg, name)
        iv = body.args[0]
        self.line(f"for {self.loop_index(iv)} in "
                  f"{self.range_text(op, self.ref(lb), self.ref(ub), self.ref(step))}:")
        self.depth += 1
        self.index_prologue(iv)
        self.block(body)
        self.assign_yield(body, carried)
        if not body.ops or all(o.op is Op.YIELD for o in body.ops):
            self.line("pass")
        self.depth -= 1

    def range_text(self, op: Operation, start: str, stop: str, step: str) -> str:
        """Hook: what a FOR op iterates over (targets with loop hints read ``op.attrs``)."""
        return f"range({start}, {stop}, {step})"

    def carried_init(self, op: Operation, slot: int, init: Value) -> str:
        """Hook: the expression a loop's carried variable ``slot`` starts from."""
        return self.ref(init)

    def loop_index(self, iv: Value) -> str:
        return self.name(iv)

    def index_prologue(self, iv: Value) -> None:
        """Hook: convert the raw loop index to the IR's index dtype."""

    def emit_while(self, op: Operation) -> None:
        cond_block, body = op.regions
        carried = self.carried_names(op)
        for name, init in zip(carried, op.operands):
            self.assign_carried([name], [self.ref(init)])
        for region in (cond_block, body):
            for arg, name in zip(region.args, carried):
                self.alias(arg, name)
        flag = self.fresh("cond")
        # Emitted twice (before the loop and at the end of the body): no `break` needed,
        # which Triton's frontend would refuse.
        self.block(cond_block)
        self.line(f"{flag} = {self.ref(cond_block.terminator.operands[0])}")
        self.line(f"while {flag}:")
        self.depth += 1
        self.block(body)
        self.assign_yield(body, carried)
        self.block(cond_block)
        self.line(f"{flag} = {self.ref(cond_block.terminator.operands[0])}")
        self.depth -= 1

    def emit_if(self, op: Operation) -> None:
        then_block, else_block = op.regions
        results = self.carried_names(op)
        self.line(f"if {self.ref(op.operands[0])}:")
        for branch_index, region in enumerate((then_block, else_block)):
            if branch_index:
                self.line("else:")
            self.depth += 1
            start = len(self.lines)
            self.block(region)
            self.assign_yield(region, results)
            if len(self.lines) == start:
                self.line("pass")
            self.depth -= 1

    def render(self, op: Operation) -> None:
        raise NotImplementedError
