"""Whole ONNX models imported into burn: a CNN and an attention block whose shapes are
computed in the graph, on every backend against ONNX's reference; constant folding; the
imported weights as parameters that a Learner fine-tunes; files with external data; and the
errors a user meets (operators burn lacks, wrong inputs, a failing node)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnxbuild import Const, compare, graph_model, one_node, reference
from util import assert_close

import burn

R = np.random.default_rng(77)
N = helper.make_node


def f32(*shape: int, scale: float = 0.5) -> np.ndarray:
    return (R.normal(size=shape) * scale).astype(np.float32)


def cnn() -> onnx.ModelProto:
    nodes = [
        N("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        N("BatchNormalization", ["c1", "g", "beta", "mu", "var"], ["n1"]),
        N("Relu", ["n1"], ["r1"]),
        N("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        N("Conv", ["p1", "w2"], ["c2"], kernel_shape=[3, 3], strides=[2, 2],
          auto_pad="SAME_UPPER"),
        N("Relu", ["c2"], ["r2"]),
        N("GlobalAveragePool", ["r2"], ["gap"]),
        N("Flatten", ["gap"], ["flat"]),
        N("Gemm", ["flat", "fc", "fcb"], ["logits"], transB=1),
    ]
    weights = {"w1": f32(8, 3, 3, 3), "b1": f32(8), "g": f32(8) + 1, "beta": f32(8),
               "mu": f32(8), "var": np.abs(f32(8)) + 0.5, "w2": f32(6, 8, 3, 3),
               "fc": f32(5, 6), "fcb": f32(5)}
    return graph_model(nodes, {"x": f32(2, 3, 12, 10)}, ["logits"], weights)


def attention_block(heads: int = 2, width: int = 8) -> onnx.ModelProto:
    """Self-attention as exporters write it: the head split's shape is read from the input
    (Shape → Gather → Concat → Reshape), then LayerNorm, Softmax and Gelu."""
    scale = np.array(1 / np.sqrt(width // heads), np.float32)
    nodes = [
        N("Shape", ["x"], ["shape"]),
        N("Gather", ["shape", "zero"], ["batch"], axis=0),
        N("Gather", ["shape", "one"], ["length"], axis=0),
        N("Unsqueeze", ["batch", "axis0"], ["b1"]), N("Unsqueeze", ["length", "axis0"], ["l1"]),
        N("Concat", ["b1", "l1", "heads", "minus1"], ["split_shape"], axis=0),
        N("MatMul", ["x", "wqkv"], ["qkv"]),
        N("Split", ["qkv"], ["q", "k", "v"], axis=2, num_outputs=3),
        *[N("Reshape", [t, "split_shape"], [t + "h"]) for t in "qkv"],
        N("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        N("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
        N("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
        N("MatMul", ["qt", "kt"], ["scores"]), N("Mul", ["scores", "scale"], ["scaled"]),
        N("Softmax", ["scaled"], ["weights"], axis=-1),
        N("MatMul", ["weights", "vt"], ["context"]),
        N("Transpose", ["context"], ["ct"], perm=[0, 2, 1, 3]),
        N("Concat", ["b1", "l1", "minus1"], ["merge_shape"], axis=0),
        N("Reshape", ["ct", "merge_shape"], ["merged"]),
        N("Add", ["merged", "x"], ["residual"]),
        N("LayerNormalization", ["residual", "ln_g", "ln_b"], ["normed"], axis=-1),
        N("Gelu", ["normed"], ["y"]),
    ]
    constants = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64),
                 "axis0": np.array([0], np.int64), "heads": np.array([heads], np.int64),
                 "minus1": np.array([-1], np.int64), "scale": scale,
                 "wqkv": f32(width, 3 * width), "ln_g": f32(width) + 1, "ln_b": f32(width)}
    return graph_model(nodes, {"x": f32(3, 5, width)}, ["y"], constants, opset=20,
                       shapes={"x": ["batch", "length", width]})


def test_a_cnn_matches_the_reference(backend):
    x = f32(2, 3, 12, 10)
    compare(cnn(), [x], backend, rtol=1e-4, atol=1e-4)


def test_an_attention_block_with_shapes_computed_in_the_graph(backend):
    model = attention_block()
    for length in (5, 7):  # the shape chain is worked out for each input
        compare(model, [f32(3, length, 8)], backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["resnet", "encoder", "resnet_dynamo", "encoder_dynamo"])
def test_models_exported_by_torch(backend, name):
    """Files torch's exporters wrote (``bench/export_onnx_fixtures.py``: a ResNet with batch
    norm and residual adds; a two-layer ``nn.TransformerEncoder``; by the TorchScript
    exporter and by the ``torch.export`` one), against torch's output."""
    folder = Path(__file__).parent / "data"
    saved = np.load(folder / f"torch_{name}.npz")
    model = burn.onnx.load(folder / f"torch_{name}.onnx", backend=backend)
    assert_close(model(saved["x"]).numpy(), saved["y"], 1e-4, 1e-4)


