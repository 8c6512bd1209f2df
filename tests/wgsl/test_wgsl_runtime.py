"""The ``wgsl`` backend's runtime (device, buffers, launches, timing) with hand-written WGSL.

Runs on whatever adapter wgpu finds (lavapipe on CI); skipped when there is none.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

if not os.environ.get("XDG_RUNTIME_DIR"):  # Mesa complains on stderr without it
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubepy-xdg-")

wgpu = pytest.importorskip("wgpu")

from cubepy import config  # noqa: E402
from cubepy.backends.wgsl import buffers, device, launch, timing, uniforms  # noqa: E402
from cubepy.errors import CubeError, UnsupportedError  # noqa: E402

try:
    DEV = device.get_device()
except device.AdapterNotFoundError as exc:  # pragma: no cover - machines without WebGPU
    pytest.skip(f"no WebGPU adapter: {exc}", allow_module_level=True)

ON_LAVAPIPE = "llvmpipe" in DEV.adapter_summary and "Vulkan" in DEV.adapter_summary


def kernel_source(body: str, *fields: tuple[str, str], header: str = "") -> str:
    """``header``, the uniform struct (grid fields, then ``fields``) and ``body`` whose line
    ``CUBE_POS`` becomes the grid decoding of ``uniforms.cube_pos_wgsl``."""
    struct = uniforms.uniform_struct_wgsl([*uniforms.GRID_FIELDS, *fields])
    return header + struct + body.replace("CUBE_POS\n", uniforms.cube_pos_wgsl())


VEC_ADD = kernel_source(
    """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
