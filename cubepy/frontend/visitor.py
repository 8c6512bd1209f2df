"""The frontend: an allow-listed AST visitor that builds typed IR from a kernel's source.

Comptime values and Python literals stay Python objects while we build, so arithmetic on them
is folded as it is written, ``if`` on them picks a branch (the other is never built, since it
may not type-check), and ``static_range`` loops are unrolled. Everything else becomes IR.
"""

from __future__ import annotations

import ast
import builtins as py_builtins
from typing import Any

from ..errors import CompileError
from ..ir import Block, Builder, Function, Op, Param, Type, Value
from ..ir.rules import RuleError
from ..lang import builtins as B
from . import control
from .builtins import call_builtin
from .descriptors import TensorDescriptor
from .pycalls import (
    TILE_METHODS,
    Method,
    call_python,
    call_to,
    describe,
    did_you_mean,
    unknown_name_hint,
)
from .semantics import binary, is_value, plain_int, to_bool, unary
from .source import function_globals, parse_function

BINOPS = {
    ast.Add: Op.ADD, ast.Sub: Op.SUB, ast.Mult: Op.MUL, ast.Div: Op.DIV,
    ast.FloorDiv: Op.FLOORDIV, ast.Mod: Op.MOD, ast.Pow: Op.POW, ast.BitAnd: Op.AND,
    ast.BitOr: Op.OR, ast.BitXor: Op.XOR, ast.LShift: Op.SHL, ast.RShift: Op.SHR,
}
CMPOPS = {ast.Eq: Op.EQ, ast.NotEq: Op.NE, ast.Lt: Op.LT, ast.LtE: Op.LE, ast.Gt: Op.GT,
          ast.GtE: Op.GE}
UNSUPPORTED_HINTS = {
    "ListComp": "build tiles with cube.arange(), cube.full() and elementwise operations",
    "GeneratorExp": "build tiles with cube.arange(), cube.full() and elementwise operations",
    "DictComp": "kernels compute on tiles, not dicts",
    "SetComp": "kernels compute on tiles, not sets",
    "Try": "kernels cannot catch exceptions; guard with masks, or cube.static_assert for "
           "compile-time checks",
    "With": "remove the with-block; kernels have no context managers",
    "Lambda": "define the helper at module level with @cube.func",
    "FunctionDef": "define the helper at module level with @cube.func",
    "Break": "put the exit condition into a `while` loop's condition",
    "Continue": "wrap the rest of the loop body in an `if`",
    "Raise": "use cube.static_assert for compile-time checks",
    "Global": "pass the value as a kernel argument",
    "Nonlocal": "pass the value as a kernel argument",
    "Import": "import at module level",
    "ImportFrom": "import at module level",
    "Delete": "just stop using the variable",
    "Yield": "kernels write results with cube.store()",
    "Await": "kernels are not coroutines",
    "Match": "use if/elif on comptime values",
    "Starred": "pass arguments one by one",
    "Dict": "kernels compute on tiles, not dicts",
    "Set": "kernels compute on tiles, not sets",
    "JoinedStr": "use a plain string",
    "NamedExpr": "assign on its own line",
    "ClassDef": "define classes outside kernels",
}
CONSTRUCT_NAMES = {
    "ListComp": "a list comprehension", "GeneratorExp": "a generator expression",
    "DictComp": "a dict comprehension", "SetComp": "a set comprehension",
    "Try": "`try`", "With": "`with`", "Lambda": "a lambda", "FunctionDef": "a nested def",
    "Break": "`break`", "Continue": "`continue`", "Raise": "`raise`", "Global": "`global`",
    "Nonlocal": "`nonlocal`", "Import": "`import`", "ImportFrom": "`import`",
    "Delete": "`del`", "Yield": "`yield`", "Await": "`await`", "Match": "`match`",
    "Starred": "`*` unpacking", "Dict": "a dict", "Set": "a set", "JoinedStr": "an f-string",
    "NamedExpr": "`:=`", "ClassDef": "a class definition",
}
PY_BUILTINS_ALLOWED = {"range", "min", "max", "abs", "int", "float", "bool", "len", "print",
                       "isinstance", "tuple", "list", "zip", "enumerate", "str"}


