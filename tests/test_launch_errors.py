"""Mistakes in launching a kernel (or in decorating one): each names the user's file and line,
shows it with a caret and says what to write instead, instead of a bare traceback from inside
cubepy, Numba or a backend.

As in test_errors.py, kernels are plain functions decorated inside the tests, and the line a
message must point at is found by its text in the test function.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_errors import _arrays, check_user_error

import cubepy as cube


def plain_fn(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs, mask=offs < n) * 2.0, mask=offs < n)


def count_fn(x, counter, n, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.atomic_add(counter + 0, cube.sum(cube.load(x + offs, mask=offs < n, other=0.0), 0))


def _hint(msg: str) -> str:
    """The hint line of a message."""
    hints = [line for line in msg.splitlines() if line.startswith("hint: ")]
    assert len(hints) == 1, f"expected one hint line in:\n{msg}"
    return hints[0]


# ---------------------------------------------------------------- calling without a grid


def test_kernel_called_without_a_grid():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern(x, out, 16, BLOCK=16)
    msg = check_user_error(info.value, test_kernel_called_without_a_grid,
                           "kern(x, out, 16, BLOCK=16)", "plain_fn", "without a grid")
    assert _hint(msg) == ("hint: launch it on a grid of cubes: "
                          "plain_fn[(cubes,)](x, out, n, BLOCK=...)")
    assert np.isnan(out).all()


# ---------------------------------------------------------------- kernel.source(...)


def test_source_with_an_unknown_target():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern.source("cuda", x, out, 16, BLOCK=16)
    msg = check_user_error(info.value, test_source_with_an_unknown_target,
                           'kern.source("cuda", x, out, 16, BLOCK=16)', "unknown target 'cuda'")
    assert "did you mean target='triton'?" in _hint(msg)
    assert "cpu, cpu:debug, triton, wgsl" in _hint(msg)


def test_source_without_the_target():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern.source(x, out, 16, BLOCK=16)
    msg = check_user_error(info.value, test_source_without_the_target,
                           "kern.source(x, out, 16, BLOCK=16)", "takes the target first")
    assert "write plain_fn.source('cpu', x, out, n, BLOCK=...)" in _hint(msg)


@pytest.mark.parametrize("args, words", [
    ((), ("missing", "'x'")),
    ((16, 16, 16, 16, 16), ("too many",)),
])
def test_source_with_the_wrong_arguments(args, words):
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern.source("cpu", *args)
    msg = check_user_error(info.value, test_source_with_the_wrong_arguments,
                           'kern.source("cpu", *args)', "plain_fn()", *words)
    assert _hint(msg) == "hint: launch it as plain_fn[grid](x, out, n, BLOCK=...)"


def test_source_missing_an_argument():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern.source("cpu", x, out, BLOCK=16)
    check_user_error(info.value, test_source_missing_an_argument,
                     'kern.source("cpu", x, out, BLOCK=16)', "missing", "'n'", "launch it as")


def test_ir_missing_an_argument():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern.ir(x, out, 16)
    check_user_error(info.value, test_ir_missing_an_argument, "kern.ir(x, out, 16)",
                     "BLOCK", "launch it as")


# ---------------------------------------------------------------- the grid


@pytest.mark.parametrize("grid, words, hint", [
    ("abc", ("'abc'", "not a tuple of 1 to 3 ints"), "write plain_fn[(cube.cdiv(n, BLOCK),)]"),
    ((1, 1, 1, 1), ("4 axes",), "fold extra axes into one"),
    ((), ("0 axes",), "write plain_fn[(cube.cdiv(n, BLOCK),)]"),
    ((-1,), ("must not be negative",), "use a size of 0 to launch nothing"),
    ((2.5,), ("must be ints", "float 2.5"), "round up with cube.cdiv(n, BLOCK)"),
    (lambda meta: None, ("grid callable returned None",), "lambda meta: (cube.cdiv(n, "),
    (lambda: (1,), ("cannot be called with the dict of comptime values",),
     "take one argument: plain_fn[lambda meta: "),
    (lambda meta: (meta["BLK"],), ("meta['BLK']", "comptime values only (BLOCK)"),
     "read a comptime parameter"),
])
def test_bad_grids(grid, words, hint):
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern[grid](x, out, 16, BLOCK=16, target="cpu:debug")
    msg = check_user_error(info.value, test_bad_grids,
                           'kern[grid](x, out, 16, BLOCK=16, target="cpu:debug")', *words)
    assert hint in _hint(msg)
    assert np.isnan(out).all()


# ---------------------------------------------------------------- arguments


WGSL = pytest.mark.skipif("wgsl" not in cube.available_targets(),
                          reason="needs the wgsl target")


@pytest.mark.parametrize("make_x, words, hint, target", [
    (lambda x: list(x), ("argument 'x' is a list",), "pass an array: np.asarray(x, dtype=",
     "cpu:debug"),
    (lambda x: None, ("argument 'x' is a NoneType",), "pass a NumPy, CuPy or torch array",
     "cpu:debug"),
    (lambda x: x.astype(np.complex64), ("complex64", "not supported"),
     "pass x.real and x.imag as two float arrays", "cpu:debug"),
    (lambda x: x.astype(np.uint16), ("uint16", "not supported"), "pass x.astype(np.float32)",
     "cpu:debug"),
    pytest.param(lambda x: Tensor(x),
                 ("argument 'x' must be a NumPy array or a cube.DeviceArray",),
                 "pass np.asarray(x), or upload it once with cube.DeviceArray", "wgsl",
                 marks=WGSL, id="foreign-array-on-wgsl"),
])
def test_arguments_a_kernel_cannot_take(make_x, words, hint, target):
    x, out = _arrays()
    bad = make_x(x)
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](bad, out, 16, BLOCK=16, target=target)
    msg = check_user_error(info.value, test_arguments_a_kernel_cannot_take,
                           "kern[(1,)](bad, out, 16, BLOCK=16, target=target)", *words)
    assert hint in _hint(msg)


def test_int_too_big_for_int64_after_a_cached_launch():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    kern[(1,)](x, out, 2**40, BLOCK=16, target="cpu:debug")  # int64: cached, fast path next
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](x, out, 2**70, BLOCK=16, target="cpu:debug")
    msg = check_user_error(info.value, test_int_too_big_for_int64_after_a_cached_launch,
                           "kern[(1,)](x, out, 2**70,", "argument 'n'", "int64")
    assert "pass an int in [-2**63, 2**63)" in _hint(msg)


def test_array_passed_for_a_comptime_parameter():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](x, out, 16, BLOCK=x, target="cpu:debug")
    msg = check_user_error(info.value, test_array_passed_for_a_comptime_parameter,
                           "BLOCK=x,", "'BLOCK' is a cube.Comptime parameter", "ndarray")
    assert "arrays go to parameters without cube.Comptime" in _hint(msg)
    assert "array([" not in msg  # the array's values stay out of the message


def test_zero_d_array_meant_as_a_scalar():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.CompileError) as info:
        kern[(1,)](x, out, np.array(16), BLOCK=16, target="cpu:debug")
    msg = check_user_error(info.value, plain_fn, "offs < n", "pointer")
    assert "argument 'n' is a 0-d NumPy array" in _hint(msg)
    assert "pass n.item() for a scalar" in _hint(msg)


@WGSL
def test_arrays_on_two_devices():
    x, out = _arrays()
    on_gpu = cube.asarray(out, device="wgpu")
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](x, on_gpu, 16, BLOCK=16)
    msg = check_user_error(info.value, test_arrays_on_two_devices,
                           "kern[(1,)](x, on_gpu, 16, BLOCK=16)", "different devices")
    assert "pass cube.asarray(out, device='cpu')" in _hint(msg)


class Tensor:
    """Stands for a torch CPU tensor (torch is not a test dependency): what cubepy reads of
    one is ``data_ptr`` and ``dtype``."""

    def __init__(self, values: np.ndarray):
        self.values, self.dtype = values, values.dtype

    def data_ptr(self) -> int:
        return self.values.ctypes.data


def test_torch_cpu_tensor_on_the_cpu_target():
    x, out = _arrays()
    tensor = Tensor(x)
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](tensor, out, 16, BLOCK=16)
    msg = check_user_error(info.value, test_torch_cpu_tensor_on_the_cpu_target,
                           "kern[(1,)](tensor, out, 16, BLOCK=16)", "argument 'x'", "Tensor")
    assert "x.numpy() for a torch CPU tensor" in _hint(msg)


@pytest.mark.parametrize(("module", "words"), [
    ("torch", "pass t.numpy() for a CPU tensor (t.cpu().numpy() for a CUDA one)"),
    ("cupy", "pass x.get() (a NumPy copy)")])
def test_wgsl_hint_for_torch_and_cupy_arrays(module, words):
    from cubepy.backends.wgsl.backend import foreign_array_hint

    array = type("ndarray", (), {"__module__": module})()
    assert foreign_array_hint(array).startswith(words)


def test_unknown_target_at_launch():
    x, out = _arrays()
    kern = cube.kernel(plain_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](x, out, 16, BLOCK=16, target="cpu-debug")
    msg = check_user_error(info.value, test_unknown_target_at_launch,
                           'target="cpu-debug")', "unknown target 'cpu-debug'")
    assert "did you mean target='cpu:debug'?" in _hint(msg)


# ---------------------------------------------------------------- read-only arrays


def _launch_frozen(kern, x, frozen, target) -> str:
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](x, frozen, 16, BLOCK=16, target=target)
    msg = check_user_error(info.value, _launch_frozen,
                           "kern[(1,)](x, frozen, 16, BLOCK=16, target=target)",
                           "argument 'out'", "read-only", "stores to it")
    assert "pass a writable copy, np.array(out)" in _hint(msg)
    return msg


def test_read_only_output_is_refused(target):
    x, out = _arrays()
    frozen = np.zeros(16, np.float32)
    frozen.setflags(write=False)
    kern = cube.kernel(plain_fn)
    _launch_frozen(kern, x, frozen, target)  # the full path
    kern[(1,)](x, out, 16, BLOCK=16, target=target)
    _launch_frozen(kern, x, frozen, target)  # the fast path: cached, keyed on dtypes only
    assert not frozen.any()  # nothing was written (Triton's interpreter used to write)


def test_read_only_input_is_fine(target):
    x, out = _arrays()
    x.setflags(write=False)
    kern = cube.kernel(plain_fn)
    for _ in range(2):  # the full path, then the fast one
        kern[(1,)](x, out, 16, BLOCK=16, target=target)
        np.testing.assert_array_equal(out, x * 2)


# ---------------------------------------------------------------- strides a kernel cannot walk


def _reversed(a: np.ndarray) -> np.ndarray:
    return a[::-1]


def _odd_strides(a: np.ndarray) -> np.ndarray:  # 6-byte steps over float32 elements
    return np.ndarray((16,), np.float32, buffer=a.data, strides=(6,))


@pytest.mark.parametrize("view, words", [
    (_reversed, "negative strides"),
    (_odd_strides, "not a multiple of its element size"),
], ids=["reversed", "odd-strides"])
def test_strides_a_kernel_cannot_walk_are_refused(target, view, words):
    # Triton's interpreter took a reversed view and read before the array's memory (garbage)
    x = view(np.arange(64, dtype=np.float32))
    out = np.zeros(16, np.float32)
    kern = cube.kernel(plain_fn)
    for _ in range(2):  # the full path, then (after a good launch) the cached fast one
        with pytest.raises(cube.LaunchError) as info:
            kern[(1,)](x, out, 16, BLOCK=16, target=target)
        assert words in str(info.value) and "argument 'x'" in str(info.value)
        assert "np.ascontiguousarray(x)" in _hint(str(info.value))
        # a plain array (the odd view's copy holds subnormals, which GPUs may flush to 0)
        good = np.arange(16, dtype=np.float32)
        kern[(1,)](good, out, 16, BLOCK=16, target=target)
        np.testing.assert_array_equal(out, good * 2)


def test_read_only_atomic_target_is_refused():
    x, _ = _arrays()
    counter = np.zeros(1, np.float32)
    counter.setflags(write=False)
    kern = cube.kernel(count_fn)
    with pytest.raises(cube.LaunchError) as info:
        kern[(1,)](x, counter, 16, BLOCK=16, target="cpu")
    msg = check_user_error(info.value, test_read_only_atomic_target_is_refused,
                           'kern[(1,)](x, counter, 16, BLOCK=16, target="cpu")',
                           "argument 'counter'", "read-only")
    assert "np.array(counter)" in _hint(msg)


def test_read_only_output_of_an_autotuned_kernel():
    x, _ = _arrays()
    frozen = np.zeros(16, np.float32)
    frozen.setflags(write=False)
    tuned = cube.autotune(configs=[cube.Config(BLOCK=16)], key=["n"])(cube.kernel(plain_fn))
    with pytest.raises(cube.LaunchError) as info:
        tuned[(1,)](x, frozen, 16, target="cpu:debug")
    check_user_error(info.value, test_read_only_output_of_an_autotuned_kernel,
                     'tuned[(1,)](x, frozen, 16, target="cpu:debug")', "argument 'out'",
                     "np.array(out)")


# ---------------------------------------------------------------- decorating


def test_kernel_above_autotune():
    with pytest.raises(cube.CubeError) as info:
        @cube.kernel
        @cube.autotune(configs=[cube.Config(BLOCK=16)], key=["n"])
        def tuned(x, out, n, BLOCK: cube.Comptime[int]):
            offs = cube.arange(0, BLOCK)
            cube.store(out + offs, cube.load(x + offs, mask=offs < n), mask=offs < n)
    msg = check_user_error(info.value, test_kernel_above_autotune, "@cube.kernel",
                           "wrong order")
    assert "^^^^^^^^^^^" in msg  # under cube.kernel
    assert _hint(msg).startswith("hint: put @cube.autotune(...) above @cube.kernel")


def test_kernel_with_parentheses():
    with pytest.raises(cube.CubeError) as info:
        @cube.kernel()
        def fn(x):
            pass
    msg = check_user_error(info.value, test_kernel_with_parentheses, "@cube.kernel()",
                           "takes no arguments")
    assert "write @cube.kernel without parentheses" in _hint(msg)


def test_kernel_on_a_class():
    with pytest.raises(cube.CubeError) as info:
        @cube.kernel
        class Fn:
            pass
    msg = check_user_error(info.value, test_kernel_on_a_class, "@cube.kernel",
                           "the class Fn")
    assert "put @cube.kernel right above a `def`" in _hint(msg)