CUBE_POS
    let i = cube_pos_x * 64u + lane;
    if (i < params.n) { out[i] = (a[i] + b[i]) * params.scale; }
}
""",
    ("n", "uint32"),
    ("scale", "float32"),
)
VEC_ADD_BINDINGS = ["read", "read", "read_write", "uniform"]


def vec_add(n: int, scale: float, rng: np.random.Generator):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    da, db, dout = buffers.from_numpy(a), buffers.from_numpy(b), buffers.empty(n, "float32")
    launcher = launch.Launcher(VEC_ADD, "main", VEC_ADD_BINDINGS, name="vec_add")
    grid = (-(-n // 64),)
    scalars = [("uint32", n), ("float32", scale)]
    return launcher, grid, [da, db, dout], scalars, (a + b) * np.float32(scale)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


# ---- device ---------------------------------------------------------------------------


def test_device_is_created_once_and_reports_capabilities():
    assert device.get_device() is DEV
    assert {"bool", "int32", "uint32", "float32"} <= DEV.supported_dtypes
    assert not DEV.supported_dtypes & {"int8", "int16", "uint8", "bfloat16"}
    assert DEV.limits["max_compute_workgroups_per_dimension"] >= 65535
    assert DEV.limits["max_storage_buffers_per_shader_stage"] >= 8
    assert isinstance(DEV.features, frozenset)
    if DEV.has("subgroup"):
        low, high = DEV.subgroup_size
        assert 1 <= low <= high
    else:
        assert DEV.subgroup_size is None


@pytest.mark.skipif(not ON_LAVAPIPE, reason="facts checked on lavapipe")
def test_lavapipe_offers_f16_subgroups_timestamps_and_64_bit():
    for feature in ("shader-f16", "subgroup", "timestamp-query", "shader-float32-atomic"):
        assert DEV.has(feature), feature
    assert {"float16", "int64", "float64"} <= DEV.supported_dtypes
    assert DEV.subgroup_size == (8, 8)


def test_bad_adapter_name_lists_available_adapters(monkeypatch):
    monkeypatch.setenv("CUBEPY_WGPU_ADAPTER", "no-such-adapter-xyz")
    try:
        name = config.reload().wgpu_adapter
        with pytest.raises(device.AdapterNotFoundError) as info:
            device.create_device(name)
    finally:
        monkeypatch.delenv("CUBEPY_WGPU_ADAPTER")
        config.reload()
    message = str(info.value)
    assert "no-such-adapter-xyz" in message
    for summary in device.adapter_summaries():
        assert summary in message
    assert isinstance(info.value, CubeError)


def test_adapter_substring_match_is_case_insensitive():
    word = DEV.adapter_summary.split()[0].upper()
    assert word.lower() in device.select_adapter(word).summary.lower()


# ---- buffer pool ----------------------------------------------------------------------


def test_size_classes():
    assert [buffers.size_class(n) for n in (0, 1, 256, 257, 1000, 4096)] == [
        256,
        256,
        256,
        512,
        1024,
        4096,
    ]
    assert buffers.size_class(3_000_000_001, max_buffer_size=2**31) == 3_000_000_004


def test_pool_reuses_freed_buffer_of_same_class():
    pool = buffers.BufferPool(DEV, cap_bytes=1 << 20)
    first = pool.allocate(1000)
    pool.free(first)
    pool.collect()
    second = pool.allocate(600)  # same 1024-byte class
    assert second is first and pool.reuses == 1
    third = pool.allocate(5000)  # other class: a new buffer
    assert third is not first and pool.allocations == 2
    pool.free(second)
    pool.free(third)
    pool.clear()
    assert pool.held_bytes == 0


def test_pool_stays_under_cap_over_10000_mixed_cycles(rng):
    cap = 2 << 20
    pool = buffers.BufferPool(DEV, cap_bytes=cap)
    live: list[buffers.PooledBuffer] = []
    for _ in range(10_000):
        live.append(pool.allocate(int(rng.integers(1, 600_000))))
        if len(live) > 8 or rng.random() < 0.5:
            pool.free(live.pop(int(rng.integers(len(live)))))
            pool.collect()
        assert pool.held_bytes <= cap
    for pooled in live:
        pool.free(pooled)
    pool.collect()
    assert pool.held_bytes <= cap and pool.in_use_bytes == 0
    assert pool.reuses > 5_000  # most allocations were served from the free lists
    pool.clear()


def test_garbage_collected_arrays_return_to_pool():
    pool = buffers.get_pool()
    pool.collect()
    before = pool.in_use_bytes
    for i in range(2_000):
        buffers.empty((i % 50 + 1, 17), "float32")  # dropped at once: finalizer frees it
    pool.collect()
    assert pool.in_use_bytes == before
    assert pool.held_bytes <= pool.cap_bytes


def test_released_array_cannot_be_used():
    x = buffers.from_numpy(np.ones(4, np.float32))
    x.release()
    x.release()  # twice is harmless
    assert x.released
    with pytest.raises(device.WgslRuntimeError, match="released"):
        x.numpy()


# ---- upload / download ----------------------------------------------------------------

ROUND_TRIP_DTYPES = ["float32", "int32", "uint32", "bool", "float16", "int64", "float64"]


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (1000,)])
def test_round_trip(dtype, shape, rng):
    if dtype not in DEV.supported_dtypes:
        pytest.skip(f"{dtype} not supported on {DEV.adapter_summary}")
    host = (rng.standard_normal(shape) * 100).astype(np.dtype(dtype) if dtype != "bool" else "f4")
    if dtype == "bool":
        host = host > 0
    if dtype == "uint32":
        host = rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)
    array = buffers.from_numpy(host)
    assert array.shape == shape and array.dtype == dtype and array.size == host.size
    back = array.numpy()
    assert back.dtype == host.dtype
    np.testing.assert_array_equal(back, host)


def test_non_contiguous_upload_zeros_and_copy():
    host = np.arange(20, dtype=np.float32).reshape(4, 5)[:, ::2]
    array = buffers.from_numpy(host)
    np.testing.assert_array_equal(array.numpy(), host)
    np.testing.assert_array_equal(np.asarray(array.copy()), host)
    assert len(array) == 4 and array.ndim == 2
    dirty = buffers.from_numpy(np.full((3, 3), 7, np.int32))
    dirty.release()  # its buffer is reused by the next array of this size class
    np.testing.assert_array_equal(buffers.zeros((3, 3), "int32").numpy(), np.zeros((3, 3)))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "bfloat16", "i8"])
def test_dtypes_without_wgsl_type_are_refused(dtype):
    with pytest.raises(device.UnsupportedDtypeError, match="wgsl") as info:
        buffers.empty(4, dtype)
    assert isinstance(info.value, UnsupportedError)


def test_bool_is_stored_as_one_u32_per_element():
    src = kernel_source(
        """
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < params.n) { y[gid.x] = select(0u, 1u, !(x[gid.x] != 0u)); }
}
""",
        ("n", "uint32"),
    )
    host = np.array([True, False, False, True, True])
    x, y = buffers.from_numpy(host), buffers.empty(5, "bool")
    launch.Launcher(src, "main", ["read", "read_write", "uniform"]).launch(
        (1,), [x, y], [("uint32", 5)]
    )
    np.testing.assert_array_equal(y.numpy(), ~host)


# ---- launches -------------------------------------------------------------------------


def test_vec_add_with_uniforms(rng):
    launcher, grid, args, scalars, expected = vec_add(1000, 2.5, rng)
    launcher.launch(grid, args, scalars)
    np.testing.assert_allclose(args[2].numpy(), expected, rtol=1e-6)


ACCUMULATE = kernel_source(
    """
