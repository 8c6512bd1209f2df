"""The tuning results shipped in ``autotune_cache/`` still belong to the code: an edit to a
tuned function (or to what it calls) or to its config list orphans them, and a fresh process
on the device they came from would tune again. This catches that before it ships."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

SHIPPED = Path(__file__).resolve().parents[2] / "autotune_cache"
FILES = sorted(SHIPPED.glob("*.json"))


def _tuner(name: str):
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("path", FILES, ids=[p.name.split("--")[0] for p in FILES])
def test_shipped_entries_match_the_code(path):
    doc = json.loads(path.read_text())
    tuner = _tuner(doc["kernel"])
    assert doc["entries"], f"{path.name} holds no entries"
    for key_id, entry in doc["entries"].items():
        assert entry["fingerprint"] == tuner.fingerprint, (
            f"{path.name}: entry {key_id} was tuned for other code; re-tune on "
            f"{doc['device']} and export it (bench/h200_autotune.py)")
        assert entry["configs_checksum"] == tuner.checksum, (
            f"{path.name}: entry {key_id} was tuned over another config list")


def test_there_are_shipped_results():
    assert {json.loads(p.read_text())["kernel"] for p in FILES} >= {
        "examples.matmul.matmul_tuned", "kernels.matmul.tuned_matmul"}
