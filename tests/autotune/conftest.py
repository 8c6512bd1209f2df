"""Fixtures for the autotune tests: an isolated cache folder and no shipped results.

Every test runs with ``CUBEPY_CACHE_DIR`` set to a temporary folder shared by the session (so
Numba's compiled kernels are reused from test to test) whose ``autotune/`` part is emptied
before each test, and with the shipped ``autotune_cache/`` replaced by an empty folder.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cubepy import config  # noqa: E402
from cubepy.autotune import cache  # noqa: E402


@pytest.fixture(scope="session")
def session_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cubepy_cache")


@pytest.fixture(autouse=True)
def cache_dir(
    session_cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """The CUBEPY_CACHE_DIR of this test; ``cache_dir / "autotune"`` starts empty."""
    autotune_dir = session_cache_dir / "autotune"
    if autotune_dir.is_file():  # a test put a file in the folder's place
        autotune_dir.unlink()
    shutil.rmtree(autotune_dir, ignore_errors=True)
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(session_cache_dir))
    monkeypatch.delenv("CUBEPY_AUTOTUNE", raising=False)
    monkeypatch.delenv("CUBEPY_DEBUG", raising=False)
    monkeypatch.delenv("CUBEPY_TARGET", raising=False)
    monkeypatch.setattr(cache, "SHIPPED_DIR", tmp_path / "shipped")
    monkeypatch.setattr(cache, "_warned", set())
    config.reload()
    yield session_cache_dir
    monkeypatch.undo()
    config.reload()
