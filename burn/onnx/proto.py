r"""Reading ONNX model files: the protobuf wire format decoded by hand, with NumPy only.

``read_model`` turns a ``.onnx`` file (or its bytes) into plain frozen dataclasses: a ``Model``
holding the ``Graph`` of ``Node``s, initializers as NumPy arrays (a copy out of the file, C
order, writable) and ``ValueInfo`` shapes. Tensor data may live in external files beside the
model; those are read relative to the model's folder and never from outside it. Any fault in
the file raises ``BurnError`` naming the file and what is wrong, never a bare decoding error.
Field numbers follow ``onnx.proto``. ``Node``, ``Graph`` and ``Model`` compare by identity
(their dicts hold arrays).

Example:
    >>> from burn.onnx.proto import read_model
    >>> model = read_model(b"\x08\x09\x3a\x08\x0a\x06\x22\x04Relu")  # ir_version 9, one Relu
    >>> model.ir_version, model.graph.nodes[0].op_type
    (9, 'Relu')
    >>> model = read_model("resnet50.onnx")  # doctest: +SKIP
    >>> sorted(model.opsets.items())  # doctest: +SKIP
    [('', 17)]
"""

from __future__ import annotations

import math
import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

import numpy as np

from cubepy import bfloat16 as _bfloat16

from ..backend.base import BurnError

_MASK64 = (1 << 64) - 1
_MAX_DEPTH = 64  # subgraphs nest through attributes; a crafted file must not exhaust the stack

#: TensorProto.DataType code -> its ONNX name, for error messages
TYPE_NAMES = dict(enumerate((
    "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL",
    "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
    "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",
    "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2")))

#: TensorProto.DataType code -> NumPy dtype (BFLOAT16, 16, comes from ml_dtypes when present)
_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
           7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
           13: np.uint64}

#: data type -> the typed TensorProto field holding its values when raw_data is not used;
#: every other supported type sits in int32_data (5)
_TYPED_FIELD = {1: 4, 11: 10, 7: 7, 12: 11, 13: 11}

#: AttributeProto.type -> the field holding the value; also the order to infer a missing type
_ATTRIBUTE_FIELDS = {1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 7, 7: 8, 8: 9, 9: 10, 10: 11}
_ATTRIBUTE_NAMES = {0: "UNDEFINED", 11: "SPARSE_TENSOR", 12: "SPARSE_TENSORS",
                    13: "TYPE_PROTO", 14: "TYPE_PROTOS"}
_UNSUPPORTED_ATTRIBUTE_FIELDS = {22: 11, 23: 12, 14: 13, 15: 14}  # field -> its type


@dataclass(frozen=True)
class ValueInfo:
    """A graph input, output or intermediate: ``elem_type`` is a TensorProto.DataType code (0
    when unknown or not a tensor); each dim of ``shape`` is an int, a symbolic name or None;
    ``shape`` is None when the type gives none."""

    name: str
    elem_type: int
    shape: tuple[int | str | None, ...] | None


@dataclass(frozen=True, eq=False)
class Node:
    """One operator call: ``inputs`` keeps ``""`` where an optional input is omitted;
    ``domain`` is ``""`` for the default ONNX domain."""

    op_type: str
    domain: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: dict[str, Any]


@dataclass(frozen=True, eq=False)
class Graph:
    """Nodes in file order (ONNX requires topological order), initializers by name."""

    name: str
    nodes: tuple[Node, ...]
    initializers: dict[str, np.ndarray]
    inputs: tuple[ValueInfo, ...]
    outputs: tuple[ValueInfo, ...]
    value_info: tuple[ValueInfo, ...]


@dataclass(frozen=True, eq=False)
class Model:
    """A model file: ``opsets`` maps a domain (``""`` for ONNX's own) to its version."""

    ir_version: int
    opsets: dict[str, int]
    producer_name: str
    producer_version: str
    graph: Graph
    metadata: dict[str, str]


