"""Errors a user can cause: each names the user's file:line:col, shows the line with a caret and
says what to write instead, without compiler internals in the message.

The kernels are plain functions here and are decorated inside the tests, so an error raised at
decoration time or at launch is caught the same way (and importing this file never fails).
"""

from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

import cubepy as cube

HINT_WORDS = ("instead", "use ", "write ", "hint", "did you")
INTERNAL = re.compile(r"cubepy[\\/](frontend|ir|passes|backends|runtime)[\\/]")


def _lines_of(fn, needles):
    """File line numbers and text of the lines of `fn` that contain one of `needles`."""
    lines, start = inspect.getsourcelines(fn)
    found = [(start + i, line) for i, line in enumerate(lines) if any(n in line for n in needles)]
    assert found, f"test bug: none of {needles} in {fn.__name__}"
    return found


def check_user_error(
    err: BaseException, fn, needles, *keywords: str | tuple[str, ...], hint: bool = True
) -> str:
    """The message points at one of the lines of `fn` containing a needle, with its file, line,
    column, source text and a caret, names every keyword and gives a hint."""
    msg = str(err)
    candidates = _lines_of(fn, needles if isinstance(needles, (list, tuple)) else [needles])
    fname = re.escape(os.path.basename(inspect.getsourcefile(fn)))
    hits = [(n, text) for n, text in candidates if re.search(rf"{fname}:{n}:\d+", msg)]
    assert hits, f"expected {fname}:<one of {[n for n, _ in candidates]}>:col in:\n{msg}"
    code = hits[0][1].split("#")[0].strip()
    assert code in msg, f"the source line {code!r} is not shown in:\n{msg}"
    assert re.search(r"^\s*\^[\^~]*\s*$", msg, re.M), f"no caret line in:\n{msg}"
    for keyword in keywords:  # a tuple lists accepted spellings
        options = keyword if isinstance(keyword, tuple) else (keyword,)
        assert any(k.lower() in msg.lower() for k in options), f"{keyword!r} not in:\n{msg}"
    assert not hint or any(h in msg.lower() for h in HINT_WORDS), (
        f"no hint of what to write in:\n{msg}"
    )
    assert "Traceback" not in msg and not INTERNAL.search(msg), f"compiler internals in:\n{msg}"
    return msg


def _compile_error(fn, target, *args, grid=(1,), **comptime) -> cube.CubeError:
    with pytest.raises(cube.CubeError) as info:
        kern = cube.kernel(fn)
        kern[grid](*args, **comptime, target=target)
    return info.value


def _arrays(n=16):
    return np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32), np.full(
        n, np.nan, np.float32
    )


# ---------------------------------------------------------------- unsupported Python


def listcomp_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    scales = [k * 2 for k in range(4)]
    cube.store(out + offs, cube.load(x + offs) * scales[0])


def test_list_comprehension(target):
    err = _compile_error(listcomp_fn, target, *_arrays(), BLOCK=16)
    check_user_error(err, listcomp_fn, "[k * 2 for k", ("comprehension", "ListComp"))


def try_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    try:
        v = cube.load(x + offs)
    except Exception:
        v = cube.zeros((BLOCK,), cube.float32)
    cube.store(out + offs, v)


def test_try_statement(target):
    err = _compile_error(try_fn, target, *_arrays(), BLOCK=16)
    check_user_error(err, try_fn, "try:", "try")


def lambda_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    double = lambda v: v * 2  # noqa: E731
    cube.store(out + offs, double(cube.load(x + offs)))


def test_lambda(target):
    err = _compile_error(lambda_fn, target, *_arrays(), BLOCK=16)
    check_user_error(err, lambda_fn, "double = lambda", "lambda")


def plain_helper(v):
    return v * 2


def undecorated_call_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, plain_helper(cube.load(x + offs)))


def test_call_to_undecorated_function(target):
    err = _compile_error(undecorated_call_fn, target, *_arrays(), BLOCK=16)
    check_user_error(
        err, undecorated_call_fn, "plain_helper(cube.load", "plain_helper", "@cube.func"
    )


# ---------------------------------------------------------------- names and types


def unknown_name_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs) * undefined_scale)  # noqa: F821


def test_unknown_name(target):
    err = _compile_error(unknown_name_fn, target, *_arrays(), BLOCK=16)
    check_user_error(err, unknown_name_fn, "undefined_scale)", "undefined_scale")


def float_bitwise_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs)
    cube.store(out + offs, v & v)


def test_bitwise_op_on_floats(target):
    err = _compile_error(float_bitwise_fn, target, *_arrays(), BLOCK=16)
    check_user_error(err, float_bitwise_fn, "v & v", "float32")


def loop_dtype_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    acc = cube.zeros((BLOCK,), cube.int32)
    for i in range(n):
        acc = acc + cube.load(x + i * BLOCK + offs)
    cube.store(out + offs, acc)


def test_loop_carried_variable_changes_dtype(target):
    x, out = _arrays(64)
    err = _compile_error(loop_dtype_fn, target, x, out, 4, BLOCK=16)
    check_user_error(
        err,
        loop_dtype_fn,
        ["acc = acc + cube.load", "for i in range(n)"],
        "acc",
        ("int32", "i32"),
        ("float32", "f32"),
    )


def branch_dtype_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs)
    if n > 0:
        r = v * 2.0
    else:
        r = offs
    cube.store(out + offs, r)


