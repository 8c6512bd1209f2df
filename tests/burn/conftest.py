"""Fixtures of the burn op suite: every test runs on every backend present, against NumPy.

- ``backend``: ``Cpu``, ``Cuda`` (Triton's interpreter when no GPU is present) and ``Wgpu``,
  whichever exist here. On a machine with a CUDA GPU, ``Cuda`` runs on it.
- ``ref``: the ``NumPy`` reference backend.
- ``rng``: a generator seeded from the test's id.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import burn
import cubepy as cube
from cubepy import config


def _backend_names() -> list[str]:
    names = ["cpu"]
    targets = cube.available_targets()
    if "triton" in targets:
        names.append("cuda")
    if "wgsl" in targets:
        names.append("wgpu")
    return names


BACKENDS = _backend_names()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fusion", action="store_true",
                     help="run burn's op suite with every backend wrapped in burn.Fusion")


@pytest.fixture(params=BACKENDS, ids=BACKENDS)
def backend(request: pytest.FixtureRequest) -> burn.Backend:
    """A cubepy backend present on this machine (under ``Fusion`` with ``--fusion``)."""
    plain = burn.backend_for(request.param)
    return burn.Fusion(plain) if request.config.getoption("--fusion", False) else plain


@pytest.fixture
def ref() -> burn.Backend:
    return burn.backend_for("numpy")


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def aot(monkeypatch: pytest.MonkeyPatch):
    """Every triton kernel compiled in the test also compiled for sm_90 and gfx942 (the GPU
    code checked by Triton's whole compiler on a machine without a GPU)."""
    monkeypatch.setenv("CUBEPY_TRITON_AOT", "cuda:90,hip:gfx942")
    config.reload()
    yield
    monkeypatch.undo()
    config.reload()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a machine with a CUDA GPU the ``cuda`` backend runs there: its tests carry the
    ``gpu`` marker, so ``pytest -m gpu tests/burn`` is the op suite on the GPU."""
    if not cube.cuda_available():
        return
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "cuda":
            item.add_marker(pytest.mark.gpu)