class _Source:
    """The file being decoded: its bytes, its name for messages, its folder (None for bytes)."""

    def __init__(self, data: bytes, label: str, folder: Path | None):
        # bytes are indexed by the varint decoder (faster than a memoryview), sliced as one
        self.data, self.buf, self.label, self.folder = data, memoryview(data), label, folder

    def error(self, what: str) -> BurnError:
        return BurnError(f"burn.onnx: {self.label}: {what}")

    def malformed(self, what: str) -> BurnError:
        return BurnError(f"burn.onnx: {self.label} is not an ONNX model: {what}")


def _varint(src: _Source, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` (cut to 64 bits, as protobuf does), the position after."""
    buf, start, result, shift = src.data, pos, 0, 0
    if pos < end and buf[pos] < 0x80:  # most keys, lengths and enums fit one byte
        return buf[pos], pos + 1
    while True:
        if pos >= end:
            raise src.malformed(f"a varint runs past the end at byte {start}")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise src.malformed(f"a varint is longer than 10 bytes at byte {start}")


def _signed(value: int) -> int:
    """int32/int64 fields are sent as two's complement 64-bit varints."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _varint_array(src: _Source, start: int, end: int) -> np.ndarray:
    """The packed varints in ``buf[start:end]`` as uint64, decoded vectorised: each varint
    ends at a byte below 0x80 and contributes 7 bits per byte, low bits first."""
    raw = np.frombuffer(src.buf[start:end], np.uint8)
    ends = np.flatnonzero(raw < 0x80)
    if raw.size and (ends.size == 0 or ends[-1] != raw.size - 1):
        raise src.malformed(f"a varint runs past the end at byte {start}")
    if ends.size == 0:
        return np.zeros(0, np.uint64)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 10:
        raise src.malformed(f"a varint is longer than 10 bytes in the list at byte {start}")
    shifts = (np.arange(raw.size) - np.repeat(starts, lengths)) * 7
    parts = (raw & 0x7F).astype(np.uint64) << shifts.astype(np.uint64)
    return np.bitwise_or.reduceat(parts, starts)


class _Message:
    """One protobuf message's fields, scanned once: field number -> [(wire type, value)], the
    value an int for varints and a (start, end) span of the buffer otherwise. Scalars take the
    last occurrence, as protobuf does; unknown fields are simply never asked for."""

    def __init__(self, src: _Source, start: int, end: int, kind: str):
        self.src, self.kind, self.fields = src, kind, {}
        pos = start
        while pos < end:
            at = pos
            key, pos = _varint(src, pos, end)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = _varint(src, pos, end)
            elif wire in (1, 2, 5):
                size = 8 if wire == 1 else 4
                if wire == 2:
                    size, pos = _varint(src, pos, end)
                value, pos = (pos, pos + size), pos + size
                if pos > end:
                    raise src.malformed(f"a field of {kind} runs past its end at byte {at}")
            elif wire in (3, 4):
                raise src.malformed(f"a protobuf group (wire type {wire}) at byte {at}")
            else:
                raise src.malformed(f"unknown protobuf wire type {wire} at byte {at}")
            if number == 0:
                raise src.malformed(f"field number 0 at byte {at}")
            self.fields.setdefault(number, []).append((wire, value))

    def has(self, number: int) -> bool:
        return number in self.fields

    def _entries(self, number: int, *wires: int) -> list[tuple[int, Any]]:
        """The (wire type, value) entries of field ``number``, checked against ``wires``."""
        entries = self.fields.get(number, [])
        for got, _ in entries:
            if got not in wires:
                raise self.src.malformed(f"field {number} of {self.kind} has wire type {got}, "
                                         f"expected {' or '.join(map(str, wires))}")
        return entries

    def _last(self, number: int, wire: int) -> Any:
        entries = self._entries(number, wire)
        return entries[-1][1] if entries else None

    def int64(self, number: int) -> int:
        value = self._last(number, 0)
        return 0 if value is None else _signed(value)

    def float32(self, number: int) -> float:
        span = self._last(number, 5)
        return 0.0 if span is None else struct.unpack_from("<f", self.src.buf, span[0])[0]

    def blob(self, number: int) -> memoryview | None:
        span = self._last(number, 2)
        return None if span is None else self.src.buf[span[0]:span[1]]

    def string(self, number: int) -> str:
        span = self._last(number, 2)
        return "" if span is None else self._decode(span)

    def strings(self, number: int) -> list[str]:
        return [self._decode(span) for _, span in self._entries(number, 2)]

    def _decode(self, span: tuple[int, int]) -> str:
        try:
            return str(self.src.buf[span[0]:span[1]], "utf-8")
        except UnicodeDecodeError:
            raise self.src.malformed(f"a string of {self.kind} at byte {span[0]} is not "
                                     "UTF-8") from None

    def message(self, number: int, kind: str) -> _Message | None:
        span = self._last(number, 2)
        return None if span is None else _Message(self.src, *span, kind)

    def messages(self, number: int, kind: str) -> list[_Message]:
        return [_Message(self.src, *span, kind) for _, span in self._entries(number, 2)]

    def varints(self, number: int) -> np.ndarray:
        """A repeated varint field as uint64, packed or not. Long packed runs are decoded by
        NumPy; short ones (attribute ints, dims) faster in Python."""
        chunks, values = [], []
        for wire, value in self._entries(number, 0, 2):
            if wire == 0:
                values.append(value)
            elif value[1] - value[0] > 64:
                chunks += [np.array(values, np.uint64), _varint_array(self.src, *value)]
                values = []
            else:
                pos, end = value
                while pos < end:
                    item, pos = _varint(self.src, pos, end)
                    values.append(item)
        return np.concatenate([*chunks, np.array(values, np.uint64)])

    def fixed(self, number: int, dtype: str) -> np.ndarray:
        """A repeated float (``<f4``, wire type 5) or double (``<f8``, 1) field, packed or not."""
        size = np.dtype(dtype).itemsize
        chunks = []
        for _, (start, end) in self._entries(number, 5 if size == 4 else 1, 2):
            if (end - start) % size:
                raise self.src.malformed(f"packed field {number} of {self.kind} at byte {start}"
                                         f" is not a whole number of {size}-byte values")
            chunks.append(np.frombuffer(self.src.buf[start:end], dtype))
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype)


def _numpy_dtype(src: _Source, code: int, name: str) -> np.dtype:
    if code in _DTYPES:
        return np.dtype(_DTYPES[code])
    if code == 16:  # cubepy's bfloat16 has a NumPy dtype only when ml_dtypes is installed
        try:
            dtype = _bfloat16.numpy
        except TypeError:
            dtype = None
        if isinstance(dtype, np.dtype):
            return dtype
        raise src.error(f"tensor {name!r} is BFLOAT16, which needs the ml_dtypes package")
    type_name = TYPE_NAMES.get(code, f"unknown data type {code}")
    raise src.error(f"tensor {name!r} has data type {type_name}, which burn.onnx does not "
                    "support")


def _from_raw(src: _Source, raw: Any, dtype: np.dtype, count: int, name: str) -> np.ndarray:
    """Little-endian fixed-width elements (bool: one byte each) from a buffer."""
    if len(raw) != count * dtype.itemsize:
        raise src.error(f"tensor {name!r} has {len(raw)} bytes of data, its dims need "
                        f"{count} x {dtype.itemsize}")
    if dtype == np.bool_:  # any nonzero byte is true; NumPy's bool must be 0 or 1
        return np.frombuffer(raw, np.uint8) != 0
    array = np.frombuffer(raw, dtype)
    return array.byteswap() if sys.byteorder == "big" and dtype.itemsize > 1 else array


def _from_typed(src: _Source, msg: _Message, code: int, dtype: np.dtype) -> np.ndarray:
    """Elements from the typed field that holds ``code``'s values."""
    field = _TYPED_FIELD.get(code, 5)
    if field in (4, 10):
        return msg.fixed(field, "<f4" if field == 4 else "<f8").astype(dtype)
    values = msg.varints(field)
    if field == 11:
        return values.astype(dtype)
    values = values.view(np.int64)
    if code in (10, 16):  # float16/bfloat16 travel as their uint16 bit patterns
        return values.astype(np.uint16).view(dtype)
    return values != 0 if code == 9 else values.astype(dtype)


def _external_path(src: _Source, location: str, name: str) -> Path:
    """The file of an external ``location``, which must lie inside the model's folder: a model
    from elsewhere must not read arbitrary files (absolute paths, ``../``, symlinks out)."""
    if src.folder is None:
        raise src.error(f"tensor {name!r} keeps its data in the external file {location!r}; "
                        "pass the model's path to read_model instead of its bytes")
    if not location or "\0" in location:
        raise src.error(f"tensor {name!r} has a bad external data location {location!r}")
    if os.path.isabs(location) or PureWindowsPath(location).anchor:
        raise src.error(f"tensor {name!r} has the absolute external data location "
                        f"{location!r}; only paths inside the model's folder are read")
    try:
        folder = src.folder.resolve()
        path = (folder / location).resolve()
    except (OSError, RuntimeError) as err:  # RuntimeError: a symlink loop before Python 3.13
        raise src.error(f"tensor {name!r}: cannot resolve {location!r}: {err}") from None
    if not path.is_relative_to(folder):
        raise src.error(f"tensor {name!r} has the external data location {location!r}, "
                        "outside the model's folder; only paths inside it are read")
    return path


def _external(src: _Source, msg: _Message, name: str) -> bytearray:
    """The bytes an EXTERNAL tensor keeps in a file beside the model."""
    info = _string_map(msg.messages(13, "a StringStringEntryProto"))
    path = _external_path(src, info.get("location", ""), name)
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise src.error(f"tensor {name!r} has a non-integer external offset or length") from None
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            length = size - offset if length is None else length
            if offset < 0 or length < 0 or offset + length > size:
                raise src.error(f"tensor {name!r} needs bytes {offset}..{offset + length} of "
                                f"{path}, which has only {size}")
            data = bytearray(length)
            file.seek(offset)
            if file.readinto(data) != length:
                raise src.error(f"tensor {name!r}: {path} ended early")
    except OSError as err:
        raise src.error(f"tensor {name!r}: cannot read external data {path}: "
                        f"{err.strerror or err}") from None
    return data


def _tensor(msg: _Message) -> np.ndarray:
    """A TensorProto as a C-order, writable array of its dtype and dims."""
    src, name = msg.src, msg.string(8)
    if msg.has(3):
        raise src.error(f"tensor {name!r} is split into segments, which burn.onnx does not "
                        "support")
    dims = [int(d) for d in msg.varints(1).view(np.int64)]
    if any(d < 0 for d in dims):
        raise src.error(f"tensor {name!r} has negative dims {dims}")
    code, count = msg.int64(2), math.prod(dims)
    dtype = _numpy_dtype(src, code, name)
    if msg.int64(14) == 1:
        array = _from_raw(src, _external(src, msg, name), dtype, count, name)
    elif msg.has(9):
        array = _from_raw(src, msg.blob(9), dtype, count, name)
    else:
        array = _from_typed(src, msg, code, dtype)
    if array.size != count:
        raise src.error(f"tensor {name!r} has {array.size} elements, its dims {dims} need "
                        f"{count}")
    try:
        array = array.reshape(dims)
    except ValueError as err:  # more than 64 dims, or 0 elements but an impossible extent
        raise src.error(f"tensor {name!r} cannot have the dims {dims}: {err}") from None
    # frombuffer over the model's bytes is read-only: copy out once; other paths own their data
    return array.copy() if not array.flags.writeable else array


def _string_map(entries: list[_Message]) -> dict[str, str]:
    """StringStringEntryProto key/value pairs (key 1, value 2) as a dict."""
    return {entry.string(1): entry.string(2) for entry in entries}


def _value_info(msg: _Message) -> ValueInfo:
    """Only TypeProto.tensor_type is read; other kinds of value get elem_type 0, no shape."""
    type_proto = msg.message(2, "a TypeProto")
    tensor = type_proto and type_proto.message(1, "a TypeProto.Tensor")
    shape_proto = tensor and tensor.message(2, "a TensorShapeProto")
    if not shape_proto:
        return ValueInfo(msg.string(1), tensor.int64(1) if tensor else 0, None)
    dims = shape_proto.messages(1, "a TensorShapeProto.Dimension")
    shape = tuple(d.int64(1) if d.has(1) else d.string(2) if d.has(2) else None for d in dims)
    return ValueInfo(msg.string(1), tensor.int64(1), shape)


def _attribute(msg: _Message, node: str, depth: int) -> Any:
    """An AttributeProto's value as a Python value, by its ``type`` (inferred from the field
    that is set when old files leave ``type`` out)."""
    src, name = msg.src, msg.string(1)
    where = f"attribute {name!r} of node {node!r}"
    if msg.has(21):
        raise src.error(f"{where} refers to the function attribute {msg.string(21)!r} "
                        "(ref_attr_name), which burn.onnx does not support")
    kind = msg.int64(20)
    if not msg.has(20):
        present = [t for t, f in _ATTRIBUTE_FIELDS.items() if msg.has(f)]
        present += [t for f, t in _UNSUPPORTED_ATTRIBUTE_FIELDS.items() if msg.has(f)]
        if not present:
            raise src.error(f"{where} has neither a type nor a value")
        kind = present[0]
    if kind not in _ATTRIBUTE_FIELDS:
        type_name = _ATTRIBUTE_NAMES.get(kind, f"unknown type {kind}")
        raise src.error(f"{where} has type {type_name}, which burn.onnx does not support")
    field = _ATTRIBUTE_FIELDS[kind]
    if kind in (4, 5, 9, 10):  # messages; the singular kinds take the last, as protobuf merges
        if kind in (4, 9):
            values = [_tensor(t) for t in msg.messages(field, "a TensorProto")]
        else:
            values = [_graph(g, depth + 1) for g in msg.messages(field, "a GraphProto")]
        if kind in (9, 10):
            return values
        if not values:
            raise src.error(f"{where} has no value")
        return values[-1]
    scalars = {1: msg.float32, 2: msg.int64, 3: msg.string, 8: msg.strings,
               6: lambda f: msg.fixed(f, "<f4").tolist(),  # tolist gives Python floats, ints
               7: lambda f: msg.varints(f).view(np.int64).tolist()}
    return scalars[kind](field)


def _node(msg: _Message, depth: int) -> Node:
    name, op_type = msg.string(3), msg.string(4)
    label = name or op_type
    attributes = {}
    for attr in msg.messages(5, "an AttributeProto"):
        attributes[attr.string(1)] = _attribute(attr, label, depth)
    domain = msg.string(7)
    return Node(op_type, "" if domain == "ai.onnx" else domain, name, tuple(msg.strings(1)),
                tuple(msg.strings(2)), attributes)


def _graph(msg: _Message, depth: int = 0) -> Graph:
    src = msg.src
    if depth > _MAX_DEPTH:
        raise src.error(f"subgraphs nest deeper than {_MAX_DEPTH} levels")
    if msg.has(15):
        raise src.error(f"graph {msg.string(2)!r} has sparse initializers, which burn.onnx does "
                        "not support yet")
    nodes = tuple(_node(n, depth) for n in msg.messages(1, "a NodeProto"))
    initializers = {}
    for tensor in msg.messages(5, "a TensorProto"):
        initializers[tensor.string(8)] = _tensor(tensor)
    infos = [tuple(_value_info(v) for v in msg.messages(f, "a ValueInfoProto"))
             for f in (11, 12, 13)]
    return Graph(msg.string(2), nodes, initializers, *infos)


def _model(src: _Source) -> Model:
    msg = _Message(src, 0, len(src.buf), "the ModelProto")
    graph = msg.message(7, "a GraphProto")
    if graph is None:
        raise src.malformed("the file has no graph")
    opsets = {}
    for entry in msg.messages(8, "an OperatorSetIdProto"):
        domain = entry.string(1)
        opsets["" if domain == "ai.onnx" else domain] = entry.int64(2)
    metadata = _string_map(msg.messages(14, "a StringStringEntryProto"))
    return Model(msg.int64(1), opsets, msg.string(2), msg.string(3), _graph(graph), metadata)


def read_model(source: str | os.PathLike[str] | bytes) -> Model:
    """The ONNX model in the file at path ``source`` (external tensor data read relative to its
    folder), or in the bytes ``source`` (which then may not use external data)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _model(_Source(bytes(source), "<bytes>", None))
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise BurnError(f"burn.onnx: cannot read {source}: {err.strerror or err}") from None
    return _model(_Source(data, os.fspath(source), path.parent))


__all__ = ["Graph", "Model", "Node", "ValueInfo", "read_model"]
