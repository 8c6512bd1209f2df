"""Mistakes found by a review that wrote 175 wrong kernels and launches on purpose: each now
names the user's line (or the launch argument behind it) and says what to write instead.

As in test_errors.py, kernels are plain functions decorated inside the tests, and the line a
message must point at is found by its text in the test function.
"""

from __future__ import annotations

import importlib.util
import textwrap
import warnings

import numpy as np
import pytest
from test_errors import _arrays, _compile_error, check_user_error
from test_errors_more import _underlined
from test_launch_errors import _hint

import cubepy as cube


def bounded_copy_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    m = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=m), mask=m)


def _module_from(folder, name: str, text: str):
    """The module a file of ``text`` in ``folder`` imports as."""
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- arguments in the wrong place


def test_an_array_for_a_number_is_named(target):
    x, out = _arrays()
    err = _compile_error(bounded_copy_fn, target, x, out, np.array([16]), BLOCK=16)
    msg = check_user_error(err, bounded_copy_fn, "m = offs < n", "pointers")
    assert "argument 'n' got an array (ndarray)" in _hint(msg)


def test_a_number_for_an_array_is_named(target):
    _, out = _arrays()
    err = _compile_error(bounded_copy_fn, target, 1.5, out, 16, BLOCK=16)
    msg = check_user_error(err, bounded_copy_fn, "cube.load(x + offs", "needs a pointer")
    assert "argument 'x' got 1.5 (float), not an array" in _hint(msg)


def pointer_sum_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + out))


def test_two_pointers_added(target):
    err = _compile_error(pointer_sum_fn, target, *_arrays(), BLOCK=16)
    msg = check_user_error(err, pointer_sum_fn, "cube.load(x + out)", "two pointers")
    assert _underlined(msg) == "x + out"
    assert "argument" not in _hint(msg)  # both are arrays, as they should be: no guess


@pytest.mark.parametrize("block", [16.0, [16], "16"])
def test_a_comptime_int_that_is_not_an_int(target, block):
    kern = cube.kernel(bounded_copy_fn)
    x, out = _arrays()
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](x, out, 16, BLOCK=block, target=target)
    msg = check_user_error(info.value, test_a_comptime_int_that_is_not_an_int,
                           "kern[(1,)](x, out, 16, BLOCK=block", "'BLOCK'", "Comptime[int]")
    assert _hint(msg) == ("hint: pass an int: BLOCK=16" if block == 16.0 else "hint: pass an int")
    assert np.isnan(out).all()


def test_numpy_ints_are_comptime_ints(target):
    x, out = _arrays()
    cube.kernel(bounded_copy_fn)[(1,)](x, out, 16, BLOCK=np.int32(16), target=target)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize(("option", "value"), [("num_warps", 3), ("num_warps", 0),
                                               ("num_stages", -1), ("workgroup_size", 2.5)])
def test_launch_options_of_the_wrong_kind(target, option, value):
    # Triton refused num_warps=3 only when compiling for a GPU; other targets ignored it
    kern = cube.kernel(bounded_copy_fn)
    x, out = _arrays()
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](x, out, 16, BLOCK=16, target=target, **{option: value})
    check_user_error(info.value, test_launch_options_of_the_wrong_kind,
                     "kern[(1,)](x, out, 16, BLOCK=16", f"{option}={value!r}")


def test_a_kernel_with_star_args():
    def star_fn(x, out, *rest):
        cube.store(out + cube.arange(0, 16), cube.load(x + cube.arange(0, 16)))

    with pytest.raises(cube.CubeError) as info:
        cube.kernel(star_fn)
    check_user_error(info.value, test_a_kernel_with_star_args, "cube.kernel(star_fn)",
                     "*rest", "one by one")


# ---------------------------------------------------------------- where the caret goes


def runtime_shape_fn(x, out, n, BLOCK: cube.Comptime[int]):
    acc = cube.zeros((n,), cube.float32)
    cube.store(out + cube.arange(0, BLOCK), acc)


def test_a_run_time_tile_shape_shows_no_ir(target):
    err = _compile_error(runtime_shape_fn, target, *_arrays(), 16, BLOCK=16)
    msg = check_user_error(err, runtime_shape_fn, "cube.zeros((n,)", "a run-time value",
                           "Comptime[int]")
    assert "%" not in msg


