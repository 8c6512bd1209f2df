"""Control flow: comptime branches, static_range, runtime for/while/if, @cube.func helpers."""

from __future__ import annotations

import numpy as np
import pytest
from util import assert_close, assert_points_at_the_line, cdiv, poison, random_array

import cubepy as cube

BLOCK = 64

# ---------------------------------------------------------------- comptime


@cube.kernel
def comptime_flag_kernel(x, out, n, SQUARE: cube.Comptime[bool], BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    if SQUARE:
        r = v * v
    else:
        r = v + 1.0
    cube.store(out + offs, r, mask=mask)


def test_comptime_bool_specializations_differ(target, rng):
    n = 300
    x = random_array(rng, n, "float32")
    results = {}
    for flag in (True, False):
        out = poison(n, "float32")
        comptime_flag_kernel[(cdiv(n, BLOCK),)](x, out, n, SQUARE=flag, BLOCK=BLOCK, target=target)
        results[flag] = out
    assert_close(results[True], x * x)
    assert_close(results[False], x + np.float32(1.0))
    assert not np.allclose(results[True], results[False])


@cube.kernel
def comptime_mode_kernel(x, out, n, MODE: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    cube.static_assert(BLOCK >= 16, "BLOCK must be at least 16")
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    if MODE == 0:
        r = v * 2.0
    elif MODE < 3:
        r = v - MODE
    else:
        r = -v
    if MODE >= 2 and MODE != 5:
        r = r * 10.0
    cube.store(out + offs, r, mask=mask)


MODE_REF = {
    0: lambda v: v * 2,
    1: lambda v: v - 1,
    2: lambda v: (v - 2) * 10,
    3: lambda v: -v * 10,
    5: lambda v: -v,
}


def test_comptime_int_comparisons(target, rng):
    n = 200
    x = random_array(rng, n, "float32")
    seen = []
    for mode, ref in MODE_REF.items():
        out = poison(n, "float32")
        comptime_mode_kernel[(cdiv(n, BLOCK),)](x, out, n, MODE=mode, BLOCK=BLOCK, target=target)
        assert_close(out, ref(x.astype(np.float64)))
        seen.append(out)
    assert len({o.tobytes() for o in seen}) == len(MODE_REF), "specializations were mixed up"


@cube.kernel
def static_range_kernel(x, out, n, STEPS: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    acc = cube.zeros((BLOCK,), cube.float32)
    for i in cube.static_range(STEPS):
        v = cube.load(x + i * n + offs, mask=mask, other=0.0)
        if i % 2 == 0:
            acc = acc + v * (i + 1)
        else:
            acc = acc - v
    cube.store(out + offs, acc, mask=mask)


@pytest.mark.parametrize("steps", [1, 4])
def test_static_range_unrolled(target, rng, steps):
    n = 150
    x = random_array(rng, (steps, n), "float32")
    out = poison(n, "float32")
    static_range_kernel[(cdiv(n, BLOCK),)](x, out, n, STEPS=steps, BLOCK=BLOCK, target=target)
    expected = sum(x[i].astype(np.float64) * (i + 1) if i % 2 == 0 else -x[i] for i in range(steps))
    assert_close(out, expected)


@cube.kernel
def static_range_step_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    acc = cube.load(x + offs, mask=mask, other=0.0)
    for i in cube.static_range(1, 8, 3):
        acc = acc + cube.load(x + i * n + offs, mask=mask, other=0.0)
    cube.store(out + offs, acc, mask=mask)


def test_static_range_start_stop_step(target, rng):
    n = 100
    x = random_array(rng, (8, n), "float32")
    out = poison(n, "float32")
    static_range_step_kernel[(cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, target=target)
    assert_close(out, x[0].astype(np.float64) + x[1] + x[4] + x[7])


# ---------------------------------------------------------------- runtime loops


@cube.kernel
def column_stats_kernel(x, sum_out, max_out, n_rows, n_cols, BLOCK: cube.Comptime[int]):
    cols = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = cols < n_cols
    acc = cube.zeros((BLOCK,), cube.float32)
    mx = cube.full((BLOCK,), -1e30, cube.float32)
    for r in range(n_rows):
        v = cube.load(x + r * n_cols + cols, mask=mask, other=0.0)
        acc = acc + v
        mx = cube.maximum(mx, v)
    cube.store(sum_out + cols, acc, mask=mask)
    cube.store(max_out + cols, mx, mask=mask)


@pytest.mark.parametrize("n_rows", [0, 1, 23])
def test_runtime_for_loop_carried_tiles(target, rng, n_rows):
    n_cols = 150
    x = random_array(rng, (max(n_rows, 1), n_cols), "float32")
    s, m = poison(n_cols, "float32"), poison(n_cols, "float32")
    column_stats_kernel[(cdiv(n_cols, BLOCK),)](x, s, m, n_rows, n_cols, BLOCK=BLOCK, target=target)
    rows = x[:n_rows].astype(np.float64)
    # Sums of up to 23 float32 values of magnitude <= 2: absolute error up to ~1e-5.
    assert_close(s, rows.sum(axis=0), atol=1e-5)
    assert_close(m, rows.max(axis=0) if n_rows else np.full(n_cols, -1e30))


@cube.kernel
def range_args_kernel(out, start, stop, step):
    total = 100
    count = 0
    for i in range(start, stop, step):
        total = total + i
        count += 1
    cube.store(out, total)
    cube.store(out + 1, count)


@pytest.mark.parametrize("start,stop,step", [(3, 50, 4), (0, 10, 1), (7, 7, 2), (9, 2, 1)])
def test_runtime_range_bounds(target, start, stop, step):
    out = poison(2, "int32")
    range_args_kernel[(1,)](out, start, stop, step, target=target)
    r = range(start, stop, step)
    assert_close(out, np.array([100 + sum(r), len(r)], dtype=np.int32))


@cube.kernel
def nested_scalar_loops_kernel(x, out, rows, cols):
    pid = cube.cube_pos(0)
    total = 0.0
    for i in range(rows):
        for j in range(cols):
            total = total + cube.load(x + pid * rows * cols + i * cols + j) * (j + 1)
    cube.store(out + pid, total)


def test_nested_runtime_loops_scalar_loads(target, rng):
    cubes, rows, cols = 6, 5, 7
    x = random_array(rng, (cubes, rows, cols), "float32")
    out = poison(cubes, "float32")
    nested_scalar_loops_kernel[(cubes,)](x, out, rows, cols, target=target)
    expected = (x.astype(np.float64) * np.arange(1, cols + 1)).sum(axis=(1, 2))
    assert_close(out, expected, atol=1e-5)  # 35 float32 terms summed in order


@cube.kernel
def collatz_kernel(x, out):
    pid = cube.cube_pos(0)
    v = cube.load(x + pid)
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps = steps + 1
    cube.store(out + pid, steps)


def _collatz(v):
    steps = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


def test_while_collatz_per_cube(target, rng):
    n = 48
    x = random_array(rng, n, "int32", 1, 1000)
    out = poison(n, "int32")
    collatz_kernel[(n,)](x, out, target=target)
    assert_close(out, np.array([_collatz(int(v)) for v in x], dtype=np.int32))


@cube.kernel
def while_counter_kernel(x, out, n_chunks, BLOCK: cube.Comptime[int]):
    offs = cube.arange(0, BLOCK)
    acc = cube.zeros((BLOCK,), cube.float32)
    i = 0
    while i < n_chunks:
        acc = acc + cube.load(x + i * BLOCK + offs)
        i += 1
    cube.store(out + offs, acc)


@pytest.mark.parametrize("chunks", [0, 5])
def test_while_scalar_counter_tile_accumulator(target, rng, chunks):
    x = random_array(rng, (max(chunks, 1), BLOCK), "float32")
    out = poison(BLOCK, "float32")
    while_counter_kernel[(1,)](x, out, chunks, BLOCK=BLOCK, target=target)
    assert_close(out, x[:chunks].astype(np.float64).sum(axis=0), atol=1e-5)


# ---------------------------------------------------------------- runtime if


@cube.kernel
def runtime_if_kernel(x, flags, out, n, BLOCK: cube.Comptime[int]):
    pid = cube.cube_pos(0)
    offs = pid * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask, other=0.0)
    f = cube.load(flags + pid)
    if f > 0:
        y = v * 2.0
        s = 1.0
    elif f == 0:
        y = v
        s = 0.5
    else:
        y = -v
        s = -1.0
    cube.store(out + offs, y + s, mask=mask)


def test_runtime_if_merges_tiles_and_scalars(target, rng):
    n = 20 * BLOCK - 7
    cubes = cdiv(n, BLOCK)
    x = random_array(rng, n, "float32")
    flags = random_array(rng, cubes, "int32", -1, 2)
    flags[:3] = [1, 0, -1]  # every branch runs
    out = poison(n, "float32")
    runtime_if_kernel[(cubes,)](x, flags, out, n, BLOCK=BLOCK, target=target)
    f = np.repeat(flags, BLOCK)[:n]
    expected = np.where(f > 0, 2 * x + 1.0, np.where(f == 0, x + 0.5, -x - 1.0))
    assert_close(out, expected)


@cube.kernel
def scalar_logic_kernel(a, b, out):
    pid = cube.cube_pos(0)
    x = cube.load(a + pid)
    y = cube.load(b + pid)
    r = 0
    if (x > 0 and y > 0) or not (x < y):
        r = 1
    cube.store(out + pid, r)


def test_runtime_if_scalar_and_or_not(target, rng):
    n = 40
    a = random_array(rng, n, "int32", -5, 5)
    b = random_array(rng, n, "int32", -5, 5)
    out = poison(n, "int32")
    scalar_logic_kernel[(n,)](a, b, out, target=target)
    assert_close(out, (((a > 0) & (b > 0)) | ~(a < b)).astype(np.int32))


# ---------------------------------------------------------------- @cube.func


@cube.func
def square(v):
    return v * v


@cube.func
def poly(v, c):
    return square(v) + c * v


@cube.func
def block_offsets(block):
    return cube.cube_pos(0) * block + cube.arange(0, block)


@cube.kernel
def func_kernel(x, out, n, c, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, poly(cube.load(x + offs, mask=mask), c), mask=mask)


def test_func_helpers_inlined(target, rng):
    n = 333
    x = random_array(rng, n, "float32")
    out = poison(n, "float32")
    func_kernel[(cdiv(n, BLOCK),)](x, out, n, 3.0, BLOCK=BLOCK, target=target)
    assert_close(out, x.astype(np.float64) ** 2 + 3.0 * x)


@cube.func
def activation(v, KIND: cube.Comptime[str]):
    # returns from comptime branches, as Triton's constexpr ifs may
    if KIND == "relu":
        return cube.maximum(v, 0.0)
    elif KIND == "square":
        if True:
            return v * v
    return v


@cube.kernel
def early_return_kernel(x, out, n, BLOCK: cube.Comptime[int], KIND: cube.Comptime[str],
                        ENABLED: cube.Comptime[bool] = True):
    if not ENABLED:
        return
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(out + offs, activation(cube.load(x + offs, mask=mask), KIND), mask=mask)


@pytest.mark.parametrize("kind", ["relu", "square", "identity", "disabled"])
def test_return_from_a_comptime_branch(target, rng, kind):
    n = 200
    x = random_array(rng, n, "float32")
    out = poison(n, "float32")
    early_return_kernel[(cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, KIND=kind,
                                           ENABLED=kind != "disabled", target=target)
    if kind == "disabled":
        assert np.isnan(out).all()  # the kernel returned before any store
        return
    want = {"relu": np.maximum(x, 0), "square": x.astype(np.float64) ** 2,
            "identity": x}[kind]
    assert_close(out, want)


@cube.kernel
def return_in_a_run_time_branch(x, n):
    if n > 0:
        return
    cube.store(x, 1.0)


@cube.kernel
def return_in_a_loop(x, n):
    for _i in range(n):
        return
    cube.store(x, 1.0)


@pytest.mark.parametrize("kernel", [return_in_a_run_time_branch, return_in_a_loop])
def test_return_in_run_time_control_flow_points_at_the_line(kernel):
    assert_points_at_the_line(lambda: kernel[(1,)](np.zeros(1, np.float32), 3, target="cpu"),
                              "`return` inside a run-time branch or a loop is not supported",
                              "test_control_flow.py")


@cube.kernel
def func_comptime_arg_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = block_offsets(BLOCK)
    mask = offs < n
    cube.store(out + offs, square(cube.load(x + offs, mask=mask)), mask=mask)


def test_func_receives_comptime_value(target, rng):
    n = 200
    x = random_array(rng, n, "float32")
    out = poison(n, "float32")
    func_comptime_arg_kernel[(cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, target=target)
    assert_close(out, x.astype(np.float64) ** 2)


# ---------------------------------------------------------------- debug printing


@cube.kernel
def device_print_kernel(x, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    cube.device_print("pid", cube.cube_pos(0))
    cube.store(out + offs, v + 1, mask=mask)


def test_device_print_does_not_change_results(target, rng):
    n = 20
    x = random_array(rng, n, "int32")
    out = poison(n, "int32")
    if target == "wgsl":  # no printf: the kernel runs without its prints, saying so
        with pytest.warns(cube.UnshownPrintWarning):
            device_print_kernel[(1,)](x, out, n, BLOCK=32, target=target)
    else:
        device_print_kernel[(1,)](x, out, n, BLOCK=32, target=target)
    assert_close(out, x + 1)


@cube.func
def twice_plus_one(v):
    return v * 2 + 1


@cube.kernel
def generic_func_kernel(xf, xi, of, oi, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(of + offs, twice_plus_one(cube.load(xf + offs, mask=mask)), mask=mask)
    cube.store(oi + offs, twice_plus_one(cube.load(xi + offs, mask=mask)), mask=mask)


def test_func_inlined_per_call_dtype(target, rng):
    n = 100
    xf, xi = random_array(rng, n, "float32"), random_array(rng, n, "int32", -1000, 1000)
    of, oi = poison(n, "float32"), poison(n, "int32")
    generic_func_kernel[(cdiv(n, BLOCK),)](xf, xi, of, oi, n, BLOCK=BLOCK, target=target)
    assert_close(of, xf.astype(np.float64) * 2 + 1)
    assert_close(oi, xi * 2 + 1)


@cube.kernel
def count_positive_kernel(x, out, length):
    pid = cube.cube_pos(0)
    count = 0
    total = 0.0
    for i in range(length):
        v = cube.load(x + pid * length + i)
        if v > 0.0:
            count = count + 1
            total = total + v
    cube.store(out + 2 * pid, count.to(cube.float32))
    cube.store(out + 2 * pid + 1, total)


def test_runtime_if_inside_runtime_for(target, rng):
    cubes, length = 8, 25
    x = random_array(rng, (cubes, length), "float32")
    out = poison((cubes, 2), "float32")
    count_positive_kernel[(cubes,)](x, out, length, target=target)
    expected = np.stack([(x > 0).sum(axis=1), np.where(x > 0, x, 0).astype(np.float64).sum(1)], 1)
    assert_close(out, expected, atol=1e-5)  # sums of up to 25 float32 terms
