"""Launching: grids (1-3 axes, callables, empty), cube_count, arguments and scalars, source/ir."""

from __future__ import annotations

import os

import numpy as np
import pytest
from util import assert_close, cdiv, poison, random_array, run_or_expect_unsupported

import cubepy as cube


@cube.kernel
def axpy_kernel(x, y, out, a, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    cube.store(out + offs, a * v + cube.load(y + offs, mask=mask), mask=mask)


def _axpy_data(rng, n, dtype="float32"):
    return random_array(rng, n, dtype), random_array(rng, n, dtype), poison(n, dtype)


def test_grid_as_callable(target, rng):
    n = 1000
    x, y, out = _axpy_data(rng, n)
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (cube.cdiv(n, meta["BLOCK"]),)

    axpy_kernel[grid](x, y, out, 2.0, n, BLOCK=256, target=target)
    assert_close(out, 2 * x + y)
    assert seen and seen[0]["BLOCK"] == 256


@cube.kernel
def names_targets_use(uniform, storage, read, max, select, n, BLOCK: cube.Comptime[int]):
    # each argument is named after a word of a target's language: WGSL's address spaces and
    # access modes, its builtin functions (an argument named `uniform` once broke `var<uniform>`)
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    exp = cube.load(uniform + offs, mask=offs < n)
    cube.store(storage + offs, cube.minimum(exp, max) + select, mask=offs < n)
    cube.store(read + offs, exp, mask=offs < n)


def test_arguments_named_after_a_targets_words(target, rng):
    n = 300
    x, out, copy = random_array(rng, n, "float32"), poison(n, "float32"), poison(n, "float32")
    names_targets_use[(cdiv(n, 128),)](x, out, copy, 0.25, 1.0, n, BLOCK=128, target=target)
    assert_close(out, np.minimum(x, np.float32(0.25)) + 1.0)
    assert_close(copy, x)


def test_grid_lambda(target, rng):
    n = 777
    x, y, out = _axpy_data(rng, n)
    axpy_kernel[lambda meta: (cube.cdiv(n, meta["BLOCK"]),)](
        x, y, out, -1.5, n, BLOCK=64, target=target
    )
    assert_close(out, -1.5 * x + y)


@pytest.mark.parametrize("grid", [(0,), (0, 3), (4, 0, 2)], ids=["0", "0x3", "4x0x2"])
def test_empty_grid_launches_nothing(target, rng, grid):
    n = 100
    x, y, out = _axpy_data(rng, n)
    before = out.copy()
    axpy_kernel[grid](x, y, out, 1.0, n, BLOCK=64, target=target)
    np.testing.assert_array_equal(out, before)  # still all NaN: nothing ran


def test_zero_length_data(target, rng):
    x, y, out = _axpy_data(rng, 0)
    axpy_kernel[(cdiv(0, 64),)](x, y, out, 1.0, 0, BLOCK=64, target=target)
    assert out.shape == (0,)


def test_single_element(target, rng):
    x, y, out = _axpy_data(rng, 1)
    axpy_kernel[(1,)](x, y, out, 3.0, 1, BLOCK=16, target=target)
    assert_close(out, 3 * x + y)


def test_many_small_cubes(target, rng):
    n = 3000
    x, y, out = _axpy_data(rng, n)
    axpy_kernel[(cdiv(n, 16),)](x, y, out, 0.5, n, BLOCK=16, target=target)
    assert_close(out, 0.5 * x + y)


def test_arguments_by_keyword_and_comptime_by_position(target, rng):
    n = 300
    x, y, out = _axpy_data(rng, n)
    axpy_kernel[(cdiv(n, 64),)](y=y, out=out, x=x, n=n, a=4.0, BLOCK=64, target=target)
    assert_close(out, 4 * x + y)
    out2 = poison(n, "float32")
    axpy_kernel[(cdiv(n, 64),)](x, y, out2, 4.0, n, 64, target=target)
    assert_close(out2, 4 * x + y)


def test_respecialization_on_comptime_and_dtype(target, rng):
    n = 500
    for block, dtype in [
        (32, "float32"),
        (128, "float32"),
        (32, "float64"),
        (32, "int32"),
        (32, "float32"),
    ]:
        x, y, out = _axpy_data(rng, n, dtype)
        a = np.array(3, dtype=x.dtype)[()]  # a scalar of the arrays' dtype
        axpy_kernel[(cdiv(n, block),)](x, y, out, a, n, BLOCK=block, target=target)
        assert_close(out, (3 * x + y).astype(x.dtype))


def test_triton_launch_options_are_accepted(target, rng):
    n = 200
    x, y, out = _axpy_data(rng, n)
    axpy_kernel[(cdiv(n, 64),)](
        x, y, out, 1.0, n, BLOCK=64, num_warps=2, num_stages=2, target=target
    )
    assert_close(out, x + y)


def test_default_target_from_numpy_arrays(rng):
    n = 100
    x, y, out = _axpy_data(rng, n)
    axpy_kernel[(cdiv(n, 64),)](x, y, out, 2.0, n, BLOCK=64)
    assert_close(out, 2 * x + y)


# ---------------------------------------------------------------- grids and cube_count


@cube.kernel
def count_1d_kernel(out):
    pid = cube.cube_pos(0)
    cube.store(out + pid, cube.cube_count(0) * 1000 + pid)


def test_cube_count_1d(target):
    out = poison(13, "int32")
    count_1d_kernel[(13,)](out, target=target)
    assert_close(out, 13000 + np.arange(13, dtype=np.int32))


@cube.kernel
def alias_kernel(out):
    pid = cube.program_id(0)
    cube.store(out + pid, cube.num_programs(0) + pid * 10)


def test_triton_aliases(target):
    out = poison(9, "int32")
    alias_kernel[(9,)](out, target=target)
    assert_close(out, 9 + 10 * np.arange(9, dtype=np.int32))


@cube.kernel
def grid_2d_kernel(out):
    i = cube.cube_pos(0)
    j = cube.cube_pos(1)
    cube.store(out + j * cube.cube_count(0) + i, i * 100 + j + cube.cube_count(1) * 10000)


def test_grid_2d(target):
    gx, gy = 5, 7
    out = poison((gy, gx), "int32")
    grid_2d_kernel[(gx, gy)](out, target=target)
    j, i = np.meshgrid(np.arange(gy), np.arange(gx), indexing="ij")
    assert_close(out, i * 100 + j + gy * 10000)


@cube.kernel
def grid_3d_kernel(out):
    i = cube.cube_pos(0)
    j = cube.cube_pos(1)
    k = cube.cube_pos(2)
    nx = cube.cube_count(0)
    ny = cube.cube_count(1)
    cube.store(out + (k * ny + j) * nx + i, i * 10000 + j * 100 + k + cube.cube_count(2) * 1000000)


def test_grid_3d(target):
    gx, gy, gz = 3, 4, 5
    out = poison((gz, gy, gx), "int32")
    grid_3d_kernel[(gx, gy, gz)](out, target=target)
    k, j, i = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    assert_close(out, i * 10000 + j * 100 + k + gz * 1000000)


# ---------------------------------------------------------------- scalar arguments


@cube.kernel
def scale_kernel(x, out, s, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=mask) * s, mask=mask)


