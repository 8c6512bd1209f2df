"""The tuner on a CUDA GPU (marker ``gpu``): CUDA-event timing from a cold L2 cache, and a
whole tuning of a kernel on torch tensors."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from autotune_kernels import make_add

import cubepy as cube
from cubepy.autotune import clocks

pytestmark = pytest.mark.gpu


def test_event_timer_times_every_run():
    torch = pytest.importorskip("torch")
    x = torch.ones(1 << 22, device="cuda")  # 16 MB: would stay in L2 between back-to-back runs
    timer = clocks.timer_for("triton", [x])
    assert timer is not clocks.wall_clock

    def once():
        x.mul_(1.0)

    one = min(timer(once) for _ in range(5))
    ten = min(timer(once, 10) for _ in range(5))
    assert one > 0 and 5 * one < ten < 20 * one  # ten runs, each timed: about ten times one
    allocated = torch.cuda.memory_allocated()
    timer(once, 3)
    assert torch.cuda.memory_allocated() == allocated  # one cache-flush buffer, made once


def test_event_timer_hides_a_slow_host_path():
    torch = pytest.importorskip("torch")
    x = torch.ones(1 << 22, device="cuda")
    timer = clocks.timer_for("triton", [x])

    def slow_launch():  # a host path of 1 ms before a kernel of a few µs
        time.sleep(1e-3)
        x.mul_(1.0)

    for _ in range(5):  # the launches the timer learns the host's time from
        timer(slow_launch)
    assert timer.flushes * timer.flush_seconds > 1e-3
    assert min(timer(slow_launch) for _ in range(5)) < 0.3e-3  # the kernel, not the host


def test_tuning_on_torch_tensors(cache_dir):
    torch = pytest.importorskip("torch")
    n = 1 << 20
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    y = torch.full((n,), 2.0, device="cuda")
    out = torch.zeros(n, device="cuda")
    tuned = make_add()
    tuned[lambda meta: (cube.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    np.testing.assert_array_equal(out.cpu().numpy(), (x + y).cpu().numpy())
    assert tuned.stats.tunings == 1
    (path,) = (cache_dir / "autotune").glob("*.json")
    (entry,) = json.loads(path.read_text())["entries"].values()
    assert entry["key"]["target"] == "triton"
    timed = [t for t in entry["timings"] if t["status"] == "ok"]
    assert timed and all(t["median_s"] > 0 for t in timed)
    assert entry["best"] in [t["config"] for t in timed]


def test_event_timer_settle_queues_untimed_runs():
    torch = pytest.importorskip("torch")
    x = torch.zeros(1, device="cuda")
    timer = clocks.timer_for("triton", [x])
    timer.settle(lambda: x.add_(1.0), 50)
    assert timer(lambda: x.add_(1.0), 2) > 0
    assert x.item() == 52  # every queued run ran, once each
    assert timer.overhead_seconds == timer.flushes * timer.flush_seconds > 0
