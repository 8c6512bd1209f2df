"""The tuner on the ``wgsl`` target: a whole tuning on wgpu buffers with the adapter's clock
(lavapipe in CI, the NVIDIA Vulkan adapter on the H200), and which WGSL clock settles."""

from __future__ import annotations

import json

import numpy as np
import pytest
from autotune_kernels import add_inputs, add_kernel, make_add

import cubepy as cube
from cubepy.autotune import bench, clocks
from cubepy.backends.wgsl.device import get_device

pytestmark = pytest.mark.skipif("wgsl" not in cube.available_targets(),
                                reason="no WebGPU adapter here")


def test_tuning_on_wgpu_buffers(cache_dir):
    n = 1 << 16
    x_host, y_host, _ = add_inputs(n)
    x, y = cube.asarray(x_host, device="wgpu"), cube.asarray(y_host, device="wgpu")
    out = cube.empty((n,), cube.float32, device="wgpu")
    tuned = make_add()
    tuned[lambda meta: (cube.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    np.testing.assert_array_equal(cube.to_numpy(out), x_host + y_host)
    assert tuned.stats.tunings == 1
    (path,) = (cache_dir / "autotune").glob("*.json")
    (entry,) = json.loads(path.read_text())["entries"].values()
    assert entry["key"]["target"] == "wgsl"
    timings = entry["timings"]  # every candidate was timed; the slower ones may be dropped
    assert len(timings) == 3 and {t["status"] for t in timings} <= {"ok", "dropped"}
    assert all(t["median_s"] > 0 and t["runs"] > 0 for t in timings)
    assert entry["best"] in [t["config"] for t in timings if t["status"] == "ok"]


def test_the_wgsl_clock_settles_on_gpu_adapters_only():
    on_cpu = get_device().adapter.info.get("adapter_type") == "CPU"
    timer = clocks.timer_for("wgsl", [])
    assert isinstance(timer, clocks.WgslTimer)
    assert isinstance(timer, clocks.SustainedTimer) is not on_cpu


def test_a_settling_wgsl_clock_runs_what_it_settles_before_timing():
    x = cube.asarray(np.zeros(1 << 10, np.float32), device="wgpu")
    y = cube.asarray(np.ones(1 << 10, np.float32), device="wgpu")
    timer = clocks.SettlingWgslTimer()
    assert isinstance(timer, clocks.SustainedTimer) and timer.overhead_seconds == 0.0

    def once():
        add_kernel[(4,)](x, y, x, 1 << 10, BLOCK=256)

    timer.settle(once, 5)
    assert timer(once, 2) > 0
    np.testing.assert_array_equal(cube.to_numpy(x), np.full(1 << 10, 7.0, np.float32))


def test_snapshots_of_wgpu_buffers_stay_on_the_device():
    x = cube.asarray(np.arange(8, dtype=np.float32), device="wgpu")
    snapshot = bench.Snapshot({"x": x})
    assert type(snapshot.saved["x"]) is type(x)  # a device copy: no upload per candidate
    x.copy_from(np.zeros(8, np.float32))
    snapshot.restore()
    np.testing.assert_array_equal(cube.to_numpy(x), np.arange(8))


def test_the_example_matmul_tunes_among_its_wgsl_tilings(cache_dir):
    from examples import matmul

    rng = np.random.default_rng(0)
    m, n, k = 70, 50, 40  # ragged for every tiling
    a_host = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b_host = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    a, b = cube.asarray(a_host, device="wgpu"), cube.asarray(b_host, device="wgpu")
    c = cube.empty((m, n), cube.float32, device="wgpu")
    matmul.matmul_tuned(a, b, c, m, n, k)
    assert matmul.matmul_tuned.last_config in matmul.WGSL_TUNING_CONFIGS
    np.testing.assert_allclose(cube.to_numpy(c), a_host.astype(np.float64) @ b_host,
                               rtol=0, atol=matmul.product_tolerance("float32", k))
