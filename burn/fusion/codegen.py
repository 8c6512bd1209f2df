"""One cubepy kernel for a DAG of ``Lazy`` values, generated at run time and cached.

``trace`` flattens the DAG under a result into steps in dependency order, its distinct
leaves (loaded) and constants (Python numbers, passed by value); the steps and the dtypes
make the plan's key, so every training step that builds the same expression reuses one
kernel (and cubepy's disk cache keeps it across processes: the source is the same text).
``kernel_source`` writes the kernel in cubepy, as a person would: one load per leaf, each op
through ``kernels.elementwise``'s ``apply_unary`` and ``apply_binary``, and one store. Every
step converts its result to its own dtype, as the unfused op would store it, so a fused
bfloat16 chain rounds where the unfused one does (unless the target compiler may contract a
multiply and an add: Triton with ``TRITON_DEFAULT_FP_FUSION=1``).

Example:
    >>> steps = (("binary", "mul", "float32", (("x", 0), ("c", 0)), 0, "float32"),
    ...          ("unary", "exp", "float32", (("t", 0),), 0, "float32"))
    >>> print(kernel_source("fused_doc", (steps, ("float32",), (True,), ("float32",))))
    @cube.kernel
    def fused_doc(x0, x0o, c0, out, n, BLOCK: cube.Comptime[int]):
        idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
        m = idx < n
        x0v = cube.load(x0 + x0o + idx, mask=m, other=1)
        t0 = apply_binary(x0v.to(D_float32), c0.to(D_float32), 'mul').to(D_float32)
        t1 = apply_unary(t0.to(D_float32), 'exp').to(D_float32)
        cube.store(out + idx, t1, mask=m)
    <BLANKLINE>
"""

from __future__ import annotations

import hashlib
import linecache
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cubepy as cube
from cubepy.ir import dtypes as dt
from kernels import elementwise, reduce, softmax, strided
from kernels.layout import Context, View, launch_plan

from .graph import Constant, Lazy, leaf_key

#: a step: (kind, name, compute dtype name, operand refs, first scalar index, dtype name);
#: a ref is ("x", leaf index), ("c", constant index) or ("t", step index)
Step = tuple[str, str, str, tuple[tuple[str, int], ...], int, str]


@dataclass
class Trace:
    """A DAG in a kernel's terms: its key (the steps, the leaves' dtypes and whether each is
    read in order, the constants' dtypes), the leaves it loads, and the values it takes as
    arguments: the constants' and clamp's bounds."""

    key: tuple[Any, ...]
    leaves: list[View]
    constants: list[Any]
    scalars: list[Any]

    @property
    def ops(self) -> int:
        return len(self.key[0])

    @property
    def dense(self) -> bool:
        """Whether every leaf is read in order (the kernel takes no layout arguments)."""
        return all(self.key[2])


def trace(root: Lazy) -> Trace:
    """Flatten the pending values under ``root`` (computed ones become leaves). On the host
    path of every fused launch, so written for speed: one walk, no helper calls per node."""
    steps: list[Step] = []
    leaves: list[View] = []
    constants: list[View] = []
    scalars: list[Any] = []
    refs_of: dict[Any, tuple[str, int]] = {}  # a leaf's key, or a node's id: its ref

    def visit(node: Lazy) -> tuple[str, int]:
        refs = []
        for operand in node.operands:
            if type(operand) is Lazy:
                if operand.real is None:
                    ref = refs_of.get(id(operand)) or visit(operand)
                    refs.append(ref)
                    continue
                operand = operand.view()
            key = leaf_key(operand)
            ref = refs_of.get(key)
            if ref is None:
                if type(operand.storage) is Constant:
                    ref = refs_of[key] = ("c", len(constants))
                    constants.append(operand)
                else:
                    ref = refs_of[key] = ("x", len(leaves))
                    leaves.append(operand)
            refs.append(ref)
        steps.append((*node.head, tuple(refs), len(scalars), node.dtype.name))
        scalars.extend(node.scalars)
        ref = refs_of[id(node)] = ("t", len(steps) - 1)
        return ref

    visit(root)
    key = (tuple(steps), tuple(v.dtype.name for v in leaves),
           tuple(v.is_contiguous for v in leaves), tuple(c.dtype.name for c in constants))
    return Trace(key, leaves, [c.storage.value for c in constants], scalars)


def kernel_source(name: str, key: tuple[Any, ...]) -> str:
    """The cubepy source of the kernel ``name`` for ``key`` (see ``trace``)."""
    steps, leaf_dtypes, in_order, constant_dtypes = key
    dense = all(in_order)
    params = []
    for i, ordered in enumerate(in_order):  # a leaf in order needs no strides
        params += [f"x{i}", f"x{i}o"] + ([] if ordered else [f"x{i}s{j}" for j in range(4)])
    params += [f"c{i}" for i in range(len(constant_dtypes))]
    params += [f"s{j}" for j in range(sum(scalar_count(step) for step in steps))]
    params += ["out", "n"] if dense else ["out", "oo", "n", "d1", "d2", "d3",
                                          "BY_ROW: cube.Comptime[bool]",
                                          *(f"X{i}STEP: cube.Comptime[int]"
                                            for i, ordered in enumerate(in_order)
                                            if not ordered),
                                          "RANK: cube.Comptime[int]"]
    params.append("BLOCK: cube.Comptime[int]")
    lines = ["@cube.kernel", f"def {name}({', '.join(params)}):"]
    lines += (["    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)", "    m = idx < n"]
              if dense else ["    idx, cols, m = lanes(n, d3, BLOCK, BY_ROW)"])
    for i, ordered in enumerate(in_order):
        where = "idx" if ordered else (f"strided_offset(idx, cols, BY_ROW, X{i}STEP, RANK, d1, "
                                       f"d2, d3, x{i}s0, x{i}s1, x{i}s2, x{i}s3)")
        # masked lanes read 1: defined for every op (log, 1/x, ...), as in the unfused kernels
        lines.append(f"    x{i}v = cube.load(x{i} + x{i}o + {where}, mask=m, other=1)")
    for j, step in enumerate(steps):
        lines.append(f"    t{j} = {expression(step)}")
    lines.append(f"    cube.store(out + {'idx' if dense else 'oo + idx'}, t{len(steps) - 1}, "
                 "mask=m)")
    return "\n".join(lines) + "\n"


