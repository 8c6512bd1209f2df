"""The wgsl rows of bench/gpu_bench.py: DeviceArrays timed with ``time_launches``, against the
torch copy bandwidth and cuBLAS measured by ``TritonEnv`` (NumPy stand-ins without a GPU).

The one kernel written here is the two-stage sum; gelu, matmul and vector add are shared.
"""

from __future__ import annotations

import statistics

import numpy as np
from gpu_bench_triton import (
    Row,
    TritonEnv,
    failed_note,
    gelu_check,
    median_wall,
    rate,
    rel_error,
    tune,
)

import cubepy as cube
from asv_bench.cpu_kernels import gelu_kernel
from examples import matmul as mm
from examples import vector_add as va

# ---- wgsl rows ---------------------------------------------------------------------------------


@cube.kernel
def partial_sum_kernel(x, partial, n, BLOCK: cube.Comptime[int]):
    # Cube i adds elements i*BLOCK + j*(cubes*BLOCK) + [0, BLOCK): every step reads one
    # contiguous block per cube.
    pid = cube.cube_pos(0)
    step = cube.cube_count(0) * BLOCK
    acc = cube.zeros((BLOCK,), cube.float32)
    for start in range(pid * BLOCK, n, step):
        offs = start + cube.arange(0, BLOCK)
        acc += cube.load(x + offs, mask=offs < n, other=0.0)
    cube.store(partial + pid, cube.sum(acc, axis=0))


class WgslEnv:
    """DeviceArrays and ``time_launches`` (GPU timestamps where the adapter has them)."""

    def __init__(self) -> None:
        from cubepy.backends.wgsl import buffers, timing
        from cubepy.backends.wgsl.device import get_device

        self.device, self.buffers, self.timing = get_device(), buffers, timing
        self.method = timing.timing_method(self.device)

    def time(self, record, repeat: int = 5) -> float:
        record()
        self.device.stream.synchronize()
        return statistics.median(self.timing.time_launches(record, device=self.device)
                                 for _ in range(repeat))


def wgsl_gelu(row: Row, env: TritonEnv, n: int, blocks) -> None:
    w = WgslEnv()
    x = w.buffers.DeviceArray.from_numpy(np.random.default_rng(0).standard_normal(n, np.float32))
    out = w.buffers.DeviceArray.empty((n,), "float32")

    def measure(block):
        return w.time(lambda: gelu_kernel[(cube.cdiv(n, block),)](x, out, n, BLOCK=block))

    row.ours, block, failures = tune(blocks, measure)
    gelu_kernel[(cube.cdiv(n, block),)](x, out, n, BLOCK=block)
    row.peer, row.peer_name = env.copy_time(n, "float32")
    row.judge(row.peer / row.ours, "0.7x")
    row.detail = (f"BLOCK {block}: {8 * n / row.ours / 1e9:.0f} GB/s vs copy "
                  f"{8 * n / row.peer / 1e9:.0f} GB/s; max err {gelu_check(x, out):.1e}; "
                  f"timer {w.method}{failed_note(failures)}")


def wgsl_sum(row: Row, env: TritonEnv, n: int, configs) -> None:
    w = WgslEnv()
    host = np.random.default_rng(0).random(n, dtype=np.float32)
    x = w.buffers.DeviceArray.from_numpy(host)
    total = w.buffers.DeviceArray.empty((1,), "float32")

    def launch(cfg):
        cubes, block = cfg
        partial = w.buffers.DeviceArray.empty((cubes,), "float32")

        def record():
            partial_sum_kernel[(cubes,)](x, partial, n, BLOCK=block)
            partial_sum_kernel[(1,)](partial, total, cubes, BLOCK=1024)
        return record

    row.ours, (cubes, block), failures = tune(configs, lambda cfg: w.time(launch(cfg)))
    launch((cubes, block))()
    want = float(np.sum(host, dtype=np.float64))
    err = abs(float(total.numpy()[0]) - want) / want
    copy, row.peer_name = env.copy_time(n, "float32")
    row.peer = copy / 2  # the copy moves 2n elements, the sum reads n: compare bandwidths
    row.judge(row.peer / row.ours, "0.7x")
    row.detail = (f"{cubes} cubes x BLOCK {block}, then 1 cube: {4 * n / row.ours / 1e9:.0f} "
                  f"GB/s read vs copy {8 * n / copy / 1e9:.0f} GB/s (peer time = half the copy);"
                  f" rel err {err:.1e}; timer {w.method}{failed_note(failures)}")


def wgsl_matmul(row: Row, env: TritonEnv, shape, dtype: str, configs) -> None:
    w = WgslEnv()
    m, n, k = shape
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((m, k), np.float32).astype(dtype)
    b_host = rng.standard_normal((k, n), np.float32).astype(dtype)
    a, b = w.buffers.DeviceArray.from_numpy(a_host), w.buffers.DeviceArray.from_numpy(b_host)
    c = w.buffers.DeviceArray.empty((m, n), dtype)

    def measure(config):
        return w.time(lambda: mm.matmul(a, b, c, config=config, target="wgsl"))

    row.ours, config, failures = tune(configs, measure)
    mm.matmul(a, b, c, config=config, target="wgsl")
    rows = min(m, 64)
    want = a_host[:rows].astype(np.float64) @ b_host.astype(np.float64)
    err = rel_error(c.numpy()[:rows], want)
    flops = 2 * m * n * k
    fp32, fp32_name = env.cublas_time(shape, "float32", tf32=False)
    if dtype == "float32":
        row.peer, row.peer_name = fp32, fp32_name
        row.judge(fp32 / row.ours, "0.4x")
        beside = ""
    else:
        row.peer, row.peer_name = env.cublas_time(shape, dtype)
        row.ratio = row.peer / row.ours
        beside = f"; vs cuBLAS fp32 {fp32 / row.ours:.2f}x ({rate(flops, fp32)})"
    row.detail = (f"best {config}: {rate(flops, row.ours)}{beside}; rel err "
                  f"({rows} rows) {err:.1e}; timer {w.method}{failed_note(failures)}")


def wgsl_launches(row: Row, env: TritonEnv, n: int, count: int) -> None:
    w = WgslEnv()
    x = w.buffers.DeviceArray.from_numpy(np.ones(n, np.float32))
    out = w.buffers.DeviceArray.empty((n,), "float32")
    launch = lambda: va.add_kernel[(cube.cdiv(n, 256),)](x, x, out, n, BLOCK=256)  # noqa: E731

    def batch():
        for _ in range(count):
            launch()
        w.device.stream.synchronize()

    row.ours = median_wall(batch, repeat=5) / count
    row.judge(row.ours * 1e6, "20 µs", at_most=True)
    row.ratio = None
    row.detail = (f"{count} vector adds of {n} f32 back to back, one final sync: "
                  f"{row.ours * 1e6:.1f} µs per launch")