def test_numpy_float64_scalar_keeps_its_dtype(target, rng):
    n = 200
    x = random_array(rng, n, "float64")
    out = poison(n, "float64")
    s = np.float64(1.0) / 3.0  # not a float32 value: a float32 scalar would be off by ~1e-8
    if run_or_expect_unsupported(
        target,
        ["float64"],
        lambda: scale_kernel[(cdiv(n, 64),)](x, out, s, n, BLOCK=64, target=target),
    ):
        assert_close(out, x * s)


def test_python_float_scalar(target, rng):
    n = 200
    x = random_array(rng, n, "float32")
    out = poison(n, "float32")
    scale_kernel[(cdiv(n, 64),)](x, out, 0.1, n, BLOCK=64, target=target)
    assert_close(out, x * np.float32(0.1))


def test_numpy_float16_scalar(target, rng):
    n = 200
    x = random_array(rng, n, "float16")
    out = poison(n, "float16")
    if run_or_expect_unsupported(
        target,
        ["float16"],
        lambda: scale_kernel[(cdiv(n, 64),)](x, out, np.float16(1.5), n, BLOCK=64, target=target),
    ):
        assert_close(out, x * np.float16(1.5))


@cube.kernel
def offset_kernel(x, out, k, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.load(x + offs, mask=mask) + k, mask=mask)


@pytest.mark.parametrize("k", [2**40 + 7, -(2**35) - 3], ids=["big", "big-negative"])
def test_python_int_too_large_for_int32_is_int64(target, rng, k):
    n = 100
    x = random_array(rng, n, "int64", -1000, 1000)
    out = poison(n, "int64")
    if run_or_expect_unsupported(
        target,
        ["int64"],
        lambda: offset_kernel[(cdiv(n, 64),)](x, out, k, n, BLOCK=64, target=target),
    ):
        assert_close(out, x + np.int64(k))


@pytest.mark.parametrize(
    "scalar,dtype",
    [(np.int16(-300), "int16"), (np.int32(70000), "int32"), (12, "int32")],
    ids=["i16", "i32", "int"],
)
def test_integer_scalars(target, rng, scalar, dtype):
    n = 100
    x = random_array(rng, n, "int32", -1000, 1000)
    out = poison(n, "int32")
    if run_or_expect_unsupported(
        target,
        [dtype],
        lambda: offset_kernel[(cdiv(n, 64),)](x, out, scalar, n, BLOCK=64, target=target),
    ):
        assert_close(out, x + np.int32(scalar))


