"""Structured control flow and calls: runtime ``if``/``for``/``while`` and @cube.func calls.

Variables a region assigns that existed before it are carried through the op (loop-carried
values, or the results of an ``if``); a Python literal carried this way takes the dtype and
shape the body gives it (``acc = 0.0`` then ``acc += tile`` makes ``acc`` a tile).
"""

from __future__ import annotations

import ast
import inspect
from typing import TYPE_CHECKING, Any

from ..ir import Block, Op, Type, Value, walk
from ..ir import dtypes as dt
from ..ir.rules import broadcast_shapes
from .semantics import common_dtype, is_literal, is_value, materialize, to_bool

if TYPE_CHECKING:
    from .visitor import FunctionBuilder


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names a list of statements assigns, in order of first assignment."""
    names: dict[str, None] = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names[node.id] = None
    return list(names)


def flatten_values(obj: Any) -> list[Value]:
    if is_value(obj):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [v for item in obj for v in flatten_values(item)]
    return []


def _rebuild(template: Any, results: Any) -> Any:
    if is_value(template):
        return next(results)
    if isinstance(template, (tuple, list)):
        return type(template)(_rebuild(t, results) for t in template)
    return template


def _type_of(x: Any) -> Type:
    return x.type if is_value(x) else Type(dt.literal_dtype(x))


def _merged_type(fb: FunctionBuilder, node: ast.AST, name: str, a: Any, b: Any) -> Type:
    """The one type a variable has after an ``if`` whose branches give it ``a`` and ``b``."""
    if is_value(a) and is_value(b):
        if a.type != b.type:
            fb.error(node, f"'{name}' is {a.type} in one branch and {b.type} in the other",
                     f"give '{name}' the same dtype and shape in both branches, e.g. with "
                     f"`.to(cube.{b.type.dtype.name})`")
        return a.type
    shape = a.type.shape if is_value(a) else b.type.shape if is_value(b) else ()
    return Type(common_dtype(a, b), shape)


def _coerce(fb: FunctionBuilder, x: Any, type: Type) -> Value:
    return materialize(fb.b, x, type.dtype, type.shape)


def build_if(fb: FunctionBuilder, node: ast.If, cond: Value) -> None:
    before = fb.env
    blocks, envs = [Block(), Block()], []
    for block, stmts in zip(blocks, (node.body, node.orelse)):
        fb.env = dict(before)
        with fb.b.at(block):
            fb.visit_block(stmts)
        envs.append(fb.env)
    fb.env = before
    then_env, else_env = envs
    names, types = [], []
    for name in assigned_names(node.body + node.orelse):
        if name not in then_env or name not in else_env:
            fb.loop_locals.setdefault(name, (fb.source.loc(node).line, False))
            continue
        a, b = then_env[name], else_env[name]
        if _is_block_pointer(a) or _is_block_pointer(b):
            if a is not b:
                fb.error(node, f"block pointer '{name}' is moved in a run-time branch",
                         "move it alike on both sides (after the if), or pick its offsets "
                         "with cube.where and advance it once")
            fb.env[name] = a
            continue
        if not is_value(a) and not is_value(b) and type(a) is type(b) and a == b:
            fb.env[name] = a
            continue
        if a is before.get(name) and b is before.get(name):
            continue
        names.append(name)
        types.append(_merged_type(fb, node, name, a, b))
    for block, env in zip(blocks, envs):
        with fb.b.at(block):
            fb.b.yield_([_coerce(fb, env[n], t) for n, t in zip(names, types)])
    op = fb.b.create(Op.IF, [cond], result_types=types, regions=blocks)
    for name, result in zip(names, op.results):
        fb.env[name] = result


# Ops that must not run in the branch not taken: memory accesses (the address may be out of
# bounds there) and prints.
_GUARDED = frozenset({Op.LOAD, Op.BLOCK_LOAD, Op.STORE, Op.BLOCK_STORE, Op.ATOMIC,
                      Op.ATOMIC_CAS, Op.PRINT, Op.ASSERT, Op.ASSUME})


def _guarded(block: Block) -> bool:
    for op in walk(block):
        if op.op in _GUARDED or (op.op is Op.CALL and _guarded(op.attrs["callee"].body)):
            return True
    return False


def build_if_expr(fb: FunctionBuilder, node: ast.IfExp, cond: Value) -> Any:
    """``a if cond else b`` on a run-time condition. Pure sides become ``cube.where`` (both
    computed; elementwise on a tile condition); a side that touches memory or prints runs only
    when taken, as in Python: an IF op on a scalar condition, an error on a tile one."""
    from .builtins import call_builtin

    blocks, values = [Block(), Block()], []
    for block, expr in zip(blocks, (node.body, node.orelse)):
        with fb.b.at(block):
            values.append(fb.visit(expr))
    if not any(_guarded(block) for block in blocks):
        for block in blocks:
            fb.b.block.ops.extend(block.ops)
        return call_builtin(fb, "where", [cond, *values], {})
    cond = to_bool(fb.b, cond)
    if cond.type.shape:
        fb.error(node, "`a if mask else b` on a tile computes both sides, and one of them "
                 "loads, stores or prints", "guard the memory access with its mask= argument "
                 "(e.g. `cube.load(p, mask=m, other=0.0)`), then pick with cube.where()")
    a, b = values
    for value in values:
        if not is_value(value) and not is_literal(value):
            fb.error(node, f"a conditional expression cannot give {value!r}",
                     "give a tile or a scalar in both branches")
    if any(is_value(v) and v.type.is_ptr for v in values):
        if not (is_value(a) and is_value(b) and a.type == b.type):
            fb.error(node, "the branches give different pointers or a pointer and a number",
                     "give pointer tiles into the same array, of the same shape, on both sides")
        merged = a.type
    else:
        merged = Type(common_dtype(a, b),
                      broadcast_shapes(_type_of(a).shape, _type_of(b).shape))
    for block, value in zip(blocks, values):
        with fb.b.at(block):
            fb.b.yield_([_coerce(fb, value, merged)])
    return fb.b.create(Op.IF, [cond], result_types=[merged], regions=blocks).results[0]


def _is_block_pointer(value: Any) -> bool:
    return getattr(value, "is_block_pointer", False)


class _CarriedBlockPointers:
    """A loop's carried block pointers: each one's corner coordinates are carried as slots of
    their own, named ``<name>.<axis>`` (which no Python variable can be)."""

    def __init__(self, fb: FunctionBuilder, carried: list[str]):
        self.templates = {n: fb.env[n] for n in carried if _is_block_pointer(fb.env[n])}
        self.slots: dict[str, list[str]] = {}
        self.carried: list[str] = []
        for name in carried:
            if name not in self.templates:
                self.carried.append(name)
                continue
            coords = self.templates[name].carried()
            keys = [f"{name}.{axis}" for axis in range(len(coords))]
            fb.env.update(zip(keys, coords))
            self.slots[name] = keys
            self.carried += keys

    def rebuild(self, fb: FunctionBuilder) -> None:
        """Each block pointer from its slots' values in ``fb.env``."""
        for name, keys in self.slots.items():
            fb.env[name] = self.templates[name].rebuild([fb.env[k] for k in keys])

    def flatten(self, fb: FunctionBuilder, node: ast.AST) -> None:
        """The slots' values from the block pointers the loop body left in ``fb.env``."""
        for name, keys in self.slots.items():
            value = fb.env.get(name)
            if not self.templates[name].same_view(value):
                fb.error(_last_assignment(node, name), f"loop-carried block pointer '{name}' "
                         "must stay a block pointer into the same view with the same block",
                         "move it with cube.advance()")
            fb.env.update(zip(keys, value.carried()))

    def finish(self, fb: FunctionBuilder) -> None:
        """After the loop: the block pointers from its results, the slots gone."""
        self.rebuild(fb)
        for keys in self.slots.values():
            for key in keys:
                fb.env.pop(key, None)