@group(0) @binding(0) var<storage, read_write> acc: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < 100u) { acc[gid.x] = acc[gid.x] * 0.5 + f32(params.step); }
}
""",
    ("step", "uint32"),
)


def accumulate(launches: int) -> None:
    acc = buffers.zeros(100, "float32")
    launcher = launch.Launcher(ACCUMULATE, "main", ["read_write", "uniform"], name="acc")
    expected = np.float32(0)
    for step in range(launches):
        launcher.launch((2,), [acc], [("uint32", step)])
        expected = expected * np.float32(0.5) + np.float32(step)
    np.testing.assert_allclose(acc.numpy(), np.full(100, expected), rtol=1e-6)


def test_many_launches_are_batched_and_ordered():
    # Each launch has its own scalars and reads the previous launch's output.
    accumulate(2 * DEV.stream.max_batch + 5)  # three submits


def test_uniform_ring_wraps_around(monkeypatch):
    ring = DEV.caches.get("uniform_ring") or launch.UniformRing(DEV)
    DEV.caches["uniform_ring"] = ring
    monkeypatch.setattr(ring, "size", 4 * ring.align)  # a few slots: wraps every few launches
    monkeypatch.setattr(DEV.stream, "max_batch", 10_000)
    accumulate(50)


def test_upload_after_launch_keeps_program_order():
    src = kernel_source(
        """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(4)
fn main(@builtin(local_invocation_index) i: u32) { y[i] = x[i] + 1.0; }
"""
    )
    x, y = buffers.from_numpy(np.zeros(4, np.float32)), buffers.empty(4, "float32")
    launch.Launcher(src, "main", ["read", "read_write", "uniform"]).launch((1,), [x, y])
    x.copy_from(np.full(4, 10, np.float32))  # must land after the launch recorded above
    np.testing.assert_array_equal(y.numpy(), np.ones(4))


def test_copy_from_another_device_array_copies_on_the_device():
    src = kernel_source(
        """
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(4)
fn main(@builtin(local_invocation_index) i: u32) { y[i] = y[i] * 2.0; }
"""
    )
    x, y = buffers.from_numpy(np.arange(4, dtype=np.float32)), buffers.empty(4, "float32")
    y.copy_from(x)  # recorded in order: the launch below doubles the copy
    launch.Launcher(src, "main", ["read_write", "uniform"]).launch((1,), [y])
    np.testing.assert_array_equal(y.numpy(), 2 * np.arange(4))
    np.testing.assert_array_equal(x.numpy(), np.arange(4))
    with pytest.raises(ValueError, match=r"float32 \(4,\) into int32 \(4,\): the shape"):
        buffers.empty(4, "int32").copy_from(x)
    with pytest.raises(ValueError, match="shape, dtype and device must be the same"):
        buffers.empty(5, "float32").copy_from(x)


def test_pipelines_and_bind_groups_are_cached(rng):
    launcher, grid, args, scalars, _ = vec_add(256, 1.0, rng)
    again = launch.Launcher(VEC_ADD, "main", VEC_ADD_BINDINGS)
    assert again.pipeline is launcher.pipeline
    cache = DEV.caches["bind_groups"]
    launcher.launch(grid, args, scalars)
    hits = cache.hits
    launcher.launch(grid, args, [("uint32", 256), ("float32", 3.0)])
    assert cache.hits == hits + 1


def test_grid_folding_70000_workgroups():
    src = kernel_source(
        """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
