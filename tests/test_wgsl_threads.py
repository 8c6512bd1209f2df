"""Several threads launching kernels on the one wgpu device and reading results back at once.

The ``wgsl`` runtime records every launch into one shared command encoder and submits it in
batches (``CommandStream``). Without the device's lock, one thread's submit (which finishes
the encoder) could land while another thread was recording into it, and wgpu failed with
"Encoding must not have ended"; a read could also map a buffer before the submit holding the
launch that wrote it. Here 8 threads each run kernels of ``kernels/`` many times on their own
inputs, on DeviceArrays and on NumPy arrays (uploaded, launched, read back and released per
launch), and every result is checked against NumPy.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import cubepy as cube


def _absent_reason() -> str:
    from cubepy.backends.wgsl.backend import why_unavailable

    return f"target 'wgsl' is not present on this machine: {why_unavailable()}"


WGSL_PRESENT = "wgsl" in cube.available_targets()
pytestmark = pytest.mark.skipif(not WGSL_PRESENT,
                                reason="" if WGSL_PRESENT else _absent_reason())

THREADS = 8
ROUNDS = 12


def _views():
    from kernels.layout import Context, View, contiguous_strides

    ctx = Context("wgsl", lambda numel, dtype: cube.empty((numel,), dtype, device="wgpu"))

    def upload(host: np.ndarray) -> View:
        storage = cube.asarray(host.reshape(-1), device="wgpu")
        return View(storage, 0, host.shape, contiguous_strides(host.shape), cube.float32)

    def download(view: View) -> np.ndarray:
        return cube.to_numpy(view.storage)[: view.numel].reshape(view.shape)

    return ctx, upload, download


def _device_array_rounds(seed: int, start: threading.Barrier) -> int:
    """Elementwise products and row sums of DeviceArrays, each read back and checked."""
    from kernels import elementwise, reduce

    ctx, upload, download = _views()
    rng = np.random.default_rng(seed)
    start.wait()
    for _ in range(ROUNDS):
        rows, cols = (int(v) for v in rng.integers(1, 70, size=2))
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        y = rng.standard_normal((rows, cols)).astype(np.float32)
        product = elementwise.binary(ctx, "mul", upload(x), upload(y), cube.float32,
                                     cube.float32)
        sums = reduce.reduce(ctx, "sum", product, (1,), cube.float32, cube.float32)
        np.testing.assert_allclose(download(product), x * y, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(download(sums), (x * y).sum(axis=1), rtol=1e-4, atol=1e-4)
    return ROUNDS


def _host_array_rounds(seed: int, start: threading.Barrier) -> int:
    """``binary_dense_kernel`` on NumPy arrays: each launch uploads, runs and reads back."""
    from kernels.elementwise import binary_dense_kernel

    rng = np.random.default_rng(seed)
    start.wait()
    for _ in range(ROUNDS):
        n = int(rng.integers(1, 5000))
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        out = np.full(n, np.nan, np.float32)
        binary_dense_kernel[(cube.cdiv(n, 256),)](x, 0, y, 0, out, n, OP="add", CT=cube.float32,
                                                  DT=cube.float32, XSTEP=1, YSTEP=1, BLOCK=256,
                                                  target="wgsl")
        np.testing.assert_allclose(out, x + y, rtol=1e-6, atol=1e-6)
    return ROUNDS


@pytest.mark.parametrize("rounds", [_device_array_rounds, _host_array_rounds],
                         ids=["device-arrays", "numpy-arrays"])
def test_threads_launch_and_read_at_once(rounds) -> None:
    # compile the kernels once first: this test is about the device's shared command stream
    assert rounds(0, threading.Barrier(1)) == ROUNDS
    start = threading.Barrier(THREADS)
    with ThreadPoolExecutor(THREADS) as pool:
        done = [pool.submit(rounds, seed, start) for seed in range(1, THREADS + 1)]
        assert [future.result(timeout=600) for future in done] == [ROUNDS] * THREADS
