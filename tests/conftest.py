"""Fixtures for the one test suite: every test runs on every target present.

- ``target``: one of ``cubepy.available_targets()``; tests pass it as ``target=target`` at launch.
- ``rng``: a NumPy generator seeded from the test's id, so each test sees its own fixed data.
- ``@pytest.mark.gpu``: skipped when ``cubepy.cuda_available()`` is False.
"""

from __future__ import annotations

import os
import sys
import zlib

import numpy as np
import pytest

# Tests import the helpers as `import util`, whatever pytest's import mode is.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cubepy as cube  # noqa: E402


def _host_array_targets() -> list[str]:
    """Targets that accept the NumPy arrays these tests pass. On a real CUDA GPU the triton
    target refuses host arrays (by design); there tests/conformance/test_gpu.py runs the same
    kernels on torch arrays, and CUBEPY_TRITON_INTERPRET=1 brings the NumPy runs back."""
    names = list(cube.available_targets())
    if "triton" in names:
        from cubepy.backends.triton.loader import should_interpret

        if not should_interpret():
            names.remove("triton")
    return names


TARGETS = _host_array_targets()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped when none is present)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None and not cube.cuda_available():
        pytest.skip("needs a CUDA GPU: cubepy.cuda_available() is False on this machine")


@pytest.fixture(params=TARGETS, ids=TARGETS)
def target(request: pytest.FixtureRequest) -> str:
    """A launch target present on this machine: "cpu", "cpu:debug", "triton" or "wgsl"."""
    return request.param


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's id: fresh data per test, the same on every run."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