CUBE_POS
    out[cube_pos_x] = cube_pos_x;
    out[70000u + cube_pos_x] = cube_linear;
}
"""
    )
    n = 70_000
    out = buffers.zeros(n + 65535 * 2, "uint32")
    launch.Launcher(src, "main", ["read_write", "uniform"], name="iota").launch((n,), [out])
    got = out.numpy()
    np.testing.assert_array_equal(got[:n], np.arange(n))
    np.testing.assert_array_equal(got[n : 2 * n], np.arange(n))
    assert not got[2 * n :].any()  # the 61,070 excess workgroups wrote nothing


def test_grid_folding_keeps_3d_positions():
    src = kernel_source(
        """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
CUBE_POS
    let i = cube_pos_x + params.cube_count_x * (cube_pos_y + params.cube_count_y * cube_pos_z);
    out[3u * i] = cube_pos_x;
    out[3u * i + 1u] = cube_pos_y;
    out[3u * i + 2u] = cube_pos_z;
}
"""
    )
    grid = (66_000, 2, 3)
    out = buffers.zeros(3 * 66_000 * 6, "uint32")
    launch.Launcher(src, "main", ["read_write", "uniform"]).launch(grid, [out])
    pos = out.numpy().reshape(3, 2, 66_000, 3)
    z, y, x = np.meshgrid(np.arange(3), np.arange(2), np.arange(66_000), indexing="ij")
    np.testing.assert_array_equal(pos[..., 0], x)
    np.testing.assert_array_equal(pos[..., 1], y)
    np.testing.assert_array_equal(pos[..., 2], z)


def test_fold_grid_rule():
    assert uniforms.fold_grid((70_000,)) == (65535, 2, 1)
    assert uniforms.fold_grid((5, 6, 7)) == (5, 6, 7)
    assert uniforms.fold_grid((65535,)) == (65535, 1, 1)
    assert uniforms.fold_grid((0, 70_000)) == (0, 1, 1)
    assert uniforms.fold_grid(10) == (10, 1, 1)
    fx, fy, fz = uniforms.fold_grid((100_000, 40_000))
    assert 100_000 * 40_000 <= fx * fy * fz < 2**32 and max(fx, fy, fz) <= 65535
    with pytest.raises(ValueError, match="2\\*\\*32"):
        uniforms.fold_grid((2**20, 2**20))


def test_zero_grid_launches_nothing(rng):
    launcher, _, args, scalars, _ = vec_add(64, 1.0, rng)
    pending = DEV.stream.pending_dispatches
    launcher.launch((0,), args, scalars)
    assert DEV.stream.pending_dispatches == pending


def test_too_many_storage_bindings_is_a_clear_error():
    limit = DEV.limits["max_storage_buffers_per_shader_stage"]
    with pytest.raises(launch.BindingLimitError) as info:
        launch.Launcher("", "main", ["read"] * (limit + 1) + ["uniform"], name="wide_kernel")
    message = str(info.value)
    assert "wide_kernel" in message and str(limit) in message
    assert "max_storage_buffers_per_shader_stage" in message


def test_aliasing_read_and_read_write_is_a_clear_error(rng):
    launcher, grid, (a, b, _), scalars, _ = vec_add(64, 1.0, rng)
    with pytest.raises(launch.BindingAliasError, match="vec_add"):
        launcher.launch(grid, [a, b, a], scalars)


def test_compile_error_names_the_kernel():
    with pytest.raises(launch.WgslCompileError, match="broken_kernel") as info:
        launch.Launcher("fn main( {", "main", ["read_write"], name="broken_kernel")
    assert info.value.source == "fn main( {"


def test_wrong_buffer_count_is_an_error(rng):
    launcher, grid, args, scalars, _ = vec_add(64, 1.0, rng)
    with pytest.raises(ValueError, match="3 storage bindings"):
        launcher.launch(grid, args[:2], scalars)


# ---- uniforms -------------------------------------------------------------------------


def test_uniform_layout_rules():
    assert uniforms.uniform_offsets(["uint32"]) == ([0], 16)
    assert uniforms.uniform_offsets(["int32", "float64", "float32"]) == ([0, 8, 16], 32)
    assert uniforms.uniform_offsets(["float32"] * 5) == ([0, 4, 8, 12, 16], 32)
    assert uniforms.pack_uniforms([("int32", -1), ("float16", 0.5)]) == (
        b"\xff\xff\xff\xff\x00\x00\x00\x3f" + bytes(8)
    )
    assert "_pad: u32" in uniforms.uniform_struct_wgsl([])
    with pytest.raises(TypeError, match="int8"):
        uniforms.pack_uniforms([("int8", 1)])


def test_uniform_struct_matches_naga_layout():
    fields = [("i", "int32"), ("u", "uint32"), ("f", "float32"), ("b", "bool"), ("h", "float16")]
    values = [-7, 4_000_000_000, 1.5, True, 0.25]
    if "float64" in DEV.supported_dtypes:
        fields += [("d", "float64"), ("g", "float32")]
        values += [3.25, -2.0]
    tail = "out[5] = f32(params.d); out[6] = params.g;" if len(fields) > 5 else ""
    body = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(1)
fn main() {
    out[0] = f32(params.i); out[1] = f32(params.u); out[2] = params.f;
    out[3] = select(0.0, 1.0, params.b != 0u); out[4] = params.h;
    TAIL
}
"""
    src = uniforms.uniform_struct_wgsl(fields) + body.replace("TAIL", tail)
    out = buffers.zeros(len(values), "float32")
    launcher = launch.Launcher(src, "main", ["read_write", "uniform"])
    # Launch packs the grid first; here the struct has no grid fields, so pack by hand.
    data = uniforms.pack_uniforms([(dtype, v) for (_, dtype), v in zip(fields, values)])
    ring = DEV.caches["uniform_ring"]
    offset = ring.push(data)
    group = DEV.caches["bind_groups"].get(
        launcher.layout,
        (launcher.bindings, id(launcher.layout)),
        [(out.buffer, out.binding_size), (ring.buffer, len(data))],
    )
    compute_pass = DEV.stream.compute_pass()
    compute_pass.set_pipeline(launcher.pipeline)
    compute_pass.set_bind_group(0, group, [offset])
    compute_pass.dispatch_workgroups(1)
    np.testing.assert_allclose(out.numpy(), np.array(values, np.float32))