def _loop_types(fb: FunctionBuilder, node: ast.AST, carried: list[str],
                build_body: Any) -> tuple[list[Type], list[Block]]:
    """Build a loop's regions until the carried types are stable.

    A carried Python literal is weak: if the body turns it into another dtype or a tile, the
    body is built again with the carried value typed that way (at most once per variable).
    """
    before = fb.env
    types = [_type_of(before[n]) for n in carried]
    weak = [not is_value(before[n]) for n in carried]
    for _attempt in range(len(carried) + 1):
        blocks, yielded = build_body(types)
        fb.env = before
        changed = False
        for i, (name, y) in enumerate(zip(carried, yielded)):
            if not is_value(y) or y.type == types[i]:
                continue
            if weak[i]:
                types[i], weak[i], changed = y.type, False, True
                continue
            fb.error(_last_assignment(node, name),
                     f"loop-carried variable '{name}' is {types[i]} before the loop "
                     f"and {y.type} after one iteration",
                     f"initialize '{name}' with its final type before the loop, e.g. "
                     f"`{name} = cube.zeros({y.type.shape}, cube.{y.type.dtype.name})`"
                     if y.type.shape else
                     f"initialize '{name}' with its final dtype, e.g. with "
                     f"`.to(cube.{y.type.dtype.name})`")
        if not changed:
            with fb.b.at(blocks[-1]):
                fb.b.yield_([_coerce(fb, y, t) for y, t in zip(yielded, types)])
            return types, blocks
    raise AssertionError("carried types did not settle")  # pragma: no cover


