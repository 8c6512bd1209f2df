"""More errors a user can cause, found by writing wrong kernels on purpose: each message names
the user's file:line:col, shows the line with a caret under the offending code and says what to
write instead; and Python constructs that were silently miscompiled now match Python.

The kernels are plain functions decorated inside the tests, as in test_errors.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_errors import _arrays, _compile_error, check_user_error

import cubepy as cube


def _underlined(msg: str) -> str:
    """The source text the message's caret line underlines."""
    lines = msg.splitlines()
    for i, line in enumerate(lines[1:], 1):
        if line.strip() and set(line.strip()) == {"^"}:
            start = len(line) - len(line.lstrip())
            return lines[i - 1][start:len(line)]
    raise AssertionError(f"no caret line in:\n{msg}")


def _error(fn, target="cpu", *args, **comptime) -> str:
    return str(_compile_error(fn, target, *(args or _arrays()), **comptime))


# ---------------------------------------------------------------- bare tracebacks before


def matmul_update_fn(x, out, BLOCK: cube.Comptime[int]):
    r = cube.arange(0, 4)
    a = cube.load(x + r[:, None] * 4 + r[None, :])
    a @= a
    cube.store(out + r[:, None] * 4 + r[None, :], a)


def matmul_operator_fn(x, out, BLOCK: cube.Comptime[int]):
    r = cube.arange(0, 4)
    a = cube.load(x + r[:, None] * 4 + r[None, :])
    cube.store(out + r[:, None] * 4 + r[None, :], a @ a)


def test_matmul_operators_point_at_cube_dot(target):
    msg = check_user_error(_compile_error(matmul_update_fn, target, *_arrays(), BLOCK=16),
                           matmul_update_fn, "a @= a", "@=", "cube.dot(")
    assert _underlined(msg) == "a @= a"
    msg = check_user_error(_compile_error(matmul_operator_fn, target, *_arrays(), BLOCK=16),
                           matmul_operator_fn, "a @ a)", "`@`", "cube.dot(a, b)")
    assert _underlined(msg) == "a @ a"


def bad_dtype_name_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs).to("floatx"))


def numpy_dtype_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.zeros((BLOCK,), np.float16).to(cube.float32))


def test_unknown_dtypes():
    check_user_error(_compile_error(bad_dtype_name_fn, "cpu", *_arrays(), BLOCK=16),
                     bad_dtype_name_fn, '.to("floatx")', "'floatx'", "float32", "cube.float32")
    check_user_error(_compile_error(numpy_dtype_fn, "cpu", *_arrays(), BLOCK=16),
                     numpy_dtype_fn, "np.float16)", "write cube.float16")


def to_bitcast_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs).to(cube.int64, bitcast=True).to(cube.float32))


def to_two_args_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs).to(cube.float32, True))


def test_tile_to_arguments():
    # bitcast=True was once silently ignored (a value conversion instead of a
    # reinterpretation); a bitcast must keep the width
    check_user_error(_compile_error(to_bitcast_fn, "cpu", *_arrays(), BLOCK=16),
                     to_bitcast_fn, "bitcast=True", "float32 (32 bits) to int64 (64 bits)",
                     "bitcast to a type of the same width")
    check_user_error(_compile_error(to_two_args_fn, "cpu", *_arrays(), BLOCK=16),
                     to_two_args_fn, "cube.float32, True", "one argument", "x.to(cube.float32)")


def len_of_scalar_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs) * len(n))


def string_operand_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs) + "1")


def test_len_of_scalar_and_string_operand():
    msg = check_user_error(_compile_error(len_of_scalar_fn, "cpu", *_arrays(), 3, BLOCK=16),
                           len_of_scalar_fn, "len(n)", "an int32 scalar", "needs a tile")
    assert _underlined(msg) == "len(n)"
    msg = check_user_error(_compile_error(string_operand_fn, "cpu", *_arrays(), BLOCK=16),
                           string_operand_fn, '+ "1")', "str value '1'", "use numbers")
    assert _underlined(msg) == 'cube.load(x + offs) + "1"'


# ---------------------------------------------------------------- wrong lines and carets


def branch_local_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    if n > 2:
        y = cube.load(x + offs)
    cube.store(out + offs, y)


def test_branch_local_names_the_file_line_of_the_branch():
    msg = check_user_error(_compile_error(branch_local_fn, "cpu", *_arrays(), 3, BLOCK=16),
                           branch_local_fn, "cube.store(out + offs, y)", "'y'")
    (line,) = [n for n, text in _lines(branch_local_fn) if "if n > 2:" in text]
    assert f"at line {line}" in msg, msg  # it said "line 3", counted inside the function
    assert _underlined(msg) == "y"


