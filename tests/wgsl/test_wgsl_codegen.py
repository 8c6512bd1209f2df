"""The ``wgsl`` code generator: readable source, barrier placement, subgroups, register-blocked
dot, grid folding, binding limits, float64 math in software, device arrays and aliasing.

Runs on whatever adapter wgpu finds (lavapipe on CI); skipped when there is none.
"""

from __future__ import annotations

import os
import re
import tempfile

import numpy as np
import pytest

if not os.environ.get("XDG_RUNTIME_DIR"):  # Mesa complains on stderr without it
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubepy-xdg-")

pytest.importorskip("wgpu")

from shared_kernels import matmul_tiled as tile_matmul  # noqa: E402

import cubepy as cube  # noqa: E402
from cubepy.backends.wgsl import backend as wgsl_backend  # noqa: E402

if not wgsl_backend.available():  # pragma: no cover - machines without WebGPU
    pytest.skip(f"no WebGPU adapter: {wgsl_backend.why_unavailable()}", allow_module_level=True)

from cubepy.backends.wgsl.buffers import DeviceArray  # noqa: E402
from cubepy.backends.wgsl.launch import BindingLimitError  # noqa: E402

BACKEND = wgsl_backend.make_backend()
SUBGROUP = BACKEND.codegen_target({}).subgroup