def test_branches_disagree_on_dtype(target):
    err = _compile_error(branch_dtype_fn, target, *_arrays(), 3, BLOCK=16)
    check_user_error(
        err,
        branch_dtype_fn,
        ["if n > 0:", "r = offs", "r = v * 2.0"],
        ("int32", "i32"),
        ("float32", "f32"),
    )


def tile_condition_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs)
    if v > 0.0:
        v = v * 2.0
    cube.store(out + offs, v)


def test_if_on_a_tile(target):
    err = _compile_error(tile_condition_fn, target, *_arrays(), BLOCK=16)
    check_user_error(err, tile_condition_fn, "if v > 0.0:", "where")


# ---------------------------------------------------------------- shapes


def non_pow2_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, 100)
    cube.store(out + offs, cube.load(x + offs))


def test_non_power_of_two_tile(target):
    x, out = _arrays(128)
    err = _compile_error(non_pow2_fn, target, x, out, BLOCK=16)
    check_user_error(err, non_pow2_fn, "cube.arange(0, 100)", "100", "power")


def runtime_arange_fn(x, out, n):
    offs = cube.arange(0, n)
    cube.store(out + offs, cube.load(x + offs))


def test_arange_with_runtime_bound(target):
    err = _compile_error(runtime_arange_fn, target, *_arrays(), 16)
    check_user_error(err, runtime_arange_fn, "cube.arange(0, n)", "comptime")


def shape_mismatch_fn(x, out, BLOCK: cube.Comptime[int]):
    a = cube.load(x + cube.arange(0, 16))
    b = cube.load(x + cube.arange(0, 32))
    cube.store(out + cube.arange(0, 16), a + b)


def test_broadcast_shape_mismatch(target):
    x, out = _arrays(32)
    err = _compile_error(shape_mismatch_fn, target, x, out, BLOCK=16)
    check_user_error(err, shape_mismatch_fn, "a + b)", "16", "32")


def static_assert_fn(x, out, BLOCK: cube.Comptime[int]):
    cube.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs))


def test_static_assert_fails(target):
    err = _compile_error(static_assert_fn, target, *_arrays(), BLOCK=16)
    # The user's own message is the hint here.
    check_user_error(
        err, static_assert_fn, "cube.static_assert(", "BLOCK must be a multiple of 32", hint=False
    )


def test_static_assert_passes_for_other_specialization(target):
    x, out = _arrays(32)
    cube.kernel(static_assert_fn)[(1,)](x, out, BLOCK=32, target=target)
    np.testing.assert_array_equal(out, x)


def bad_helper_fn(v):
    return v & v


bad_helper = cube.func(bad_helper_fn)


def error_in_func_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, bad_helper(cube.load(x + offs)))


def test_error_inside_func_points_at_the_helper(target):
    err = _compile_error(error_in_func_fn, target, *_arrays(), BLOCK=16)
    check_user_error(err, bad_helper_fn, "return v & v", "float32")


# ---------------------------------------------------------------- outside kernels, launching


def test_builtin_outside_kernel():
    with pytest.raises(cube.CubeError) as info:
        cube.arange(0, 16)
    assert "@cube.kernel" in str(info.value)


def test_math_builtin_outside_kernel():
    with pytest.raises(cube.CubeError) as info:
        cube.exp(1.0)
    assert "@cube.kernel" in str(info.value)


def plain_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n), mask=offs < n)


def _launch_error(test_fn, needle, launch) -> str:
    """Launch errors point at the user's launch line too (file:line:col, source, caret)."""
    with pytest.raises(cube.CubeError) as info:
        launch()
    msg = str(info.value)
    assert "plain_fn" in msg, msg
    check_user_error(info.value, test_fn, needle, hint=False)
    return msg


def test_missing_comptime_argument(target):
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    msg = _launch_error(
        test_missing_comptime_argument,
        "kern[(1,)](x, out, 16, target=target)",
        lambda: kern[(1,)](x, out, 16, target=target),
    )
    assert "BLOCK" in msg
    assert np.isnan(out).all()


def test_too_few_arguments(target):
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    msg = _launch_error(
        test_too_few_arguments,
        "kern[(1,)](x, out, BLOCK=16, target=target)",
        lambda: kern[(1,)](x, out, BLOCK=16, target=target),
    )
    assert re.search(r"\bn\b", msg) and "argument" in msg.lower(), msg


def test_too_many_arguments(target):
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    msg = _launch_error(
        test_too_many_arguments,
        "kern[(1,)](x, out, 16, 16, 99, target=target)",
        lambda: kern[(1,)](x, out, 16, 16, 99, target=target),
    )
    assert "argument" in msg.lower()


def test_unknown_keyword_argument(target):
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    msg = _launch_error(
        test_unknown_keyword_argument,
        "kern[(1,)](x, out, 16, BLOCK=16, BLOCKK=3, target=target)",
        lambda: kern[(1,)](x, out, 16, BLOCK=16, BLOCKK=3, target=target),
    )
    assert "BLOCKK" in msg


def test_builtin_outside_kernel_points_at_the_call():
    with pytest.raises(cube.CubeError) as info:
        cube.arange(0, 16)
    check_user_error(
        info.value,
        test_builtin_outside_kernel_points_at_the_call,
        "cube.arange(0, 16)",
        "@cube.kernel",
    )