def _lines(fn):
    import inspect

    source, start = inspect.getsourcelines(fn)
    return [(start + i, text) for i, text in enumerate(source)]


def unicode_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    λ = cube.load(x + offs)
    cube.store(out + offs, λ + (λ & λ))


def multiline_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs)
    w = cube.dot(  # a comment the caret leaves out
        v,
        v)
    cube.store(out + offs, w)


def test_carets_count_characters_and_cover_a_multiline_start():
    # AST columns count UTF-8 bytes: the caret sat two columns right of `λ & λ`
    msg = check_user_error(_compile_error(unicode_fn, "cpu", *_arrays(), BLOCK=16),
                           unicode_fn, "λ & λ", "float32")
    assert _underlined(msg) == "λ & λ"
    # a node spanning lines was marked by one caret under its first character
    msg = check_user_error(_compile_error(multiline_fn, "cpu", *_arrays(), BLOCK=16),
                           multiline_fn, "w = cube.dot(", "2-D", "a[None, :]")
    assert _underlined(msg) == "cube.dot("


# ---------------------------------------------------------------- silent miscompiles


def ifexp_atomic_fn(counter, out, flag, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    old = cube.atomic_add(counter, 1) if flag > 0 else -1
    rest = cube.load(out + offs + 1) if flag < 0 else 0.5  # would read past the end
    cube.store(out + offs, rest + old)


def test_conditional_expression_runs_only_the_branch_taken(target):
    kern = cube.kernel(ifexp_atomic_fn)
    for flag in (0, 1):
        counter, out = np.zeros(1, np.int32), np.zeros(16, np.float32)
        kern[(1,)](counter, out, flag, BLOCK=16, target=target)
        assert counter[0] == flag  # the atomic ran although its branch was not taken
        np.testing.assert_array_equal(out, np.full(16, 0.5 + (0 if flag else -1), np.float32))


def ifexp_tile_load_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs) if offs < 8 else 0.0)


def test_conditional_expression_on_a_tile_with_a_load():
    msg = check_user_error(_compile_error(ifexp_tile_load_fn, "cpu", *_arrays(), BLOCK=16),
                           ifexp_tile_load_fn, "if offs < 8 else", "both sides", "mask=")
    assert _underlined(msg) == "cube.load(x + offs) if offs < 8 else 0.0"


def loop_variable_after_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    i = 100
    for i in range(n):  # noqa: B007 - the point of the test
        pass
    cube.store(out + offs, cube.load(x + offs) * 0.0 + i)


def test_loop_variable_after_a_runtime_loop():
    # Python gives n - 1 here; the kernel silently used the value from before the loop
    msg = check_user_error(_compile_error(loop_variable_after_fn, "cpu", *_arrays(), 5, BLOCK=16),
                           loop_variable_after_fn, "0.0 + i)", "'i'", "run-time loop",
                           "last = i")
    assert _underlined(msg) == "i"


def int_literal_overflow_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, ((offs + 2**40) // 2**38).to(cube.float32))


def float_literal_into_ints_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, 1.5)


def test_literals_that_would_wrap_or_truncate():
    msg = check_user_error(_compile_error(int_literal_overflow_fn, "cpu", *_arrays(), BLOCK=16),
                           int_literal_overflow_fn, "offs + 2**40", "1099511627776", "int32",
                           "x.to(cube.int64)")
    assert _underlined(msg) == "offs + 2**40"
    ints = np.zeros(16, np.int32)
    check_user_error(_compile_error(float_literal_into_ints_fn, "cpu", _arrays()[0], ints,
                                    BLOCK=16),
                     float_literal_into_ints_fn, "cube.store(out + offs, 1.5)", "1.5",
                     "an int32 array", "write an integer")


# ---------------------------------------------------------------- hints that sent users astray


def math_on_tile_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, math.exp(cube.load(x + offs)))


def python_max_of_tile_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs)
    cube.store(out + offs, v - max(v))


def python_round_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, round(cube.load(x + offs)))


def misspelled_builtin_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.laod(x + offs))


def tile_method_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs).maximum(0.0))  # Triton's tensors have no such


@pytest.mark.parametrize("fn, needle, words", [
    # it said "decorate 'exp' with @cube.func"
    (math_on_tile_fn, "math.exp(", ("math.exp()", "cube.exp(")),
    # it said "cube.maximum(): missing a required argument: 'y'"
    (python_max_of_tile_fn, "max(v)", ("max()", "cube.max(x, axis=None)")),
    # it said "unknown name 'round'" and to define it
    (python_round_fn, "round(", ("built-in 'round'", "cube.floor(x + 0.5)")),
    (misspelled_builtin_fn, "cube.laod(", ("'laod'", "did you mean 'load'")),
    (tile_method_fn, ".maximum(0.0)", ("no attribute 'maximum'", "cube.maximum(x")),
], ids=lambda v: getattr(v, "__name__", None))
def test_hints_name_the_cube_builtin(fn, needle, words):
    check_user_error(_compile_error(fn, "cpu", *_arrays(), BLOCK=16), fn, needle, *words)