def scalar_count(step: Step) -> int:
    """The runtime scalars (clamp's bounds) ``step`` takes."""
    return len(step[1]) // 2 if step[0] == "clamp" else 0  # "lo"/"hi": 1, "lohi": 2


def expression(step: Step) -> str:
    """The cubepy expression of ``step``: its operands are ``x{i}v`` (a leaf's loaded
    values), ``c{i}`` (a constant) or ``t{i}`` (an earlier step), its scalars ``s{j}``."""
    kind, name, compute, refs, first_scalar, dtype = step
    args = [{"x": f"x{i}v", "c": f"c{i}", "t": f"t{i}"}[tag] for tag, i in refs]
    ct, out = f"D_{compute}", f"D_{dtype}"
    if kind == "unary":
        return f"apply_unary({args[0]}.to({ct}), {name!r}).to({out})"
    if kind == "binary":
        return f"apply_binary({args[0]}.to({ct}), {args[1]}.to({ct}), {name!r}).to({out})"
    if kind == "where":
        return f"cube.where({args[0]} != 0, {args[1]}.to({out}), {args[2]}.to({out}))"
    value, scalar = f"{args[0]}.to({ct})", first_scalar
    if name.startswith("lo"):
        value, scalar = f"cube.maximum({value}, s{scalar})", scalar + 1
    if name.endswith("hi"):
        value = f"cube.minimum({value}, s{scalar})"
    return f"{value}.to({out})"


#: the names a generated kernel's text may use
NAMESPACE: dict[str, Any] = {
    "cube": cube, "apply_unary": elementwise.apply_unary,
    "apply_binary": elementwise.apply_binary, "element_offset": strided.element_offset,
    "lanes": strided.lanes, "strided_offset": strided.strided_offset,
    "stepped_offset": strided.stepped_offset,
    # a fused reduction's (burn/fusion/reduction.py): kernels.reduce's row kernel parts
    "chunk_end": reduce.chunk_end, "prepare": reduce.prepare, "combine": reduce.combine,
    "row_center": reduce.row_center, "finish_rows": reduce.finish_rows,
    "softmax_tile": softmax.softmax_tile,  # a fused softmax's (burn/fusion/softmax.py)
    **{f"D_{d.name}": d for d in dt.ALL},
}
_kernels: dict[tuple[Any, ...], Any] = {}
_lock = threading.Lock()


def kernel_for(key: tuple[Any, ...], prefix: str = "fused",
               source: Callable[[str, tuple[Any, ...]], str] = kernel_source) -> Any:
    """The kernel for ``key``, its text written by ``source(name, key)`` on first use. Its
    source is registered with ``linecache`` under ``<burn.fusion NAME>``, so cubepy reads it
    as it reads a file and an error in it shows the generated line; the name is ``prefix``
    and a digest of the key, the same in every process (cubepy's disk cache finds the
    compiled kernel again)."""
    kernel = _kernels.get(key)
    if kernel is not None:
        return kernel
    with _lock:
        if key not in _kernels:
            name = f"{prefix}_" + hashlib.sha1(repr(key).encode()).hexdigest()[:12]
            text = source(name, key)
            file = f"<burn.fusion {name}>"
            linecache.cache[file] = (len(text), None, text.splitlines(True), file)
            namespace = dict(NAMESPACE)
            exec(compile(text, file, "exec"), namespace)  # noqa: S102 - our generated text
            _kernels[key] = namespace[name]
        return _kernels[key]


def launch(ctx: Context, root: Lazy, traced: Trace) -> View:
    """Run the kernel of ``traced`` for ``root``'s value into fresh storage from ``ctx``."""
    kernel = kernel_for(traced.key)
    out = ctx.new(root.shape, root.dtype)
    values = [*traced.constants, *traced.scalars]
    if traced.dense:  # every leaf in order: no layout arguments (most of a launch's cost)
        n = out.numel
        args: list[Any] = []
        for leaf in traced.leaves:
            args += [leaf.storage, leaf.offset]
        block = ctx.block(n)
        kernel[(cube.cdiv(n, block),)](*args, *values, out.storage, n, BLOCK=block,
                                       target=ctx.target)
        return out
    in_order = traced.key[2]
    for part in launch_plan(root.shape, traced.leaves):
        args = []
        for i, leaf in enumerate(traced.leaves):
            args += ([leaf.storage, part.offsets[i]] if in_order[i]
                     else [leaf.storage, *strided.operand_args(part, i)])
        go = strided.strided_launch(ctx, part)
        kernel[go.grid](
            *args, *values, out.storage, part.out_offset, *strided.layout_args(part),
            **go.comptimes(*(None if ordered else f"X{i}STEP" for i, ordered in
                             enumerate(in_order))), target=ctx.target)
    return out