def _last_assignment(loop: ast.AST, name: str) -> ast.AST:
    """The loop body's last statement assigning ``name`` (where a type change is written),
    or the loop itself."""
    found: ast.AST = loop
    for stmt in ast.walk(loop):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []
        names = {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        if name in names and (found is loop or _position(stmt) > _position(found)):
            found = stmt
    return found


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _carried_out(fb: FunctionBuilder, node: ast.AST, carried: list[str]) -> list[Any]:
    """The values a loop body leaves in its carried variables."""
    for name in carried:
        if name not in fb.env:  # an inner run-time loop's variable reused the name
            fb.error(node, f"'{name}' has no value at the end of the loop body: it is the "
                     f"variable of the run-time loop at line {fb.loop_locals[name][0]}",
                     "give the inner loop's variable another name")
    return [fb.env[n] for n in carried]


def _finish_loop(fb: FunctionBuilder, node: ast.AST, before: dict, carried: list[str],
                 results: list[Value], body_stmts: list[ast.stmt],
                 target: str | None = None) -> None:
    fb.env = before
    for name, result in zip(carried, results):
        fb.env[name] = result
    line = fb.source.loc(node).line
    for name in assigned_names(body_stmts):
        if name not in before:
            fb.loop_locals[name] = (line, False)
    if target is not None:  # Python's last index is not carried out of a run-time loop
        fb.env.pop(target, None)
        fb.loop_locals[target] = (line, True)


def build_for(fb: FunctionBuilder, node: ast.For, args: list[Any],
              hints: dict[str, Any] | None = None) -> None:
    """A FOR op for ``for target in range(*args)``; ``hints`` (cube.range's) become its
    attributes."""
    if len(args) == 1:
        args = [0, args[0], 1]
    elif len(args) == 2:
        args = [args[0], args[1], 1]
    for a in args:
        if is_value(a) and (a.type.shape or not a.type.dtype.is_int):
            fb.error(node.iter, f"range() bounds must be integer scalars, got {a.type}",
                     "convert a float bound with int(x); reduce a tile with cube.max(x)")
        if not is_value(a) and not isinstance(a, int):
            fb.error(node.iter, f"range() bounds must be integers, got {a!r}",
                     "pass ints, e.g. `range(0, n, BLOCK)`")
    index_dtype = dt.int32
    for a in args:
        if is_value(a):
            index_dtype = dt.promote(index_dtype, a.type.dtype)
    bounds = [materialize(fb.b, a, index_dtype) for a in args]
    target = node.target.id
    before = fb.env
    pointers = _CarriedBlockPointers(fb, [n for n in assigned_names(node.body)
                                          if n in before and n != target])
    carried = pointers.carried

    def build_body(types: list[Type]) -> tuple[list[Block], list[Any]]:
        body = Block()
        body.args = [Value(Type(index_dtype), None, target)]
        body.args += [Value(t, None, n) for n, t in zip(carried, types)]
        fb.env = dict(before) | dict(zip(carried, body.args[1:])) | {target: body.args[0]}
        pointers.rebuild(fb)
        with fb.b.at(body):
            fb.visit_block(node.body)
        pointers.flatten(fb, node)
        return [body], _carried_out(fb, node, carried)

    types, (body,) = _loop_types(fb, node, carried, build_body)
    inits = [_coerce(fb, before[n], t) for n, t in zip(carried, types)]
    op = fb.b.create(Op.FOR, bounds + inits, dict(hints or {}), result_types=types,
                     regions=[body])
    _finish_loop(fb, node, before, carried, op.results, node.body, target)
    pointers.finish(fb)


def build_while(fb: FunctionBuilder, node: ast.While) -> None:
    before = fb.env
    pointers = _CarriedBlockPointers(fb, [n for n in assigned_names(node.body) if n in before])
    carried = pointers.carried

    def build_regions(types: list[Type]) -> tuple[list[Block], list[Any]]:
        cond_block = Block([Value(t, None, n) for n, t in zip(carried, types)])
        fb.env = dict(before) | dict(zip(carried, cond_block.args))
        pointers.rebuild(fb)
        with fb.b.at(cond_block):
            cond = fb.visit(node.test)
            if not is_value(cond):
                fb.error(node.test, "the while condition is a compile-time constant",
                         "make it depend on a variable the loop changes")
            cond = to_bool(fb.b, cond)
            if cond.type.shape:
                fb.error(node.test, f"while condition is a tile of shape {cond.type.shape}",
                         "reduce it to a scalar, e.g. `cube.max(flags, axis=None) > 0`")
            fb.b.yield_([cond])
        body = Block([Value(t, None, n) for n, t in zip(carried, types)])
        fb.env = dict(before) | dict(zip(carried, body.args))
        pointers.rebuild(fb)
        with fb.b.at(body):
            fb.visit_block(node.body)
        pointers.flatten(fb, node)
        return [cond_block, body], _carried_out(fb, node, carried)

    types, regions = _loop_types(fb, node, carried, build_regions)
    inits = [_coerce(fb, before[n], t) for n, t in zip(carried, types)]
    op = fb.b.create(Op.WHILE, inits, result_types=types, regions=regions)
    _finish_loop(fb, node, before, carried, op.results, node.body)
    pointers.finish(fb)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return ("unhashable", repr(value))


def call_func(fb: FunctionBuilder, node: ast.Call, func: Any, args: list[Any],
              kwargs: dict[str, Any]) -> Any:
    """Build (or reuse) the callee for these argument types and emit a CALL to inline later."""
    from .visitor import FunctionBuilder

    if func.fn in fb.call_stack:
        fb.error(node, f"@cube.func {func.fn.__name__} calls itself",
                 "recursion cannot be inlined; write a loop")
    signature = inspect.signature(func.fn)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as err:
        fb.error(node, f"{func.fn.__name__}(): {err}",
                 f"call it as {func.fn.__name__}{signature}")
    bound.apply_defaults()
    params, operands = [], []
    for name, value in bound.arguments.items():
        if is_value(value):
            params.append((name, value.type))
            operands.append(value)
        elif flatten_values(value):
            fb.error(node, f"argument '{name}' mixes tiles into a Python container",
                     "pass each tile as its own argument")
        else:
            params.append((name, value))
    key = (func.fn, tuple((n, s if isinstance(s, Type) else ("py", _hashable(s)))
                          for n, s in params))
    callee = fb.func_cache.get(key)
    if callee is None:
        builder = FunctionBuilder(func.fn, params, is_kernel=False, call_stack=fb.call_stack)
        builder.func_cache = fb.func_cache
        callee = builder.build()
        callee.return_template = builder.returned
        fb.func_cache[key] = callee
    op = fb.b.create(Op.CALL, operands, {"callee": callee}, result_types=callee.returns)
    return _rebuild(callee.return_template, iter(op.results))