class FunctionBuilder(ast.NodeVisitor):
    """Builds the IR of one kernel, or of one @cube.func for one set of argument types."""

    def __init__(self, pyfn: Any, params: list[tuple[str, Any]], is_kernel: bool,
                 call_stack: tuple = ()):
        self.pyfn = pyfn
        self.source = parse_function(pyfn)
        self.globals = function_globals(pyfn)
        self.is_kernel = is_kernel
        self.call_stack = call_stack + (pyfn,)
        self.func_cache: dict[Any, Function] = {}
        body = Block()
        self.b = Builder(body)
        self.node: ast.AST | None = None  # the node being visited (where calls are made)
        self.env: dict[str, Any] = {}
        # names a run-time region assigned but whose value does not live on after it:
        # name -> (the region's line, whether it is a loop's variable)
        self.loop_locals: dict[str, tuple[int, bool]] = {}
        self.params: list[Param] = []
        arg_names = []
        for name, spec in params:
            if isinstance(spec, Type):
                value = Value(spec, None, name)
                body.args.append(value)
                arg_names.append(name)
                self.env[name] = value
                self.params.append(Param(name, False))
            else:
                self.env[name] = spec
                self.params.append(Param(name, True, spec))
        self.function = Function(pyfn.__name__, arg_names, body, self.params,
                                 self.source.loc(self.source.tree))
        self.returned: Any = None
        # a comptime `if` among the function's own statements, and whether one of its
        # branches returned (visit_top_level)
        self.top_level_if = False
        self.reached_return = False

    # ---- entry points ----

    def build(self) -> Function:
        self.visit_top_level(self.source.tree.body)
        if not self.is_kernel:
            values = control.flatten_values(self.returned)
            self.function.returns = [v.type for v in values]
            self.b.yield_(values)
        return self.function

    def visit_top_level(self, stmts: list[ast.stmt]) -> bool:
        """The function's own statements. A comptime ``if`` here is flattened into the branch
        it takes, so that a ``return`` there ends the function, as in Triton's constexpr
        branches (``if not ENABLED: return``). True once a ``return`` was reached."""
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                if i != len(stmts) - 1:
                    self.error(stmt, "code after `return` is never run", "remove it")
                self.visit_return_value(stmt)
                return True
            self.top_level_if = isinstance(stmt, ast.If)  # visit_If flattens it if comptime
            self.visit(stmt)
            if self.reached_return:
                return True
        return False

    def error(self, node: ast.AST, message: str, hint: str | None = None) -> None:
        raise CompileError(message, self.source.loc(node), hint)

    def visit(self, node: ast.AST) -> Any:
        saved, saved_node = self.b.loc, self.node
        self.b.loc, self.node = self.source.loc(node), node
        try:
            return super().visit(node)
        except RuleError as err:
            raise CompileError(err.message, self.source.loc(node), err.hint) from None
        finally:
            self.b.loc, self.node = saved, saved_node

    def visit_block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.Return):
                self.error(stmt, "`return` inside a run-time branch or a loop is not supported",
                           "assign the result to a variable and return it at the end (a "
                           "comptime `if` at the function's top level may return)")
            self.visit(stmt)

    def generic_visit(self, node: ast.AST) -> Any:
        kind = type(node).__name__
        hint = UNSUPPORTED_HINTS.get(kind, "see docs/language.md for what kernels can contain")
        what = CONSTRUCT_NAMES.get(kind, f"`{kind}`")
        self.error(node, f"{what} is not supported inside a kernel", hint)

    # ---- statements ----

    def visit_return_value(self, node: ast.Return) -> None:
        if self.is_kernel:
            if node.value is not None:
                self.error(node, "a kernel cannot return a value",
                           "write results with cube.store(out + offsets, value)")
            return
        self.returned = self.visit(node.value) if node.value is not None else None

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass) -> None:
        pass

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.visit(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            self.error(node.target, "only plain names can be updated in place",
                       "tiles are immutable: write `x = x + y`, or cube.store() to memory")
        current = self.lookup(node.target)
        op = BINOPS.get(type(node.op))
        if op is None:
            self.error(node, "`@=` is not supported inside a kernel",
                       "write `c = cube.dot(a, b)` (or `acc = cube.dot(a, b, acc)`)")
        self.env[node.target.id] = binary(self.b, op, current, self.visit(node.value))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if is_value(value) and value.name is None and value.owner is not None:
                value.name = target.id  # generated code and IR read with the user's names
            self.env[target.id] = value
            self.loop_locals.pop(target.id, None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                self.error(target, f"cannot unpack {describe(value)} into "
                           f"{len(target.elts)} names",
                           "tiles cannot be unpacked into names: load each part with its "
                           "own cube.load(), or pick parts with cube.where()" if is_value(value)
                           else
                           f"write as many names as there are values ({describe(value)})")
            for elt, item in zip(target.elts, value):
                self.assign(elt, item)
        else:
            self.error(target, "only names can be assigned to in a kernel",
                       "tiles are immutable: use cube.where() to change elements, or "
                       "cube.store() to write memory")

    def visit_If(self, node: ast.If) -> None:
        top_level, self.top_level_if = self.top_level_if, False
        cond = self.visit(node.test)
        if not is_value(cond):
            taken = node.body if cond else node.orelse
            if top_level:
                self.reached_return = self.visit_top_level(taken)
            else:
                self.visit_block(taken)
            return
        cond = to_bool(self.b, cond)
        if cond.type.shape:
            self.error(node.test, f"`if` on a tile of shape {cond.type.shape}",
                       "`if` needs a scalar; for tiles use cube.where(cond, a, b)")
        control.build_if(self, node, cond)

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            self.error(node, "for-else is not supported", "move the else-part after the loop")
        if not isinstance(node.target, ast.Name):
            self.error(node.target, "the loop variable must be a single name",
                       "loop over an index, `for i in range(n):`, and compute the rest from it")
        call = node.iter
        fn = self.visit(call.func) if isinstance(call, ast.Call) else None
        if fn is not range and fn is not B.static_range and fn is not B.range:
            self.error(call, "only `range(...)`, `cube.range(...)` and `cube.static_range(...)` "
                       "loops are supported", "loop over indices: `for i in range(0, n, BLOCK):`")
        args = [plain_int(self.visit(a)) for a in call.args]
        if fn is B.static_range:
            if not all(isinstance(a, int) for a in args):
                self.error(call, "cube.static_range() bounds must be compile-time ints",
                           "use range(...) for a loop whose bounds are known at run time")
            for i in B.static_range(*args):
                self.env[node.target.id] = i
                self.visit_block(node.body)
            return
        name = "cube.range" if fn is B.range else "range"
        if not 1 <= len(args) <= 3 or (call.keywords and fn is not B.range):
            self.error(call, f"{name}() takes 1 to 3 positional arguments",
                       f"write {name}(stop), {name}(start, stop) or {name}(start, stop, step)")
        control.build_for(self, node, args, self.loop_hints(call) if fn is B.range else {})

    def loop_hints(self, call: ast.Call) -> dict[str, Any]:
        """The comptime hints of a ``cube.range(...)`` loop (see ``cube.range``)."""
        hints = {}
        for keyword in call.keywords:
            value = self.visit(keyword.value)
            if keyword.arg not in B.LOOP_HINTS:
                self.error(keyword, f"cube.range() has no hint {keyword.arg!r}",
                           "use " + ", ".join(f"{name}=" for name in B.LOOP_HINTS))
            if is_value(value):
                self.error(keyword.value, f"cube.range(): {keyword.arg} must be known at "
                           "compile time", "pass a literal or a cube.Comptime parameter")
            hints[keyword.arg] = value
        try:
            return B._loop_hints(**hints)
        except TypeError as err:
            self.error(call, str(err))

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            self.error(node, "while-else is not supported", "move the else-part after the loop")
        control.build_while(self, node)

    def visit_Assert(self, node: ast.Assert) -> None:
        cond = self.visit(node.test)
        if is_value(cond):  # as Triton's: a device_assert, whose message must be a string
            msg = self.visit(node.msg) if node.msg is not None else ""
            if not isinstance(msg, str):
                self.error(node, "the message of an `assert` on run-time values must be a "
                           "string", 'write assert cond, "what went wrong"')
            call_builtin(self, "device_assert", [cond, msg], {})
            return
        if not cond:
            msg = self.visit(node.msg) if node.msg is not None else ""
            self.error(node, f"assertion failed{': ' + str(msg) if msg else ''}")

    # ---- expressions ----

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        return self.lookup(node)

    def lookup(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.env:
            return self.env[name]
        if name in self.loop_locals:
            line, is_loop_variable = self.loop_locals[name]
            if is_loop_variable:
                self.error(node, f"'{name}' is the variable of the run-time loop at line {line} "
                           "and has no value after it",
                           f"keep what you need in a variable assigned before the loop and "
                           f"updated inside it (e.g. `last = {name}`)")
            self.error(node, f"'{name}' is only assigned inside the loop or branch at line "
                             f"{line}",
                       f"assign '{name}' before that loop or branch so its value is carried out")
        if name in self.globals:
            return self.globals[name]
        if name in PY_BUILTINS_ALLOWED or name in ("True", "False", "None"):
            return getattr(py_builtins, name)
        self.error(node, *unknown_name_hint(name))

    def visit_Slice(self, node: ast.Slice) -> slice:
        """``shape[1:]`` on comptime tuples (tiles take only ``:`` and ``None``)."""
        parts = [self.visit(p) if p is not None else None
                 for p in (node.lower, node.upper, node.step)]
        if any(is_value(p) for p in parts):
            self.error(node, "slice bounds must be compile-time ints",
                       "slice comptime tuples (such as x.shape) with literals or comptime "
                       "values")
        return slice(*parts)

    def visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node: ast.List) -> list:
        return [self.visit(e) for e in node.elts]

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        obj = self.visit(node.value)
        if is_value(obj):
            if node.attr == "dtype":
                return obj.type.dtype
            if node.attr == "shape":
                return obj.type.shape
            if node.attr == "to":
                return Method(obj, "to")
            if node.attr == "T":
                return call_builtin(self, "trans", [obj], {})
            if node.attr in TILE_METHODS:
                return Method(obj, node.attr)
            same = B.is_builtin(getattr(B, node.attr, None))
            self.error(node, f"tiles have no attribute '{node.attr}'",
                       f"write cube.{same}(x, ...) instead" if same else
                       "tiles have .shape, .dtype, .T, .to(dtype) and Triton's methods, "
                       "such as x.sum(axis) and x.reshape(shape)")
        try:
            return getattr(obj, node.attr)
        except AttributeError:
            owner = getattr(obj, "__name__", type(obj).__name__)
            self.error(node, f"'{owner}' has no attribute '{node.attr}'",
                       did_you_mean(node.attr, [n for n in dir(obj) if not n.startswith("_")]))

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        op = BINOPS.get(type(node.op))
        if op is None:  # only `@` is left
            self.error(node, "the `@` operator is not supported inside a kernel",
                       "write cube.dot(a, b) for a matrix product")
        return binary(self.b, op, self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            return unary(self.b, Op.NEG, operand)
        if isinstance(node.op, ast.Not):
            if not is_value(operand):
                return not operand
            if operand.type.shape:
                self.error(node, "`not` on a tile", "use `~mask` for tiles of bool")
            return unary(self.b, Op.NOT, to_bool(self.b, operand))
        return unary(self.b, Op.NOT, operand)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result = self.visit(node.values[0])
        for operand_node in node.values[1:]:
            if not is_value(result):  # Python's short-circuit on comptime values
                if bool(result) != is_and:
                    return result
                result = self.visit(operand_node)
                continue
            rhs = self.visit(operand_node)
            lhs, rhs = to_bool(self.b, result), to_bool(self.b, rhs)
            if (is_value(lhs) and lhs.type.shape) or (is_value(rhs) and rhs.type.shape):
                self.error(node, "`and`/`or` on tiles", "use `&` and `|` on tiles of bool")
            result = binary(self.b, Op.AND if is_and else Op.OR, lhs, rhs)
        return result

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node)
            if isinstance(op_node, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                if is_value(left) or is_value(right):
                    self.error(node, "`is`/`in` only work on compile-time values",
                               "use == and != on tiles")
                value = {ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
                         ast.In: lambda a, b: a in b,
                         ast.NotIn: lambda a, b: a not in b}[type(op_node)](left, right)
            else:
                value = binary(self.b, CMPOPS[type(op_node)], left, right)
            result = value if result is None else binary(self.b, Op.AND, result, value)
            left = right
        return result

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if not is_value(cond):
            return self.visit(node.body if cond else node.orelse)
        return control.build_if_expr(self, node, cond)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        obj = self.visit(node.value)
        index = node.slice
        if not is_value(obj):
            key = self.visit(index)
            if is_value(key):
                self.error(node, f"{ast.unparse(node.value)} is known at compile time and "
                           "cannot be indexed with a run-time value",
                           "index it with a compile-time int, or pick with cube.where()")
            try:  # a comptime value: a shape, a tuple of helpers' results
                return obj[key]
            except (TypeError, IndexError, KeyError) as err:
                self.error(node, f"{ast.unparse(node.value)} is {obj!r}: {err}",
                           "index comptime tuples with compile-time ints in range")
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        value, axis = obj, 0
        for item in items:
            if isinstance(item, ast.Constant) and item.value is None:
                value = self.b.emit(Op.EXPAND_DIMS, value, axis=axis)
                axis += 1
            elif isinstance(item, ast.Slice) and not (item.lower or item.upper or item.step):
                axis += 1
            elif obj.type.is_ptr and not obj.type.shape:
                self.error(node, "arrays cannot be indexed inside a kernel",
                           f"load through a pointer tile: cube.load({ast.unparse(node.value)} + "
                           f"{ast.unparse(index)})")
            else:
                self.error(item, "tiles can only be indexed with `:` and `None`",
                           "use x[:, None] to add an axis; select elements with cube.where() "
                           "or reduce with cube.sum()/cube.max()")
        return value

    def visit_Call(self, node: ast.Call) -> Any:
        fn = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords}
        if any(k is None for k in kwargs):
            self.error(node, "**kwargs is not supported in kernels", "pass arguments by name")
        name = B.is_builtin(fn)
        if name is not None:
            return call_builtin(self, name, args, kwargs)
        if isinstance(fn, Method):
            if fn.name == "to":
                return call_to(self, node, fn.value, args, kwargs)
            return call_builtin(self, fn.name, [fn.value, *args], kwargs)
        if isinstance(getattr(fn, "__self__", None), TensorDescriptor):
            return fn(self, *args, **kwargs)  # desc.load(...) / desc.store(...)
        if isinstance(fn, B.Func):
            return control.call_func(self, node, fn, args, kwargs)
        if hasattr(fn, "__cube_kernel__"):
            self.error(node, "a kernel cannot call another kernel",
                       "decorate the helper with @cube.func instead of @cube.kernel")
        if fn is B.cdiv and any(is_value(a) for a in args):
            if len(args) != 2 or kwargs:
                self.error(node, "cube.cdiv() takes two arguments",
                           "write cube.cdiv(a, b) for ceil(a / b)")
            a, b = args
            return binary(self.b, Op.FLOORDIV,
                          binary(self.b, Op.SUB, binary(self.b, Op.ADD, a, b), 1), b)
        return call_python(self, node, fn, args, kwargs)


def build_kernel(pyfn: Any, params: list[tuple[str, Any]]) -> Function:
    """The IR of a kernel: ``params`` pairs each parameter name with its runtime ``Type`` or,
    for comptime parameters, its value."""
    return FunctionBuilder(pyfn, params, is_kernel=True).build()