def carried_twice_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    acc = cube.zeros((BLOCK,), cube.int32)
    for _ in range(n):
        acc = acc + 1
        acc = acc * cube.load(x + offs)
    cube.store(out + offs, acc)


def test_a_loop_carried_type_change_points_at_the_assignment(target):
    x, out = _arrays()
    err = _compile_error(carried_twice_fn, target, x, out, 2, BLOCK=16)
    msg = check_user_error(err, carried_twice_fn, "acc = acc * cube.load", "acc")
    assert _underlined(msg) == "acc = acc * cube.load(x + offs)"


KERNEL_TEXT = textwrap.dedent("""
    import cubepy as cube

    @cube.kernel
    def copy(x, out, BLOCK: cube.Comptime[int]):
        offs = cube.arange(0, BLOCK)
        cube.store(out + offs, cube.load(x + offs))
""")


def test_one_kernel_text_in_two_files_names_the_right_file(tmp_path):
    # code objects of one text compare equal across files: the parse was shared, and errors
    # in the second file named the first
    kernels = [_module_from(tmp_path, name, KERNEL_TEXT).copy
               for name in ("first_copy", "second_copy")]
    x, out = _arrays()
    kernels[0][(1,)](x, out, BLOCK=16, target="cpu:debug")
    with pytest.raises(cube.CompileError) as info:
        kernels[1][(1,)](x, out, BLOCK=12, target="cpu:debug")
    assert str(info.value).startswith(f"{tmp_path / 'second_copy.py'}:6:")


# ---------------------------------------------------------------- what a target cannot show


def printing_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs)
    cube.device_print("v", v)
    cube.store(out + offs, v)


def test_device_print_on_wgsl_warns_and_elsewhere_prints(target, capfd):
    x, out = _arrays()
    kern = cube.kernel(printing_fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kern[(1,)](x, out, BLOCK=16, target=target)
    np.testing.assert_array_equal(out, x)
    shown = [w for w in caught if issubclass(w.category, cube.UnshownPrintWarning)]
    if target == "wgsl":
        (warning,) = shown
        check_user_error(warning.message, printing_fn, 'cube.device_print("v", v)',
                         "not shown on target 'wgsl'", "cpu:debug")
    else:
        assert shown == []
        assert "v" in capfd.readouterr().out


# ---------------------------------------------------------------- cpu:debug checks bounds


def unmasked_fn(x, out, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    v = cube.load(x + offs) + 1.0
    cube.store(out + offs, v)


def test_cpu_debug_names_an_out_of_bounds_access():
    # compiled targets do not check (as on a GPU); cpu:debug is where to look for one
    x, out = _arrays(8)
    with pytest.raises(cube.LaunchError) as info:
        cube.kernel(unmasked_fn)[(1,)](x, out, BLOCK=16, target="cpu:debug")
    check_user_error(info.value, unmasked_fn, "v = cube.load(x + offs)", "array 'x'",
                     "out of its bounds", "mask=")


HELPER_TEXT = textwrap.dedent("""
    import cubepy as cube

    @cube.func
    def first_values(p, BLOCK: cube.Comptime[int]):
        return cube.load(p + cube.arange(0, BLOCK))
""")


def test_cpu_debug_names_the_line_of_a_func_in_another_file(tmp_path):
    helpers = _module_from(tmp_path, "far_helpers", HELPER_TEXT)

    def calls_far_fn(x, out, BLOCK: cube.Comptime[int]):
        cube.store(out + cube.arange(0, BLOCK), helpers.first_values(x, BLOCK))

    x, out = _arrays(8)[0], _arrays(16)[1]
    with pytest.raises(cube.LaunchError) as info:
        cube.kernel(calls_far_fn)[(1,)](x, out, BLOCK=16, target="cpu:debug")
    assert str(info.value).startswith(f"{tmp_path / 'far_helpers.py'}:6:")
    assert "return cube.load(p + cube.arange(0, BLOCK))" in str(info.value)


def int_load_other_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n, other=2.5), mask=offs < n)


def test_a_fractional_other_for_an_int_array(target):
    # it was silently truncated to 2, where storing 2.5 into the array is refused
    x = np.arange(16, dtype=np.int32)
    err = _compile_error(int_load_other_fn, target, x, np.zeros_like(x), 8, BLOCK=16)
    check_user_error(err, int_load_other_fn, "other=2.5", "would truncate", "other=2")