@cube.kernel
def scaled_add(x, y, out, n, alpha, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(
        out + offs,
        alpha * cube.load(x + offs, mask=mask) + cube.load(y + offs, mask=mask),
        mask=mask,
    )


@cube.kernel
def row_softmax(x, out, n_cols, BLOCK: cube.Comptime[int]):
    row = cube.cube_pos(0)
    cols = cube.arange(0, BLOCK)
    mask = cols < n_cols
    v = cube.load(x + row * n_cols + cols, mask=mask, other=-1e30)
    e = cube.exp(v - cube.max(v, axis=0))
    e = cube.where(mask, e, 0.0)
    cube.store(out + row * n_cols + cols, e / cube.sum(e, axis=0), mask=mask)




@cube.kernel
def write_cube_index(out, n):
    pid = cube.cube_pos(0)
    if pid < n:
        cube.store(out + pid, pid * 3)


@cube.kernel
def math64(x, o_exp, o_log, o_sin, o_tanh, o_erf, o_pow, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask, other=1.0)
    cube.store(o_exp + offs, cube.exp(v), mask=mask)
    cube.store(o_log + offs, cube.log(cube.abs(v)), mask=mask)
    cube.store(o_sin + offs, cube.sin(v), mask=mask)
    cube.store(o_tanh + offs, cube.tanh(v), mask=mask)
    cube.store(o_erf + offs, cube.erf(v * 0.25), mask=mask)
    cube.store(o_pow + offs, cube.pow(cube.abs(v) + 0.5, v * 0.5), mask=mask)


@cube.kernel
def scale_in_place(x, y, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    cube.store(y + offs, cube.load(x + offs, mask=mask) * 2.0, mask=mask)


@cube.kernel
def copy(x, y, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(y + offs, cube.load(x + offs, mask=offs < n), mask=offs < n)


def _src(kernel, *args, **kw) -> str:
    return kernel.source("wgsl", *args, **kw)


def _enclosing_blocks(lines: list[str], i: int) -> list[str]:
    """The header lines of the blocks that contain line ``i`` (by indentation)."""
    depth = len(lines[i]) - len(lines[i].lstrip())
    heads = []
    for j in range(i - 1, -1, -1):
        d = len(lines[j]) - len(lines[j].lstrip())
        if d < depth and lines[j].rstrip().endswith("{"):
            heads.append(lines[j].strip())
            depth = d
    return heads


# ---------------------------------------------------------------- readable source


def test_source_names_values_and_cites_user_lines():
    x = np.zeros(10, np.float32)
    src = _src(scaled_add, x, x, x, 10, 2.0, BLOCK=64)
    assert "fn scaled_add(" in src and "@workgroup_size(64)" in src
    assert "// line " in src and "mask = offs < n" in src  # the user's line, quoted
    assert re.search(r"let offs_\d+ =", src) and re.search(r"let mask_\d+ =", src)
    assert "var<storage, read> x: array<f32>;" in src
    assert "var<storage, read_write> out: array<f32>;" in src
    assert "alpha: f32," in src and "n: i32," in src  # scalars in the uniform struct
    assert "workgroupBarrier" not in src  # elementwise work needs no workgroup memory


def test_scalars_are_uniform_and_tiles_lazy():
    """The offsets and masks are computed where the loads use them, not staged."""
    x = np.zeros(10, np.float32)
    src = _src(scaled_add, x, x, x, 10, 2.0, BLOCK=64)
    assert "var<workgroup>" not in src
    assert src.count("var ") <= 3  # the two loaded tiles and nothing else


# ---------------------------------------------------------------- barriers and subgroups


def test_reduction_barriers_are_in_uniform_control_flow():
    x = np.zeros((4, 100), np.float32)
    src = _src(row_softmax, x, x, 100, BLOCK=128)
    lines = src.splitlines()
    barriers = [i for i, line in enumerate(lines) if "workgroupBarrier()" in line]
    assert barriers, "a reduction across invocations needs workgroup memory and barriers"
    for i in barriers:
        for head in _enclosing_blocks(lines, i):
            assert not head.startswith("if ("), f"barrier under a condition: {head}\n{src}"
    assert "var<workgroup>" in src


@pytest.mark.parametrize("block", [16, 256])
def test_reduction_uses_subgroups_when_present(block):
    x = np.zeros((4, 100), np.float32)
    src = _src(row_softmax, x, x, 100, BLOCK=block)
    uses = "subgroupAdd" in src or "subgroupShuffleXor" in src
    assert uses == bool(SUBGROUP), src


def test_softmax_values_wide_rows():
    rng = np.random.default_rng(0)
    rows, cols = 5, 700
    x = rng.uniform(-4, 4, (rows, cols)).astype(np.float32)
    out = np.full_like(x, np.nan)
    row_softmax[(rows,)](x, out, cols, BLOCK=1024, target="wgsl")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- dot


def test_dot_is_register_blocked():
    a = np.zeros((4, 4), np.float32)
    src = _src(tile_matmul, a, a, a, 4, 4, 4, BM=64, BN=64, BK=16)
    assert "register block" in src
    assert len(re.findall(r"= fma\(", src)) >= 16  # a 4x4 block of fused multiply-adds


@pytest.mark.parametrize("blocks", [(64, 64, 16), (128, 128, 8), (32, 64, 32)])
def test_dot_large_tiles(blocks):
    rng = np.random.default_rng(1)
    M, N, K = 150, 190, 70
    BM, BN, BK = blocks
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    tile_matmul[(-(-M // BM), -(-N // BN))](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, target="wgsl")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- launching


def test_grid_folding_beyond_65535_cubes():
    n = 70_000
    out = np.full(n, -1, np.int32)
    write_cube_index[(n,)](out, n, target="wgsl")
    np.testing.assert_array_equal(out, 3 * np.arange(n, dtype=np.int32))


def test_too_many_array_arguments_is_a_clear_error():
    count = 40
    names = [f"a{i}" for i in range(count)]
    body = "\n".join(f"    cube.store({n} + cube.arange(0, 16), cube.arange(0, 16))" for n in names)
    namespace: dict = {"cube": cube}
    path = os.path.join(tempfile.mkdtemp(), "many_args.py")
    with open(path, "w") as f:
        f.write(f"import cubepy as cube\n\ndef many({', '.join(names)}):\n{body}\n")
    code = compile(open(path).read(), path, "exec")
    exec(code, namespace)
    kern = cube.kernel(namespace["many"])
    arrays = [np.zeros(16, np.int32) for _ in names]
    limit = BACKEND.device.limits["max_storage_buffers_per_shader_stage"]
    if count <= limit:
        pytest.skip(f"this adapter binds {limit} storage buffers")
    with pytest.raises(BindingLimitError, match="max_storage_buffers_per_shader_stage"):
        kern[(1,)](*arrays, target="wgsl")
    assert isinstance(BindingLimitError("x"), cube.LaunchError)


def test_device_arrays_are_bound_without_copies_and_may_alias():
    n = 1000
    host = np.arange(n, dtype=np.float32)
    x = DeviceArray.from_numpy(host)
    scale_in_place[(-(-n // 256),)](x, x, n, BLOCK=256)  # target from the arrays; in place
    np.testing.assert_array_equal(x.numpy(), host * 2)
    y = DeviceArray.zeros(n, "float32")
    scale_in_place[(-(-n // 256),)](x, y, n, BLOCK=256)
    np.testing.assert_array_equal(y.numpy(), host * 4)


def test_same_numpy_array_twice_is_one_buffer():
    host = np.arange(300, dtype=np.float32)
    scale_in_place[(2,)](host, host, 300, BLOCK=256, target="wgsl")
    np.testing.assert_array_equal(host, np.arange(300, dtype=np.float32) * 2)


# ---------------------------------------------------------------- dtypes


@pytest.mark.skipif("float64" not in BACKEND.info().dtypes, reason="adapter without f64")
def test_float64_transcendentals_are_computed_in_software():
    """Adapters get f64 exp/log/sin/tanh/erf/pow wrong (lavapipe returns garbage), so the
    code generator writes them with f64 arithmetic; they are accurate to about 1e-14."""
    rng = np.random.default_rng(2)
    n = 2000
    x = np.concatenate([rng.uniform(-30, 30, n - 6), [0.0, 1e-300, -1e-9, 700.0, -700.0, 3.5]])
    outs = [np.full(n, np.nan) for _ in range(6)]
    math64[(-(-n // 256),)](x, *outs, n, BLOCK=256, target="wgsl")
    src = _src(math64, x, *outs, n, BLOCK=256)
    assert "fn exp_f64(" in src and "= exp(" not in src
    import scipy.special

    with np.errstate(over="ignore", divide="ignore"):  # log(0) is -inf, as in the kernel
        want = [
            np.exp(x),
            np.log(np.abs(x)),
            np.sin(x),
            np.tanh(x),
            scipy.special.erf(x * 0.25),
            np.power(np.abs(x) + 0.5, x * 0.5),
        ]
    for got, expected in zip(outs, want):
        # sin(x) near a multiple of pi is a cancellation: its error is a few ulps of x (|x| is
        # up to 30), not of the tiny result; an atol of 1e-14 covers that and nothing more.
        # (Seen on NVIDIA's Vulkan driver, whose fma contraction differs from lavapipe's.)
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "bfloat16"])
def test_dtypes_wgsl_lacks_are_refused_naming_the_target(dtype):
    import ml_dtypes

    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    x = np.zeros(64, np_dtype)
    with pytest.raises(cube.UnsupportedError, match=rf"'wgsl'.*\b{dtype}\b"):
        copy[(1,)](x, x.copy(), 64, BLOCK=64, target="wgsl")


# ---------------------------------------------------------------- every lowering path

OPTION_SETS = [
    {},
    {"subgroups": False},
    {"vec4": False},
    {"workgroup_size": 64},
    {"workgroup_size": 32, "subgroups": False},
]


def _run(kernel, options: dict, grid, *args, **comptime):
    """Compile ``kernel`` with backend ``options`` (not all are launch options) and launch."""
    bound, _ = kernel._bind(args, dict(comptime))
    _, params, _ = kernel._specialize(bound, "wgsl")
    compiled = BACKEND.compile(kernel.build(params), dict(options))
    runtime = [v for k, v in bound.items() if k not in kernel.comptime]
    compiled.launch(tuple(grid) + (1,) * (3 - len(grid)), runtime)
    return compiled.source


@cube.kernel
def reductions_2d(
    x, sums, maxes, argmins, scans, total, R: cube.Comptime[int], C: cube.Comptime[int]
):
    rows = cube.arange(0, R)
    cols = cube.arange(0, C)
    v = cube.load(x + rows[:, None] * C + cols[None, :])
    cube.store(sums + rows, cube.sum(v, axis=1))
    cube.store(maxes + cols, cube.max(v, axis=0))
    cube.store(argmins + rows, cube.argmin(v, axis=1))
    cube.store(scans + rows[:, None] * C + cols[None, :], cube.cumsum(v, axis=1))
    cube.store(total, cube.sum(v, axis=None))


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: str(o) or "default")
@pytest.mark.parametrize("shape", [(4, 4), (8, 32), (2, 256), (16, 64)])
def test_reductions_and_scans_on_every_path(options, shape):
    rows, cols = shape
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, shape).astype(np.int32)
    outs = [
        np.zeros(rows, np.int32),
        np.zeros(cols, np.int32),
        np.zeros(rows, np.int32),
        np.zeros(shape, np.int32),
        np.zeros(1, np.int32),
    ]
    _run(reductions_2d, options, (1,), x, *outs, R=rows, C=cols)
    np.testing.assert_array_equal(outs[0], x.sum(axis=1))
    np.testing.assert_array_equal(outs[1], x.max(axis=0))
    np.testing.assert_array_equal(outs[2], x.argmin(axis=1))
    np.testing.assert_array_equal(outs[3], np.cumsum(x, axis=1))
    assert outs[4][0] == x.sum()


@cube.kernel
def nan_reductions_2d(x, maxes, mins, argmaxes, argmins, R: cube.Comptime[int],
                      C: cube.Comptime[int]):
    rows = cube.arange(0, R)
    v = cube.load(x + rows[:, None] * C + cube.arange(0, C)[None, :])
    cube.store(maxes + rows, cube.max(v, axis=1))
    cube.store(mins + rows, cube.min(v, axis=1))
    cube.store(argmaxes + rows, cube.argmax(v, axis=1))
    cube.store(argmins + rows, cube.argmin(v, axis=1))


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: str(o) or "default")
@pytest.mark.parametrize("shape", [(4, 4), (8, 32), (2, 256), (16, 64), (1, 1024)])
def test_nan_reductions_on_every_path(options, shape):
    """max/min propagate NaN and argmax/argmin find the first NaN (NumPy's), whether the
    partials meet in shuffles, subgroup reductions or workgroup memory."""
    rows, cols = shape
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 2.0 / cols] = np.nan
    x[0, cols // 2:] = np.nan  # a row whose NaNs start late, and one NaN elsewhere
    x[-1, -1] = np.nan
    outs = [np.zeros(rows, np.float32), np.zeros(rows, np.float32),
            np.zeros(rows, np.int32), np.zeros(rows, np.int32)]
    _run(nan_reductions_2d, options, (1,), x, *outs, R=rows, C=cols)
    np.testing.assert_array_equal(outs[0], x.max(axis=1))
    np.testing.assert_array_equal(outs[1], x.min(axis=1))
    np.testing.assert_array_equal(outs[2], x.argmax(axis=1))
    np.testing.assert_array_equal(outs[3], x.argmin(axis=1))


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: str(o) or "default")
@pytest.mark.parametrize("blocks", [(64, 64, 16), (16, 32, 8)])
def test_dot_on_every_path(options, blocks):
    rng = np.random.default_rng(4)
    M, N, K = 70, 90, 40
    BM, BN, BK = blocks
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    _run(tile_matmul, options, (-(-M // BM), -(-N // BN)), a, b, c, M, N, K, BM=BM, BN=BN, BK=BK)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: str(o) or "default")
def test_softmax_on_every_path(options):
    rng = np.random.default_rng(5)
    x = rng.uniform(-4, 4, (6, 300)).astype(np.float32)
    out = np.full_like(x, np.nan)
    _run(row_softmax, options, (6,), x, out, 300, BLOCK=512)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- vec4 loads and stores


@cube.kernel
def gelu_at(x, out, n, base, BLOCK: cube.Comptime[int]):
    offs = base + cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    mask = offs < n
    v = cube.load(x + offs, mask=mask)
    cube.store(out + offs, v * 0.5 * (1.0 + cube.tanh(v)), mask=mask)


@pytest.mark.parametrize("n,base", [(3001, 0), (3001, 1), (3001, 3), (4096, 4), (5, 2)])
def test_contiguous_loads_and_stores_are_vec4(n, base):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    src = _src(gelu_at, x, x, n, base, BLOCK=1024)
    assert "var<storage, read> x: array<vec4<f32>>;" in src
    assert re.search(r"let quad_\d+ = x\[offs_\d+ >> 2u\];", src)  # a vec4 load
    assert re.search(r"out\[offs_\d+ >> 2u\] = vec4<f32>\(", src)  # a vec4 store
    out = np.full_like(x, 7.0)
    gelu_at[(-(-(n - base) // 1024),)](x, out, n, base, BLOCK=1024)
    ref = x * 0.5 * (1.0 + np.tanh(x))
    np.testing.assert_allclose(out[base:], ref[base:], rtol=1e-5, atol=1e-6)
    assert (out[:base] == 7.0).all()


@cube.kernel
def widen_and_divide(x, s, o_i64, o_f32, BLOCK: cube.Comptime[int]):
    i = cube.arange(0, BLOCK)
    cube.store(o_i64 + i, cube.load(s + i).to(cube.int64) >> 1)
    v = cube.load(x + i)
    cube.store(o_f32 + i, v / 0.0 + v**2 + v**5 + v // 2.0)


def test_lavapipe_workarounds_and_cheap_constant_forms_in_the_source():
    """An int32 widened to int64 goes through u64 with its sign bit flipped (lavapipe compares
    `i64(x)` with a constant wrongly); `x / 0.0` is `x * inf` (lavapipe dropped its store);
    constant whole exponents are multiplications; float `//` is NumPy's helper."""
    x = np.array([1.0, -1.0, 0.0, np.nan], np.float32)
    s = np.array([-3, 7, -(2**31), 2**31 - 1], np.int32)
    src = widen_and_divide.source("wgsl", x, s, np.zeros(4, np.int64), x.copy(), BLOCK=4)
    assert "u64(bitcast<u32>(" in src and not re.search(r"\bi64\((?!-)", src)
    assert "/ 0.0f" not in src and "* bitcast<f32>(0x7f800000u)" in src
    assert "powi_f32(" in src and "pow_f32(" not in src and "floordiv_f32(" in src
    o_i64, o_f32 = np.zeros(4, np.int64), np.zeros(4, np.float32)
    widen_and_divide[(1,)](x, s, o_i64, o_f32, BLOCK=4, target="wgsl")
    np.testing.assert_array_equal(o_i64, s.astype(np.int64) >> 1)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(o_f32, x / np.float32(0) + x**2 + x**5 + x // 2)
