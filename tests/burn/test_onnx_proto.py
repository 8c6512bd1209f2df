"""burn.onnx.proto reads what the ``onnx`` package writes, field by field as ``onnx.load`` parses
it, and turns every broken file into a ``BurnError``. ``onnx`` only builds the test models."""

from __future__ import annotations

import struct

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from burn.backend.base import BurnError
from burn.onnx.proto import Graph, ValueInfo, read_model

# ---------------------------------------------------------------- comparing with onnx's parse


def _assert_same_array(ours, theirs: np.ndarray) -> None:
    assert isinstance(ours, np.ndarray)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.flags.c_contiguous and ours.flags.writeable
    if ours.dtype == np.bool_:
        np.testing.assert_array_equal(ours, theirs)
    else:  # bit for bit, so NaN payloads and -0.0 count
        bits = np.dtype(f"u{ours.dtype.itemsize}")
        np.testing.assert_array_equal(ours.view(bits), theirs.view(bits))


def _expected_info(proto: onnx.ValueInfoProto) -> ValueInfo:
    if not proto.type.HasField("tensor_type"):
        return ValueInfo(proto.name, 0, None)
    tensor = proto.type.tensor_type
    shape = None
    if tensor.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else
                      d.dim_param if d.HasField("dim_param") else None for d in tensor.shape.dim)
    return ValueInfo(proto.name, tensor.elem_type, shape)


def _assert_same_value(ours, theirs) -> None:
    if isinstance(theirs, onnx.GraphProto):
        _assert_same_graph(ours, theirs)
    elif isinstance(theirs, onnx.TensorProto):
        _assert_same_array(ours, numpy_helper.to_array(theirs))
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same_value(a, b)
    elif isinstance(theirs, bytes):
        assert ours == theirs.decode()
    else:
        assert type(ours) is type(theirs) and ours == theirs


def _assert_same_graph(ours: Graph, theirs: onnx.GraphProto) -> None:
    assert isinstance(ours, Graph) and ours.name == theirs.name
    assert len(ours.nodes) == len(theirs.node)
    for node, proto in zip(ours.nodes, theirs.node):
        assert node.op_type == proto.op_type and node.name == proto.name
        assert node.domain == ("" if proto.domain == "ai.onnx" else proto.domain)
        assert node.inputs == tuple(proto.input) and node.outputs == tuple(proto.output)
        assert list(node.attributes) == [a.name for a in proto.attribute]
        for attr in proto.attribute:
            _assert_same_value(node.attributes[attr.name], helper.get_attribute_value(attr))
    assert list(ours.initializers) == [t.name for t in theirs.initializer]
    for tensor in theirs.initializer:
        _assert_same_array(ours.initializers[tensor.name], numpy_helper.to_array(tensor))
    assert ours.inputs == tuple(_expected_info(v) for v in theirs.input)
    assert ours.outputs == tuple(_expected_info(v) for v in theirs.output)
    assert ours.value_info == tuple(_expected_info(v) for v in theirs.value_info)


def _assert_same_model(path_or_bytes, proto: onnx.ModelProto) -> None:
    model = read_model(path_or_bytes)
    assert model.ir_version == proto.ir_version
    assert model.producer_name == proto.producer_name
    assert model.producer_version == proto.producer_version
    assert model.opsets == {("" if o.domain == "ai.onnx" else o.domain): o.version
                            for o in proto.opset_import}
    assert model.metadata == {p.key: p.value for p in proto.metadata_props}
    _assert_same_graph(model.graph, proto.graph)


# ---------------------------------------------------------------- test models


