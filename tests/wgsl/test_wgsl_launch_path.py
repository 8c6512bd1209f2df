"""The launch fast path of the ``wgsl`` backend: many ``kernel[grid](...)`` launches of
DeviceArrays recorded back to back into one open compute pass, one final sync.

``test_host_recording_time`` prints (does not assert) the host time per launch; run it with
``-s`` to see it, e.g. on a GPU machine:

    .venv/bin/python -m pytest tests/wgsl/test_wgsl_launch_path.py -s -k recording -q
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
import pytest

if not os.environ.get("XDG_RUNTIME_DIR"):  # Mesa complains on stderr without it
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubepy-xdg-")

wgpu = pytest.importorskip("wgpu")

import cubepy as cube  # noqa: E402
from cubepy.backends.wgsl import buffers, device, launch  # noqa: E402

try:
    DEV = device.get_device()
except device.AdapterNotFoundError as exc:  # pragma: no cover - machines without WebGPU
    pytest.skip(f"no WebGPU adapter: {exc}", allow_module_level=True)


@cube.kernel
def add_one(out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    cube.store(out + offs, cube.load(out + offs, m) + 1.0, m)


@cube.kernel
def axpy(x, out, n, a, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    cube.store(out + offs, cube.load(out + offs, m) * a + cube.load(x + offs, m), m)


@cube.kernel
def vadd(x, y, out, n, BLOCK: cube.Comptime[int]):
    offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = offs < n
    cube.store(out + offs, cube.load(x + offs, m) + cube.load(y + offs, m), m)


def test_1000_accumulating_launches_then_one_sync(monkeypatch):
    from cubepy.backends.wgsl.backend import WgslKernel

    full_path = []
    real = WgslKernel._launch
    monkeypatch.setattr(WgslKernel, "_launch",
                        lambda self, *a: (full_path.append(1), real(self, *a))[1])
    n = 3000
    out = buffers.zeros(n, "float32")
    grid = (cube.cdiv(n, 1024),)
    for _ in range(1000):
        add_one[grid](out, n, BLOCK=1024)
    device.synchronize()
    assert len(full_path) <= 1  # the first launch binds; the others take the fast path
    np.testing.assert_array_equal(out.numpy(), np.full(n, 1000, np.float32))


def test_1000_launches_in_one_batch_then_one_sync(monkeypatch):
    # No automatic submit: the 1000 dispatches share one pass of one command buffer.
    monkeypatch.setattr(DEV.stream, "max_batch", 10**9)
    out = buffers.zeros(100, "float32")
    add_one[(1,)](out, 100, BLOCK=1024)
    submits = []
    monkeypatch.setattr(DEV.stream, "_submit_hooks", [*DEV.stream._submit_hooks,
                                                       lambda: submits.append(1)])
    for _ in range(999):
        add_one[(1,)](out, 100, BLOCK=1024)
    assert submits == [] and DEV.stream.pending_dispatches >= 999
    np.testing.assert_array_equal(out.numpy(), np.full(100, 1000, np.float32))


def test_changing_scalars_and_arrays_between_launches(rng):
    # Each launch's own scalars and arrays, interleaved kernels, one final read.
    n = 2500
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    dxs = [buffers.from_numpy(x) for x in xs]
    out = buffers.zeros(n, "float32")
    want = np.zeros(n, np.float32)
    other = buffers.zeros(n, "float32")
    grid = (cube.cdiv(n, 512),)
    for step in range(300):
        a = np.float32(0.5 + (step % 7) / 16)
        axpy[grid](dxs[step % 3], out, n, float(a), BLOCK=512)
        want = want * a + xs[step % 3]
        vadd[grid](dxs[step % 3], out, other, n, BLOCK=512)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(other.numpy(), want + xs[299 % 3], rtol=1e-5, atol=1e-5)


def test_fast_path_rechecks_released_and_aliased_arrays():
    out = buffers.zeros(64, "float32")
    add_one[(1,)](out, 64, BLOCK=64)
    add_one[(1,)](out, 64, BLOCK=64)
    out.release()
    with pytest.raises(Exception, match="released"):
        add_one[(1,)](out, 64, BLOCK=64)
    # The same array as input and output: the all-read_write variant, also on repeats.
    x = buffers.from_numpy(np.ones(64, np.float32))
    for _ in range(3):
        vadd[(1,)](x, x, x, 64, BLOCK=64)
    np.testing.assert_array_equal(x.numpy(), np.full(64, 8, np.float32))


def test_uniform_ring_uploads_once_per_submit(monkeypatch):
    ring = DEV.caches["uniform_ring"]
    writes = []
    real = DEV.queue.write_buffer
    monkeypatch.setattr(DEV.stream, "max_batch", 10**9)
    out = buffers.zeros(64, "float32")
    device.synchronize()
    monkeypatch.setattr(DEV.queue, "write_buffer",
                        lambda buf, *a: (writes.append(buf is ring.buffer), real(buf, *a)))
    for n in range(50):  # 50 distinct scalar values
        add_one[(1,)](out, 10 + n, BLOCK=64)
    DEV.stream.flush()
    assert writes.count(True) <= 1
    expected = np.array([sum(10 + n > i for n in range(50)) for i in range(64)], np.float32)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_raw_compute_pass_users_do_not_confuse_the_fast_path(rng):
    # A caller binding its own pipeline on stream.compute_pass() between fast launches.
    out = buffers.zeros(64, "float32")
    add_one[(1,)](out, 64, BLOCK=64)
    src = """
@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32) { o[i] = o[i] * 10.0; }
"""
    launcher = launch.Launcher(src, "main", ["read_write"])
    group = launcher.bind_group([out])
    compute_pass = DEV.stream.compute_pass()
    compute_pass.set_pipeline(launcher.pipeline)
    compute_pass.set_bind_group(0, group, [])
    compute_pass.dispatch_workgroups(1)
    add_one[(1,)](out, 64, BLOCK=64)
    np.testing.assert_array_equal(out.numpy(), np.full(64, 11, np.float32))


def test_host_recording_time():
    """Prints the host µs per launch of 1000 back-to-back launches (recording, then sync)."""
    n, count = 4096, 1000
    x = buffers.from_numpy(np.ones(n, np.float32))
    out = buffers.empty(n, "float32")
    grid = (cube.cdiv(n, 1024),)
    vadd[grid](x, x, out, n, BLOCK=1024)
    device.synchronize()
    rows = []
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(count):
            vadd[grid](x, x, out, n, BLOCK=1024)
        recorded = time.perf_counter()
        device.synchronize()
        done = time.perf_counter()
        rows.append(((recorded - started) / count * 1e6, (done - started) / count * 1e6))
    record, total = min(rows)
    print(f"\n[wgsl launch] {DEV.adapter_summary}: {count} launches back to back, one sync: "
          f"record {record:.1f} µs/launch, total {total:.1f} µs/launch (best of 3)")
    np.testing.assert_array_equal(out.numpy(), np.full(n, 2, np.float32))