def unpack_tile_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    a, b = cube.load(x + offs)
    cube.store(out + offs, a + b)


def runtime_axis_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.sum(cube.load(x + offs), axis=n))


def test_no_ir_names_in_messages():
    # they showed IR values: "cannot unpack %v60:tile<16xf32>", "got %n220:i32"
    msg = check_user_error(_compile_error(unpack_tile_fn, "cpu", *_arrays(), BLOCK=16),
                           unpack_tile_fn, "a, b = cube.load", "a float32 tile of shape (16,)",
                           "cube.load()")
    assert "%" not in msg and _underlined(msg) == "a, b"
    msg = check_user_error(_compile_error(runtime_axis_fn, "cpu", *_arrays(), 0, BLOCK=16),
                           runtime_axis_fn, "axis=n)", "compile-time int", "cube.Comptime[int]")
    assert "%" not in msg


def dot_inner_fn(x, out, BLOCK: cube.Comptime[int]):
    r = cube.arange(0, 4)
    a = cube.load(x + r[:, None] * 2 + cube.arange(0, 2)[None, :])
    cube.store(out + r[:, None] * 4 + r[None, :], cube.dot(a, a))


def reshape_count_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.sum(cube.reshape(cube.load(x + offs), (4, 8)), axis=1))


def index_array_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, x[offs])


def store_tile_through_scalar_fn(x, out, BLOCK: cube.Comptime[int]):
    cube.store(out, cube.load(x + cube.arange(0, BLOCK)))


@cube.func
def two_args(a, b):
    return a + b


def func_arity_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, two_args(cube.load(x + offs)))


def atomic_order_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.atomic_add(out + offs, cube.load(x + offs), sem="seq_cst")


@pytest.mark.parametrize("fn, needle, words", [
    (atomic_order_fn, "cube.atomic_add(", ("'seq_cst'", 'sem="relaxed"')),
    (dot_inner_fn, "cube.dot(a, a)", ("(4, 2) and (4, 2)", "cube.dot(a, cube.trans(b))")),
    (reshape_count_fn, "cube.reshape(", ("16 elements", "as many elements")),
    (index_array_fn, "x[offs]", ("indexed", "cube.load(x + offs)")),
    (store_tile_through_scalar_fn, "cube.store(out,", ("single pointer", "`out + offs`")),
    (func_arity_fn, "two_args(cube.load", ("'b'", "two_args(a, b)")),
], ids=lambda v: getattr(v, "__name__", None))
def test_shape_and_call_mistakes_say_what_to_write(fn, needle, words):
    check_user_error(_compile_error(fn, "cpu", *_arrays(), BLOCK=16), fn, needle, *words)


# ---------------------------------------------------------------- Python that now works


def comptime_slice_and_min3_fn(x, out, BLOCK: cube.Comptime[int]):
    r = cube.arange(0, 4)
    a = cube.load((x + r)[:, None] + r[None, :] * 4)  # pointer tiles take `[:, None]`
    cols = a.shape[1:]
    cube.store((out + r)[:, None] + r[None, :] * 4, min(a, 9.0, 7.0) * cols[0])


def test_comptime_slices_and_min_of_three(target):
    x, out = _arrays()
    cube.kernel(comptime_slice_and_min3_fn)[(1,)](x, out, BLOCK=16, target=target)
    np.testing.assert_allclose(out, np.minimum(x, 7.0) * 4, rtol=1e-6)


def numpy_int_block_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    for i in cube.static_range(BLOCK // 8):
        cube.store(out + offs, cube.load(x + offs) + i)


def test_numpy_int_comptime_values(target):
    # BLOCK=np.int64(16) was refused: "make the size a cube.Comptime[int] parameter" (it is)
    x, out = _arrays()
    cube.kernel(numpy_int_block_fn)[(1,)](x, out, BLOCK=np.int64(16), target=target)
    np.testing.assert_array_equal(out, x + 1)


def runtime_index_of_tuple_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    scales = (1.0, 2.0)
    cube.store(out + offs, cube.load(x + offs) * scales[n])


def test_runtime_index_into_a_comptime_tuple():
    # it said "tuple indices must be integers or slices, not Value"
    msg = check_user_error(
        _compile_error(runtime_index_of_tuple_fn, "cpu", *_arrays(), 1, BLOCK=16),
        runtime_index_of_tuple_fn, "scales[n]", "run-time value", "cube.where()")
    assert "Value" not in msg and _underlined(msg) == "scales[n]"