def test_under_fusion_and_autodiff(backend):
    x, model = f32(2, 3, 12, 10), cnn()
    expected = reference(model, [x])[0]
    for wrapped in (burn.Fusion(backend), burn.Autodiff(backend)):
        got = burn.onnx.load(model.SerializeToString(), backend=wrapped)(x)
        assert_close(got.numpy(), expected, 1e-4, 1e-4)


def test_shape_arithmetic_runs_once_per_input_shape(backend):
    """The steps that compute from the input's shape (Shape → Gather → Concat) run on the
    first call with a shape; later calls with it reuse their values."""
    proto = attention_block()
    model = burn.onnx.load(proto.SerializeToString(), backend=backend)
    shaped = sum(step.shaped for step in model._steps)
    assert shaped >= 6  # the Shape, its Gathers, Unsqueezes and Concats
    ran = []
    run = model._run
    model._run = lambda step, *rest: (ran.append(step.node.op_type), run(step, *rest))[1]
    for length, seen in [(5, False), (5, True), (7, False), (5, True)]:
        x = f32(3, length, 8)
        ran.clear()
        assert_close(model(x).numpy(), reference(proto, [x])[0], 1e-4, 1e-4)
        assert ("Shape" in ran) != seen
        assert len(ran) == len(model._steps) - (shaped if seen else 0)
    assert len(model._shape_values) == 2


def test_a_shape_that_depends_on_values_is_read_each_call():
    """TopK's k is computed from the input's values, so the Shape of its output is not fixed
    by the input's shape: it runs on every call."""
    nodes = [N("ReduceMax", ["x"], ["top"], keepdims=0), N("Cast", ["top"], ["k1"], to=7),
             N("Reshape", ["k1", "one"], ["k"]), N("TopK", ["x", "k"], ["v", "i"]),
             N("Shape", ["v"], ["y"])]
    model = graph_model(nodes, {"x": f32(5)}, ["y"], {"one": np.array([1], np.int64)})
    imported = burn.onnx.load(model.SerializeToString(), backend="numpy")
    assert not any(step.shaped for step in imported._steps)
    for top in (2.0, 4.0):
        x = np.array([0.5, top, 1.0, 0.0, 1.5], np.float32)
        assert imported(x).tolist() == [int(top)]


def test_what_is_folded_and_what_is_kept():
    model = burn.onnx.load(attention_block().SerializeToString(), backend="numpy")
    # float initializers are parameters, named as in the file; index constants are not
    assert [name for name, _ in model.named_parameters()] == ["scale", "wqkv", "ln_g", "ln_b"]
    assert set(model.constants) >= {"zero", "one", "axis0", "heads", "minus1"}
    # the shape chain depends on the input, so it stays in the plan
    assert "Shape" in [step.node.op_type for step in model._steps]
    assert model.input_names == ["x"] and model.output_names == ["y"]


def test_nodes_on_constants_run_once_at_load():
    nodes = [N("Constant", [], ["c"], value=helper.make_tensor("v", TensorProto.FLOAT, [2],
                                                                [1.0, 2.0])),
             N("Constant", [], ["k"], value_float=3.0),
             N("Mul", ["c", "k"], ["ck"]), N("Add", ["x", "ck"], ["y"])]
    model = graph_model(nodes, {"x": f32(4, 2)}, ["y"], {})
    imported = burn.onnx.load(model.SerializeToString(), backend="cpu")
    assert imported.operator_counts() == {"Add": 1}
    assert imported.constants["ck"].tolist() == [3.0, 6.0]
    x = f32(4, 2)
    for _ in range(2):  # the constant is copied to the device once
        assert_close(imported(x).numpy(), x + [3.0, 6.0])
    assert len(imported._placed) == 1


def test_an_index_the_host_computes_is_uploaded_again_only_when_it_changes(backend):
    """The last row's index comes from the input's shape (Shape → Gather → Sub), on the host;
    a call with the same shapes reuses its device copy (a captured graph can replay it)."""
    nodes = [N("Shape", ["x"], ["shape"]), N("Gather", ["shape", "zero"], ["rows"]),
             N("Sub", ["rows", "one"], ["last"]), N("Gather", ["x", "last"], ["y"], axis=0)]
    model = graph_model(nodes, {"x": f32(4, 3)}, ["y"],
                        {"zero": np.array(0, np.int64), "one": np.array(1, np.int64)})
    imported = burn.onnx.load(model.SerializeToString(), backend=backend)
    first = f32(4, 3)
    assert_close(imported(first).numpy(), first[3])
    kept = dict(imported._uploads)
    assert len(kept) == 1
    assert imported(f32(4, 3)).shape == (3,)
    assert next(iter(imported._uploads.values()))[1] is next(iter(kept.values()))[1]
    other = f32(6, 3)
    assert_close(imported(other).numpy(), other[5])
    assert next(iter(imported._uploads.values()))[1] is not next(iter(kept.values()))[1]