@cube.kernel
def bool_scalar_kernel(x, out, negate, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    if negate:
        v = -v
    cube.store(out + offs, v, mask=mask)


@pytest.mark.parametrize("negate", [True, False])
def test_bool_scalar_argument(target, rng, negate):
    n = 100
    x = random_array(rng, n, "float32")
    out = poison(n, "float32")
    bool_scalar_kernel[(cdiv(n, 64),)](x, out, negate, n, BLOCK=64, target=target)
    assert_close(out, -x if negate else x)


# ---------------------------------------------------------------- generated code


@cube.kernel
def inspect_me_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, cube.exp(cube.load(x + offs, mask=mask)), mask=mask)


def test_source_and_ir_text(target, rng):
    n = 100
    x = random_array(rng, n, "float32")
    out = poison(n, "float32")
    src = inspect_me_kernel.source(target, x, out, n, BLOCK=64)
    assert isinstance(src, str) and src.strip()
    ir = inspect_me_kernel.ir(x, out, n, BLOCK=64)
    assert isinstance(ir, str) and "inspect_me_kernel" in ir
    assert np.isnan(out).all(), "source()/ir() must not launch the kernel"


# ---------------------------------------------------------------- CUDA arrays


@pytest.mark.gpu
def test_cuda_arrays_on_triton(rng):
    torch = pytest.importorskip("torch")
    n = 1000
    x, y = random_array(rng, n, "float32"), random_array(rng, n, "float32")
    xd, yd = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    outd = torch.full((n,), float("nan"), device="cuda")
    axpy_kernel[(cdiv(n, 128),)](xd, yd, outd, 2.0, n, BLOCK=128)  # the device follows the arrays
    assert_close(outd.cpu().numpy(), 2 * x + y)


# ---------------------------------------------------------------- persistent grids


def test_concurrent_cubes_on_the_host_is_four_per_core():
    assert cube.concurrent_cubes(np.zeros(4, np.float32)) == 4 * (os.cpu_count() or 1)


def test_concurrent_cubes_asks_each_gpu_once(monkeypatch):
    from cubepy.runtime import device_arrays

    asked = []

    def ask(library, index):
        asked.append((library, index))
        return 100 + index

    monkeypatch.setattr(device_arrays, "_MULTIPROCESSORS", {})
    monkeypatch.setattr(device_arrays, "_ask_multiprocessors", ask)

    class Device:
        type, index, id = "cuda", 1, 1

    class FakeTensor:  # torch's and CuPy's answers to what the helper reads
        __module__ = "torch"
        device = Device()

    class FakeCupyArray(FakeTensor):
        __module__ = "cupy._core.core"

    for _ in range(3):
        assert cube.concurrent_cubes(FakeTensor()) == 101
        assert cube.concurrent_cubes(FakeCupyArray()) == 101
    assert asked == [("torch", 1), ("cupy", 1)]


@pytest.mark.gpu
def test_concurrent_cubes_is_the_multiprocessor_count():
    torch = pytest.importorskip("torch")
    x = torch.zeros(4, device="cuda")
    expected = torch.cuda.get_device_properties(x.device).multi_processor_count
    assert cube.concurrent_cubes(x) == expected
    cupy = pytest.importorskip("cupy")
    assert cube.concurrent_cubes(cupy.zeros(4)) == expected


@cube.kernel
def shifted_kernel(x, out, C: cube.Comptime, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs) + C)


@cube.kernel
def divided_kernel(x, out, C: cube.Comptime, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    cube.store(out + offs, cube.load(x + offs) / C)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_equal_comptime_values_of_other_types_compile_apart(target):
    # 0.0 == -0.0 and 1 == 1.0: one cached specialization served both before
    ones, out = np.ones(16, np.float32), poison(16, "float32")
    for zero in (0.0, -0.0, 0.0):
        divided_kernel[(1,)](ones, out, C=zero, BLOCK=16, target=target)
        assert (out == np.float32(1) / np.float32(zero)).all()  # +inf, then -inf, then +inf
    x = np.full(16, 127, np.int8)
    if run_or_expect_unsupported(target, ["int8"],
                                 lambda: shifted_kernel[(1,)](x, out, C=1, BLOCK=16,
                                                              target=target)):
        assert (out == -128).all()  # int8 wraps, as NumPy's int8 + 1
        shifted_kernel[(1,)](x, out, C=1.0, BLOCK=16, target=target)
        assert (out == 128).all()  # a float literal gives float32