# ---- f16 ------------------------------------------------------------------------------


def test_f16_kernel(rng):
    if not ON_LAVAPIPE and "float16" not in DEV.supported_dtypes:
        pytest.skip("adapter without shader-f16")
    assert "float16" in DEV.supported_dtypes  # lavapipe offers shader-f16 through Vulkan
    body = """
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < params.n) { y[gid.x] = x[gid.x] * 2.0h + f16(params.bias); }
}
"""
    fields = [("n", "uint32"), ("bias", "float16")]
    src = kernel_source(body, *fields, header="enable f16;\n")
    n = 101  # odd: the last 4-byte word holds one element and padding
    host = rng.standard_normal(n).astype(np.float16)
    x, y = buffers.from_numpy(host), buffers.empty(n, "float16")
    launch.Launcher(src, "main", ["read", "read_write", "uniform"], name="f16").launch(
        (2,), [x, y], [("uint32", n), ("float16", 0.5)]
    )
    expected = (host * np.float16(2) + np.float16(0.5)).astype(np.float16)
    np.testing.assert_allclose(y.numpy().astype(np.float32), expected, rtol=1e-3, atol=1e-3)


# ---- timing ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["auto", "wallclock", "timestamp"])
def test_timing_returns_positive_seconds(method, rng):
    if method == "timestamp" and not DEV.has("timestamp-query"):
        pytest.skip("adapter without timestamp queries")
    launcher, grid, args, scalars, expected = vec_add(1 << 16, 1.0, rng)

    def record() -> None:
        for _ in range(3):
            launcher.launch(grid, args, scalars)

    seconds = timing.time_launches(record, method=method)
    assert 0.0 < seconds < 10.0
    np.testing.assert_allclose(args[2].numpy(), expected, rtol=1e-6)


def test_timing_method_follows_the_feature():
    expected = "timestamp" if DEV.has("timestamp-query") else "wallclock"
    assert timing.timing_method() == expected