def test_softmax_before_opset_13_normalizes_the_flattened_trailing_axes(backend):
    x = f32(2, 3, 4)
    got = burn.onnx.load(one_node("Softmax", [x], opset=11).SerializeToString(),
                         backend=backend)(x).numpy()
    rows = np.exp(x.reshape(2, 12) - x.reshape(2, 12).max(1, keepdims=True))
    assert_close(got, (rows / rows.sum(1, keepdims=True)).reshape(2, 3, 4), 1e-5, 1e-6)


def test_same_pooling_gives_ceil_of_size_over_stride():
    """The specification's rule (ONNX's reference evaluator floors here; runtimes ceil)."""
    x = f32(1, 1, 7, 6)
    model = one_node("MaxPool", [x], {"kernel_shape": [3, 3], "strides": [2, 2],
                                      "auto_pad": "SAME_UPPER"})
    got = burn.onnx.load(model.SerializeToString(), backend="numpy")(x).numpy()
    padded = np.pad(x[0, 0], ((1, 1), (0, 1)), constant_values=-np.inf)
    want = np.array([[padded[i:i + 3, j:j + 3].max() for j in range(0, 5, 2)]
                     for i in range(0, 7, 2)])
    assert got.shape == (1, 1, 4, 3) and np.array_equal(got[0, 0], want)


def test_an_imported_model_fine_tunes_with_a_learner(backend):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32)).astype(np.float32)
    nodes = [N("Gemm", ["x", "w", "b"], ["y"], transB=1)]
    model = graph_model(nodes, {"x": x}, ["y"], {"w": np.zeros((1, 4), np.float32),
                                                   "b": np.zeros(1, np.float32)})
    imported = burn.onnx.load(model.SerializeToString(), backend=backend)
    learner = burn.train.Learner(imported, burn.optim.Adam(lr=0.1), burn.nn.mse_loss,
                                 dashboard=False)
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    trained = learner.fit(batches, epochs=40)
    assert learner.history[-1]["train"]["loss"] < 1e-3 < learner.history[0]["train"]["loss"]
    assert_close(trained.state_dict()["w"], [[1.0, -2.0, 0.5, 0.0]], 0, 0.05)
    assert set(trained.state_dict()) == {"w", "b"}
    assert imported.state_dict()["w"].tolist() == [[0.0] * 4]  # the import is unchanged


def test_a_file_with_external_data(tmp_path):
    model = cnn()
    path = tmp_path / "cnn.onnx"
    onnx.save_model(model, path, save_as_external_data=True, location="cnn.weights",
                    size_threshold=0)
    x = f32(2, 3, 12, 10)
    got = burn.onnx.load(path, backend="numpy")(x)
    assert_close(got.numpy(), reference(onnx.load(path), [x])[0], 1e-5, 1e-5)


