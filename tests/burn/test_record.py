"""burn.record: modules saved to safetensors files and loaded back on every backend, files
exchanged with the ``safetensors`` library both ways, and damaged files refused clearly."""

from __future__ import annotations

import json
import struct

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy

import burn
from burn import nn
from burn.record import load_file, load_metadata, save_file


def _model(backend, dtype="float32"):
    return nn.Sequential(nn.Linear(3, 4, dtype=dtype, backend=backend), nn.GELU(),
                         nn.LayerNorm(4, dtype=dtype, backend=backend))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_a_module_round_trips(backend, tmp_path, dtype):
    if dtype not in backend.dtypes:
        pytest.skip("dtype refusals are checked in test_pointwise.py::test_dtype_matrix")
    model = _model(backend, dtype).map_parameters(lambda name, p: p + 0.25)
    path = tmp_path / "model.safetensors"
    burn.record.save(model, path, {"epoch": "3"})
    restored = burn.record.load(_model(backend, dtype), path)
    for (name, a), (other, b) in zip(model.named_parameters(), restored.named_parameters()):
        assert name == other and b.backend == backend and b.dtype == a.dtype
        assert np.array_equal(a.numpy(), b.numpy()), name
    assert load_metadata(path) == {"format": "burn", "epoch": "3"}


def test_files_exchange_with_the_safetensors_library(tmp_path, rng):
    arrays = {"f32": rng.normal(size=(2, 3)).astype(np.float32),
              "bf16": rng.normal(size=(5,)).astype(ml_dtypes.bfloat16),
              "i64": np.arange(-3, 3, dtype=np.int64).reshape(2, 3), "empty": np.zeros((0, 4)),
              "flags": np.array([True, False]), "scalar": np.array(7, np.uint8)}
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    save_file(arrays, ours, {"k": "v"})
    read_there = safetensors.numpy.load_file(str(ours))
    safetensors.numpy.save_file({k: v for k, v in arrays.items() if k != "bf16"}, str(theirs),
                                metadata={"from": "safetensors"})
    read_here = load_file(theirs)
    for name, array in arrays.items():
        assert read_there[name].dtype == array.dtype and np.array_equal(read_there[name], array)
        if name != "bf16":  # the library's NumPy API has no bfloat16
            assert read_here[name].dtype == array.dtype
            assert np.array_equal(read_here[name], array)
    assert load_metadata(theirs) == {"from": "safetensors"}


def _write(path, header: dict, data: bytes = b"") -> None:
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_damaged_files_are_refused(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\x01\x02")
    with pytest.raises(burn.BurnError, match="shorter than its 8-byte header size"):
        load_file(path)
    path.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(burn.BurnError, match="a header of 1000 bytes in a file of 10"):
        load_file(path)
    path.write_bytes(struct.pack("<Q", 3) + b"{x}")
    with pytest.raises(burn.BurnError, match="header is not JSON"):
        load_file(path)
    _write(path, {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}, b"\0" * 8)
    with pytest.raises(burn.BurnError, match=r"tensor 'w' \(F32, shape \[2, 2\]\) needs 16 bytes"):
        load_file(path)
    _write(path, {"w": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8)
    with pytest.raises(burn.BurnError, match="tensor 'w' has a malformed entry"):
        load_file(path)
    with pytest.raises(burn.BurnError, match=r"'z' has dtype complex64, which safetensors "
                                             "cannot hold"):
        save_file({"z": np.zeros(2, np.complex64)}, tmp_path / "z.safetensors")
    assert not list(tmp_path.glob(".z.safetensors*"))  # no temporary file left behind


def test_loading_into_the_wrong_module(backend, tmp_path):
    path = tmp_path / "model.safetensors"
    burn.record.save(_model(backend), path)
    with pytest.raises(burn.BurnError, match=r"layers.0.weight has shape \(4, 3\), the "
                                             r"module's parameter \(5, 3\)"):
        burn.record.load(nn.Sequential(nn.Linear(3, 5, backend=backend), nn.GELU(),
                                       nn.LayerNorm(4, backend=backend)), path)
    with pytest.raises(burn.BurnError, match=r"missing \[\], unexpected \['layers.2.bias'"):
        burn.record.load(nn.Sequential(nn.Linear(3, 4, backend=backend)), path)
    with pytest.raises(burn.BurnError, match="load: no file"):
        burn.record.load(_model(backend), tmp_path / "absent.safetensors")
