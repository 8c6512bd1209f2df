"""Launches past Triton's dispatch (``cubepy.backends.triton.direct``).

Its key must tell apart every two launches Triton would compile apart: checked here against
Triton's own specialization of integers and arrays, and on a GPU by launching one kernel with
integers and addresses of every class, comparing each result with NumPy.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

triton = pytest.importorskip("triton")

from cubepy.backends.triton import loader  # noqa: E402
from cubepy.backends.triton.adapter import NumpyTensor  # noqa: E402
from cubepy.backends.triton.direct import DirectLauncher  # noqa: E402

INTS = [0, 1, 2, 15, 16, 17, 32, -1, -16, 2**31 - 16, 2**31 - 1, 2**31, 2**31 + 1, -(2**31),
        -(2**31) - 1, 2**40, 2**40 + 3, 2**63 - 16, 2**63, 2**63 + 5, 2**64 - 16]


def _triton_specialization(value):
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    return native_specialize_impl(BaseBackend, value, False, True, True)


@pytest.mark.parametrize("a, b", list(itertools.combinations(INTS, 2)))
def test_integers_triton_compiles_apart_have_different_keys(a, b):
    if _triton_specialization(a) != _triton_specialization(b):
        assert DirectLauncher._specialization([a]) != DirectLauncher._specialization([b])


def test_array_alignment_is_in_the_key():
    data = np.zeros(64, np.float32)
    aligned, offset = NumpyTensor(data), NumpyTensor(data[1:])
    assert _triton_specialization(aligned) != _triton_specialization(offset)
    assert DirectLauncher._specialization([aligned]) != DirectLauncher._specialization([offset])
    # floats and bools are not specialized by value, by Triton or here
    assert DirectLauncher._specialization([1.0, True]) == DirectLauncher._specialization(
        [2.5, False])


class _Recorder:
    """Stands in for Triton's JIT function, compiled kernel and driver: records who launched
    what, so the launcher's routing can be checked without a GPU."""

    def __init__(self, launcher_fails: bool = False):
        self.calls: list[tuple] = []
        self.launcher_fails = launcher_fails
        self.function, self.packed_metadata = "function", "metadata"

    def run(self, *args, grid=None, warmup=None, **options):
        if grid is not None:  # the JIT function's run: launches, returns the kernel
            self.calls.append(("jit", grid, args, options))
            return self
        if self.launcher_fails:  # another Triton's launcher refusing our arguments
            raise TypeError("launcher takes other arguments")
        self.calls.append(("direct", args[:4], args[9:]))
        return None

    def launch_metadata(self, grid, stream, *args):
        return None

    def get_current_device(self):
        return 0

    def get_current_stream(self, device):
        return 1234


def _launcher(monkeypatch, recorder):
    from triton.runtime import driver

    monkeypatch.setattr(driver, "_active", recorder, raising=False)
    return DirectLauncher(recorder, {"num_warps": 4})


def test_first_launch_of_each_class_goes_through_triton_then_direct(monkeypatch):
    recorder = _Recorder()
    launch = _launcher(monkeypatch, recorder)
    data = np.zeros(64, np.float32)
    aligned, offset = NumpyTensor(data), NumpyTensor(data[1:])
    launch((2, 1, 1), [aligned, 32, 0.5])
    launch((2, 1, 1), [aligned, 48, 0.25])  # the same class: straight to the launcher
    launch((3, 1, 1), [offset, 48, 0.25])  # another address class: through Triton
    launch((3, 1, 1), [offset, 1, 0.25])  # n == 1: another class again
    kinds = [call[0] for call in recorder.calls]
    assert kinds == ["jit", "direct", "jit", "jit"]
    assert recorder.calls[0][3] == {"num_warps": 4}
    grid_and_stream, args = recorder.calls[1][1:]
    assert grid_and_stream[:3] == (2, 1, 1) and args[1:] == (48, 0.25)
    assert isinstance(grid_and_stream[3], int)  # the current stream (ours, or the GPU's)
    assert len(launch.kernels) == 3


def test_a_launcher_that_refuses_the_call_falls_back_once_per_launch(monkeypatch):
    recorder = _Recorder(launcher_fails=True)
    launch = _launcher(monkeypatch, recorder)
    data = NumpyTensor(np.zeros(64, np.float32))
    for n in (32, 48, 64):
        launch((1, 1, 1), [data, n])
    # the first goes through Triton; the second tries the launcher, which refuses before
    # running anything, so Triton launches it (once); the third no longer tries
    assert [call[0] for call in recorder.calls] == ["jit", "jit", "jit"]
    assert not launch.direct


@pytest.mark.gpu
@pytest.mark.skipif(not loader.gpu_driver_available(), reason="needs a CUDA GPU driver")
def test_gpu_direct_launches_match_numpy_for_every_class():
    import torch

    import cubepy as cube

    @cube.kernel
    def axpy(x, y, out, n, alpha, BLOCK: cube.Comptime[int]):
        offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
        m = offs < n
        cube.store(out + offs, alpha * cube.load(x + offs, m) + cube.load(y + offs, m), m)

    base = torch.arange(4096, device="cuda", dtype=torch.float32)
    ones = torch.ones(4096, device="cuda", dtype=torch.float32)
    for _round in range(3):  # the first launch of each class goes through Triton, then direct
        for offset, n in itertools.product((0, 1, 4), (1, 16, 17, 1000)):
            x = base[offset:offset + n]
            out = torch.full((4096,), -7.0, device="cuda")[offset:offset + n]
            axpy[(cube.cdiv(n, 256),)](x, ones[:n], out, n, 2.0, BLOCK=256)
            torch.cuda.synchronize()
            expected = 2.0 * np.arange(offset, offset + n, dtype=np.float32) + 1.0
            np.testing.assert_array_equal(out.cpu().numpy(), expected)
    compiled, _stored_to = next(iter(axpy._compiled.values()))
    plain, _ = compiled._direct_launchers
    assert plain.direct and len(plain.kernels) >= 4  # aligned or not, n = 1, 16 or neither
