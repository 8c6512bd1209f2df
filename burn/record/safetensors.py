"""The safetensors file format, read and written with NumPy alone.

A file is an 8-byte little-endian header length, a JSON header (padded with spaces to a
multiple of 8 bytes) mapping each tensor's name to its ``dtype`` code, ``shape`` and
``data_offsets`` (start and end in the byte buffer that follows), an optional
``__metadata__`` map of strings, then the tensors' bytes, little-endian and row-major. Files
of the ``safetensors`` library load here, and ours there (``tests/burn/test_record.py``).

Example:
    >>> save_file({"w": np.ones((2, 2), np.float32)}, "/tmp/w.safetensors")
    >>> load_file("/tmp/w.safetensors")["w"].shape
    (2, 2)
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..backend.base import BurnError

#: safetensors dtype codes and the NumPy dtypes they hold
CODES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
         "F16": "float16", "BF16": "bfloat16", "I32": "int32", "U32": "uint32",
         "F32": "float32", "F64": "float64", "I64": "int64", "U64": "uint64"}
_NAMES = {name: code for code, name in CODES.items()}
#: a header larger than this is refused before it is read (the format's reference bound)
MAX_HEADER = 100 * 1024 * 1024


def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def save_file(tensors: dict[str, np.ndarray], path: str | Path,
              metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` (name to array) to ``path`` atomically (a temporary file, renamed)."""
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    chunks, offset = [], 0
    for name, array in tensors.items():
        array = np.asarray(array)
        code = _NAMES.get(array.dtype.name)
        if code is None:
            raise BurnError(f"save_file: {name!r} has dtype {array.dtype}, which safetensors "
                            f"cannot hold; it holds {', '.join(sorted(_NAMES))}")
        data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": code, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path = Path(path)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(struct.pack("<Q", len(text)))
            out.write(text)
            for data in chunks:
                out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_file(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of the safetensors file ``path``, by name; ``BurnError`` naming the file
    and what is wrong for a file that is not one."""
    raw = Path(path).read_bytes()
    header, start = _header(raw, path)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor(raw, start, name, entry, path)
    return tensors


def load_metadata(path: str | Path) -> dict[str, str]:
    """The ``__metadata__`` map of the file ``path`` (empty when it has none)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        size = struct.unpack("<Q", raw)[0] if len(raw) == 8 else 0
        raw += f.read(min(size, MAX_HEADER))
    header, _ = _header(raw, path)
    return dict(header.get("__metadata__", {}))


def _header(raw: bytes, path: Any) -> tuple[dict[str, Any], int]:
    if len(raw) < 8:
        raise BurnError(f"{path}: not a safetensors file (shorter than its 8-byte header size)")
    size = struct.unpack("<Q", raw[:8])[0]
    if size > MAX_HEADER or 8 + size > len(raw):
        raise BurnError(f"{path}: not a safetensors file (a header of {size} bytes in a file "
                        f"of {len(raw)})")
    try:
        header = json.loads(raw[8:8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BurnError(f"{path}: the safetensors header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise BurnError(f"{path}: the safetensors header is not a JSON object")
    return header, 8 + size


def _tensor(raw: bytes, start: int, name: str, entry: Any, path: Any) -> np.ndarray:
    try:
        dtype = _numpy_dtype(CODES[entry["dtype"]])
        shape = tuple(int(n) for n in entry["shape"])
        begin, end = (int(v) for v in entry["data_offsets"])
    except (KeyError, TypeError, ValueError):
        raise BurnError(f"{path}: tensor {name!r} has a malformed entry {entry!r} (needs a "
                        f"dtype of {', '.join(CODES)}, a shape and data_offsets)") from None
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if not 0 <= begin <= end or end - begin != expected or start + end > len(raw):
        raise BurnError(f"{path}: tensor {name!r} ({entry['dtype']}, shape {list(shape)}) "
                        f"needs {expected} bytes, its offsets say [{begin}, {end}) of "
                        f"{len(raw) - start}")
    data = np.frombuffer(raw, dtype=dtype.newbyteorder("<"), count=expected // dtype.itemsize,
                         offset=start + begin)
    return data.astype(dtype).reshape(shape)