def test_the_example_runs_checks_and_fine_tunes(capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import onnx_import  # the example is the code under test

    assert onnx_import.main(["--backend", "cpu", "--steps", "3"]) == 0
    printed = capsys.readouterr().out
    assert "torch_resnet.onnx: opset 17, 16 nodes to run (Conv 5, Relu 5" in printed
    assert "(ok)" in printed and "fine-tuned 3 steps" in printed


# ---- errors ----

def _load(model: onnx.ModelProto) -> burn.onnx.OnnxModel:
    return burn.onnx.load(model.SerializeToString(), backend="numpy")


def test_every_unsupported_operator_is_listed_at_load():
    nodes = [N("Relu", ["x"], ["a"]), N("NonMaxSuppression", ["a"], ["b"], name="nms"),
             N("NonZero", ["b"], ["c"]), N("NonZero", ["c"], ["d"]),
             N("Custom", ["d"], ["y"], domain="com.example")]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.example", 1)])
    with pytest.raises(burn.BurnError) as info:
        _load(model)
    message = str(info.value)
    assert "NonMaxSuppression (1 node, first 'nms')" in message
    assert "NonZero (2 nodes, first '#2')" in message
    assert "com.example.Custom (1 node" in message and "burn runs: Abs, Add" in message


def test_wrong_inputs_are_named():
    model = _load(cnn())
    with pytest.raises(burn.BurnError, match=r"takes 1 input\(s\) \(x\), got 2"):
        model(f32(2, 3, 12, 10), f32(1))
    with pytest.raises(burn.BurnError, match=r"input 'x' of <bytes> must be float32, got "
                                             r"float64"):
        model(np.zeros((2, 3, 12, 10)))
    with pytest.raises(burn.BurnError, match=r"has shape \(2, 4, 12, 10\); the model expects "
                                             r"\(batch, 3, 12, 10\)"):
        model(f32(2, 4, 12, 10))
    with pytest.raises(burn.BurnError, match="must be a burn tensor or a NumPy array, got list"):
        model([1.0])


def test_a_failing_node_is_named_with_its_error():
    nodes = [N("Reshape", ["x", "shape"], ["y"], name="to_rows")]
    model = graph_model(nodes, {"x": f32(2, 6)}, ["y"], {"shape": np.array([5, -1], np.int64)})
    with pytest.raises(burn.BurnError, match=r"<bytes>: node 0 'to_rows' \(Reshape\) failed: "
                                             r".*reshape"):
        _load(model)(f32(2, 6))


def test_unsupported_attribute_values_say_what_to_do():
    x, volume = f32(2, 3), f32(1, 1, 2, 2, 2)
    cases = [(one_node("Pad", [x, Const(np.array([0, 1, 0, 1], np.int64))],
                       {"mode": "mirror"}), x, "Pad: mode='mirror' is not one ONNX defines "
                                               r"\(constant, reflect, edge, wrap\)"),
             (one_node("Pad", [x, Const(np.array([0, 3, 0, 0], np.int64))],
                       {"mode": "reflect"}), x, r"pad: mode='reflect' pads axis 1 \(size 3\) "
                                                r"by at most 2 on each side, got \(3, 0\)"),
             (one_node("MaxPool", [f32(1, 1, 2, 2, 2, 2)], {"kernel_shape": [2, 2, 2, 2]}),
              f32(1, 1, 2, 2, 2, 2), "MaxPool: a 4-d MaxPool .* is not supported yet; burn runs "
                                     "1-d to 3-d ones"),
             (one_node("Dropout", [x, Const(np.array(1.5, np.float32)),
                                   Const(np.array(True))]), x,
              r"Dropout: ratio must be in \[0, 1\], got 1.5"),
             (one_node("Resize", [volume, None, Const(np.array([1, 1, 2, 2, 2], np.float32))],
                       {"mode": "bicubic"}), volume,
              r"Resize: mode='bicubic' is not one ONNX defines \(nearest, linear, cubic\)"),
             (one_node("Resize", [volume, None, Const(np.array([1, 1, 2, 2, 2], np.float32))],
                       {"antialias": 1}, opset=18), volume,
              "Resize: antialias applies to the linear and cubic modes; drop it or choose one"),
             (one_node("Resize", [x, None, None, Const(np.array([4, 4], np.int64))],
                       {"keep_aspect_ratio_policy": "fit"}, opset=18), x,
              "Resize: keep_aspect_ratio_policy='fit' is not one ONNX defines "
              r"\(stretch, not_larger, not_smaller\)"),
             (one_node("Resize", [x.astype(np.int32), None, Const(np.array([2, 2], np.float32))],
                       {"mode": "cubic"}), x.astype(np.int32),
              "Resize: mode='cubic' on int32 is not supported yet; cast to a float first"),
             (one_node("Einsum", [f32(2, 3)], {"equation": "ii->i"}), f32(2, 3),
              "Einsum: operand 0 of 'ii->i' repeats 'i' over axes of sizes 2 and 3; a "
              "diagonal needs equal sizes"),
             (one_node("Resize", [x, None, Const(np.array([2, 2], np.float32))],
                       {"coordinate_transformation_mode": "tf_crop_and_resize"}), x,
              r"Resize: tf_crop_and_resize needs a roi of 4 values \(the starts, then the "
              r"ends, of axes \[0, 1\]\); got none"),
             (one_node("Resize", [x, None, Const(np.array([2, 2], np.float32))],
                       {"coordinate_transformation_mode": "pixel_centers"}), x,
              "Resize: coordinate_transformation_mode='pixel_centers' is not one ONNX defines")]
    for model, feed, message in cases:
        with pytest.raises(burn.BurnError, match=message):
            _load(model)(feed)


def test_graphs_out_of_order_and_opsets_out_of_range_are_refused():
    nodes = [N("Relu", ["a"], ["y"]), N("Neg", ["x"], ["a"])]
    with pytest.raises(burn.BurnError, match="node 0 \\(Relu\\) reads 'a', which no earlier "
                                             "node, input or initializer defines"):
        _load(graph_model(nodes, {"x": f32(2)}, ["y"], {}))
    with pytest.raises(burn.BurnError, match="uses opset 6; burn reads opsets 7-28"):
        _load(one_node("Relu", [f32(2)], opset=6))
    with pytest.raises(burn.BurnError, match="initializer 'in1' is uint16, which burn does "
                                             "not hold"):
        _load(one_node("Add", [np.zeros(2, np.uint16), Const(np.ones(2, np.uint16))]))