def _info(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _subgraph(name: str, value: float) -> onnx.GraphProto:
    const = numpy_helper.from_array(np.full((2,), value, np.float32), f"{name}_c")
    node = helper.make_node("Add", ["x", f"{name}_c"], [f"{name}_y"], name=f"{name}_add")
    return helper.make_graph([node], name, [], [_info(f"{name}_y", [2])], [const])


def _rich_model() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((3, 4)).astype(np.float32)
    attrs = dict(
        alpha=0.1, count=7, negative=-3, big=2**40, text="héllo", empty_text="",
        tensor=numpy_helper.from_array(np.arange(6, dtype=np.int64).reshape(2, 3)),
        body=_subgraph("body", 1.5), floats=[1.0, -2.5, 1e-30], ints=[1, -1, 2**62, -(2**62)],
        strings=["a", "", "ü"], tensors=[numpy_helper.from_array(weight),
                                          numpy_helper.from_array(np.array(3.0))],
        branches=[_subgraph("then", 1.0), _subgraph("else", -1.0)])
    nodes = [
        helper.make_node("Custom", ["x", "", "w"], ["h", ""], name="all", domain="my.domain",
                         **attrs),
        helper.make_node("Relu", ["h"], ["r"], name="relu", domain="ai.onnx"),
        helper.make_node("MatMul", ["r", "w"], ["y"]),  # no name
    ]
    inits = [numpy_helper.from_array(weight, "w"),
             helper.make_tensor("typed", TensorProto.INT32, [2], [-7, 2**31 - 1]),
             numpy_helper.from_array(np.array(2.5, np.float64), "scalar"),
             numpy_helper.from_array(np.zeros((0, 3), np.float32), "empty")]
    graph = helper.make_graph(
        nodes, "main", [_info("x", [1, "batch", None]), _info("mask", None, TensorProto.BOOL)],
        [_info("y", ["n", 4])], inits,
        value_info=[_info("h", []), _info("r", [3, 4]),
                    helper.make_value_info("seq", helper.make_sequence_type_proto(
                        helper.make_tensor_type_proto(TensorProto.FLOAT, [1])))])
    model = helper.make_model(graph, producer_name="burn-test", producer_version="1.2",
                              opset_imports=[helper.make_opsetid("ai.onnx", 17),
                                             helper.make_opsetid("my.domain", 3)])
    helper.set_model_props(model, {"author": "me", "note": "ünïcode"})
    return model


# ---------------------------------------------------------------- reading what onnx writes


def test_rich_model_from_path_and_bytes(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save_model(_rich_model(), path)
    loaded = onnx.load(path)
    _assert_same_model(path, loaded)
    _assert_same_model(str(path), loaded)
    _assert_same_model(path.read_bytes(), loaded)
    model = read_model(path)
    assert model.opsets == {"": 17, "my.domain": 3}
    node = model.graph.nodes[0]
    assert node.inputs == ("x", "", "w") and node.outputs == ("h", "")
    assert model.graph.nodes[1].domain == ""
    assert model.graph.inputs[0].shape == (1, "batch", None)
    assert model.graph.inputs[1] == ValueInfo("mask", TensorProto.BOOL, None)
    assert model.graph.value_info[0].shape == ()
    assert model.graph.value_info[2] == ValueInfo("seq", 0, None)
    assert model.graph.initializers["scalar"].shape == ()
    assert model.graph.initializers["empty"].shape == (0, 3)
    assert node.attributes["negative"] == -3 and node.attributes["text"] == "héllo"
    body = node.attributes["body"]
    assert body.nodes[0].op_type == "Add" and list(body.initializers) == ["body_c"]


def test_arrays_are_private_copies(tmp_path):
    data = _rich_model().SerializeToString()
    first, second = read_model(data), read_model(data)
    first.graph.initializers["w"][0, 0] = 99.0
    assert second.graph.initializers["w"][0, 0] != 99.0


def test_attributes_without_type_are_inferred():
    model = _rich_model()
    stripped = onnx.ModelProto.FromString(model.SerializeToString())
    for attr in stripped.graph.node[0].attribute:
        attr.ClearField("type")  # as files from before AttributeProto.type existed
    _assert_same_model(stripped.SerializeToString(), model)


DTYPES = [
    (TensorProto.FLOAT, np.float32), (TensorProto.UINT8, np.uint8), (TensorProto.INT8, np.int8),
    (TensorProto.UINT16, np.uint16), (TensorProto.INT16, np.int16),
    (TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64), (TensorProto.BOOL, np.bool_),
    (TensorProto.FLOAT16, np.float16), (TensorProto.DOUBLE, np.float64),
    (TensorProto.UINT32, np.uint32), (TensorProto.UINT64, np.uint64),
    (TensorProto.BFLOAT16, ml_dtypes.bfloat16)]


def _values(dtype, shape) -> np.ndarray:
    """Extremes of the type (NaN, infinities, -0.0 for floats) and random fill."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    rng = np.random.default_rng(count)
    if dtype == np.bool_:
        return (rng.integers(0, 2, count) == 1).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edges = np.array([info.min, info.max, 0, 1], dtype)
        fill = rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
    else:
        edges = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32).astype(dtype)
        fill = rng.standard_normal(count).astype(dtype)
    fill[: min(count, 4)] = edges[: min(count, 4)]
    return fill.reshape(shape)


@pytest.mark.parametrize("raw", [True, False], ids=["raw_data", "typed"])
@pytest.mark.parametrize("code, dtype", DTYPES, ids=[TensorProto.DataType.Name(c) for c, _ in
                                                     DTYPES])
@pytest.mark.parametrize("shape", [(2, 3, 5), (), (0,), (4, 0)])
def test_initializers_of_every_dtype(code, dtype, raw, shape):
    values = _values(dtype, shape)
    if raw:
        tensor = numpy_helper.from_array(values, "t")
        assert tensor.HasField("raw_data") and tensor.data_type == code
    else:
        tensor = helper.make_tensor("t", code, shape, values.flatten(), raw=False)
        assert not tensor.HasField("raw_data")
    graph = helper.make_graph([], "g", [], [], [tensor])
    proto = onnx.load_from_string(helper.make_model(graph).SerializeToString())
    _assert_same_model(proto.SerializeToString(), proto)
    if not raw and values.size:  # typed fields must really have been used
        assert any(len(getattr(proto.graph.initializer[0], f)) for f in (
            "float_data", "int32_data", "int64_data", "double_data", "uint64_data"))


# ---------------------------------------------------------------- hand-made wire encodings


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _bytes(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _ints(field: int, values) -> bytes:  # unpacked: one key per element
    return b"".join(_key(field, 0) + _varint(v) for v in values)


def _packed(field: int, values) -> bytes:
    return _bytes(field, b"".join(_varint(v) for v in values))


def _tensor(name: str, code: int, dims, *fields: bytes) -> bytes:
    return _ints(1, dims) + _ints(2, [code]) + _bytes(8, name.encode()) + b"".join(fields)


def test_unpacked_repeated_fields():
    """Protobuf writers may send repeated scalars one by one, or mix both encodings."""
    floats = b"".join(_key(4, 5) + struct.pack("<f", v) for v in (1.5, -2.0, np.inf))
    doubles = _key(10, 1) + struct.pack("<d", 0.1) + _bytes(10, struct.pack("<2d", 2.0, -3.0))
    tensors = [
        _tensor("f", TensorProto.FLOAT, [3], floats),
        _tensor("d", TensorProto.DOUBLE, [3], doubles),
        _tensor("i64", TensorProto.INT64, [2, 2], _ints(7, [-1, 2**63 - 1]), _packed(7, [0, -9])),
        _tensor("i8", TensorProto.INT8, [3], _ints(5, [-128, 127, -5])),
        _tensor("u64", TensorProto.UINT64, [2], _ints(11, [2**64 - 1, 3])),
        _tensor("h", TensorProto.FLOAT16, [2], _ints(5, [0x3C00, 0xFC00])),
    ]
    attrs = [
        _bytes(1, b"ints") + _ints(20, [7]) + _ints(8, [5, -6]) + _packed(8, [7]),
        _bytes(1, b"floats") + _ints(20, [6]) + _key(7, 5) + struct.pack("<f", 0.25),
    ]
    node = _bytes(1, b"x") + _bytes(2, b"y") + _bytes(4, b"Op") + b"".join(
        _bytes(5, a) for a in attrs)
    graph = _bytes(1, node) + _bytes(2, b"g") + b"".join(_bytes(5, t) for t in tensors)
    data = _ints(1, [8]) + _bytes(7, graph) + _bytes(8, _bytes(1, b"") + _ints(2, [13]))
    proto = onnx.load_from_string(data)
    _assert_same_model(data, proto)
    model = read_model(data)
    assert model.graph.nodes[0].attributes == {"ints": [5, -6, 7], "floats": [0.25]}
    assert model.graph.initializers["i64"].tolist() == [[-1, 2**63 - 1], [0, -9]]


def test_unknown_fields_are_skipped():
    unknown = _ints(99, [5]) + _bytes(98, b"xyz") + _key(97, 1) + bytes(8) + _key(96, 5) + bytes(4)
    data = unknown + _bytes(7, unknown + _bytes(2, b"g"))
    assert read_model(data).graph.name == "g"


# ---------------------------------------------------------------- external data


@pytest.mark.parametrize("one_file", [True, False])
def test_external_data(tmp_path, one_file):
    proto = _rich_model()
    path = tmp_path / "model.onnx"
    onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=one_file,
                    location="weights.bin", size_threshold=0)
    files = {p.name for p in tmp_path.iterdir()}
    assert files == {"model.onnx", "weights.bin"} if one_file else {"w", "scalar"} < files
    stored = onnx.load(path, load_external_data=False).graph.initializer[0]
    assert stored.data_location == TensorProto.EXTERNAL
    loaded = onnx.load(path)
    _assert_same_model(path, loaded)
    with pytest.raises(BurnError, match="pass the model's path"):
        read_model(path.read_bytes())


def _external_model(tmp_path, location: str, data: bytes, length: int | None = None):
    """A model whose initializer ``w`` (float32 [2, 2]) sits at ``location``."""
    tensor = _tensor("w", TensorProto.FLOAT, [2, 2], _ints(14, [1]), *(
        _bytes(13, _bytes(1, key.encode()) + _bytes(2, value.encode()))
        for key, value in [("location", location), ("offset", "4"),
                           ("length", str(16 if length is None else length))]))
    (tmp_path / "weights.bin").write_bytes(data)
    path = tmp_path / "model" / "model.onnx"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(_bytes(7, _bytes(5, tensor)))
    return path


def test_external_data_offset(tmp_path):
    values = np.arange(4, dtype="<f4")
    path = _external_model(tmp_path, "data/w.bin", b"")
    (path.parent / "data").mkdir()
    (path.parent / "data" / "w.bin").write_bytes(b"pad!" + values.tobytes() + b"tail")
    np.testing.assert_array_equal(read_model(path).graph.initializers["w"], values.reshape(2, 2))


def test_external_data_outside_the_folder_is_refused(tmp_path):
    payload = bytes(4) + np.ones(4, "<f4").tobytes()
    path = _external_model(tmp_path, "../weights.bin", payload)
    with pytest.raises(BurnError, match="'w'.*outside the model's folder"):
        read_model(path)
    path = _external_model(tmp_path, str(tmp_path / "weights.bin"), payload)
    with pytest.raises(BurnError, match="'w'.*absolute"):
        read_model(path)
    (path.parent / "link.bin").symlink_to(tmp_path / "weights.bin")  # inside, pointing out
    path = _external_model(tmp_path, "link.bin", payload)
    with pytest.raises(BurnError, match="'w'.*outside the model's folder"):
        read_model(path)


def test_external_data_missing_or_short(tmp_path):
    path = _external_model(tmp_path, "gone.bin", b"")
    with pytest.raises(BurnError, match=r"'w'.*gone\.bin"):
        read_model(path)
    (path.parent / "short.bin").write_bytes(bytes(10))
    path = _external_model(tmp_path, "short.bin", b"")
    with pytest.raises(BurnError, match=r"'w'.*short\.bin.*only 10"):
        read_model(path)


# ---------------------------------------------------------------- errors


def test_truncated_files_raise_burn_error(tmp_path):
    data = _rich_model().SerializeToString()
    parsed = 0
    for cut in range(len(data)):
        try:
            read_model(data[:cut])
            parsed += 1  # a cut between the 4 top-level fields after the graph is valid
        except BurnError as err:
            assert str(err).startswith("burn.onnx: <bytes>")
    assert parsed <= 4
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(BurnError, match=r"^burn\.onnx: .*cut\.onnx is not an ONNX model: .*byte"):
        read_model(path)


def test_garbage_and_mutated_files_raise_burn_error():
    rng = np.random.default_rng(1234)
    data = np.frombuffer(_rich_model().SerializeToString(), np.uint8)
    for trial in range(400):
        if trial % 2:
            blob = rng.integers(0, 256, rng.integers(1, 300), dtype=np.uint8).tobytes()
        else:  # a real model with a few bytes changed reaches the deeper decoders
            mutated = data.copy()
            mutated[rng.integers(0, data.size, 3)] = rng.integers(0, 256, 3)
            blob = mutated.tobytes()
        try:
            read_model(blob)
        except BurnError as err:
            assert str(err).startswith("burn.onnx: <bytes>")


@pytest.mark.parametrize("code", [TensorProto.STRING, TensorProto.COMPLEX64,
                                  TensorProto.FLOAT8E4M3FN, TensorProto.INT4])
def test_unsupported_dtype(code):
    name = TensorProto.DataType.Name(code)
    graph = _bytes(5, _tensor("s", code, [1], _bytes(6, b"abc") if code == 8 else _bytes(9, b"x")))
    with pytest.raises(BurnError, match=f"'s' has data type {name},"):
        read_model(_bytes(7, graph))


@pytest.mark.parametrize("raw", [True, False])
def test_element_count_mismatch(raw):
    tensor = helper.make_tensor("m", TensorProto.FLOAT, [5], np.arange(5, dtype=np.float32),
                                raw=raw)
    tensor.dims[:] = [2, 3]
    model = helper.make_model(helper.make_graph([], "g", [], [], [tensor]))
    with pytest.raises(BurnError, match="'m' has .*need"):
        read_model(model.SerializeToString())


@pytest.mark.parametrize("data, message", [
    (b"", "has no graph"),
    (_ints(1, [9]), "has no graph"),
    (_key(1, 3), "group"),
    (_key(1, 6), "wire type 6"),
    (_key(1, 0) + b"\xff" * 11, "longer than 10 bytes"),
    (_bytes(7, b"") + b"\x3a\x05ab", "runs past"),
    (_key(7, 0) + b"\x01", "field 7 .* wire type 0, expected 2"),
    (_bytes(7, _bytes(2, b"\xff\xfe")), "not UTF-8"),
    (_bytes(7, _bytes(5, _tensor("n", 1, [2**63 + 1]))), "negative dims"),
    (_bytes(7, _bytes(5, _tensor("n", 1, [0, 2**62]))), "cannot have the dims"),
    (_bytes(7, _bytes(5, _tensor("n", 1, [0] * 65))), "cannot have the dims"),
])
def test_malformed_files(data, message):
    with pytest.raises(BurnError, match=message):
        read_model(data)


def test_unsupported_structures():
    attr = helper.make_attribute("a", 1)
    attr.ref_attr_name = "outer"
    node = helper.make_node("Relu", ["x"], ["y"], name="n")
    node.attribute.append(attr)
    model = helper.make_model(helper.make_graph([node], "g", [], []))
    with pytest.raises(BurnError, match="'outer'.*ref_attr_name"):
        read_model(model.SerializeToString())
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(1, np.float32), "v"),
                                       numpy_helper.from_array(np.zeros(1, np.int64), "i"), [3])
    graph = helper.make_graph([], "g", [], [], sparse_initializer=[sparse])
    with pytest.raises(BurnError, match="'g' has sparse initializers"):
        read_model(helper.make_model(graph).SerializeToString())


def test_bfloat16_without_ml_dtypes(monkeypatch):
    class NoHostDtype:
        @property
        def numpy(self):
            raise TypeError("bfloat16 host arrays need the ml_dtypes package")

    monkeypatch.setattr("burn.onnx.proto._bfloat16", NoHostDtype())
    tensor = numpy_helper.from_array(np.ones(2, ml_dtypes.bfloat16), "b")
    model = helper.make_model(helper.make_graph([], "g", [], [], [tensor]))
    with pytest.raises(BurnError, match="'b' is BFLOAT16, which needs the ml_dtypes"):
        read_model(model.SerializeToString())


def test_missing_model_file(tmp_path):
    with pytest.raises(BurnError, match=r"nothing\.onnx"):
        read_model(tmp_path / "nothing.onnx")
