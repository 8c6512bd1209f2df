"""ONNX control flow in ``burn.onnx``: ``If`` (a branch picked by a computed condition, its
subgraphs reading the outer graph's values) and ``Loop`` (a for loop, a while loop that
stops itself, loop-carried values, scan outputs, an ``If`` nested in the body), on every
backend against ONNX's reference evaluator; and the errors: an operator burn does not run
inside a branch is named at load, as is a name no scope defines."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxbuild import compare

import burn

N = helper.make_node
R = np.random.default_rng(11)


def _info(name: str, elem: int = TensorProto.FLOAT, shape=None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes: list, inputs: list, outputs: list[str],
           initializers: dict[str, np.ndarray]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "control", inputs, [_info(n, 0) for n in outputs],
                              initializer=[numpy_helper.from_array(a, n)
                                           for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def if_model(then_op: str = "Mul") -> onnx.ModelProto:
    """``x * two + y`` where ``sum(x) > 0``, else ``-x``: the branches read ``x``, ``y``
    and the initializer ``two`` from the outer graph."""
    then_branch = helper.make_graph(
        [N(then_op, ["x", "two"], ["scaled"]), N("Add", ["scaled", "y"], ["then_out"])],
        "then", [], [_info("then_out")])
    else_branch = helper.make_graph([N("Neg", ["x"], ["else_out"])], "else", [],
                                    [_info("else_out")])
    nodes = [N("ReduceSum", ["x"], ["total"], keepdims=0),
             N("Greater", ["total", "zero"], ["positive"]),
             N("If", ["positive"], ["out"], then_branch=then_branch, else_branch=else_branch)]
    return _model(nodes, [_info("x", shape=[3, 4]), _info("y", shape=[3, 4])], ["out"],
                  {"two": np.array(2.0, np.float32), "zero": np.array(0.0, np.float32)})


def loop_model(stop_after: int | None) -> onnx.ModelProto:
    """``acc += x * i`` for i < 4 (a for loop), or until ``i == stop_after`` (the body's
    condition), each iteration's row sums of ``acc`` a scan output (1-D: ONNX's reference
    evaluator joins scan outputs with ``np.vstack``, which stacks 0-d and 1-d ones as ONNX
    Runtime and ONNX's own Loop tests do); an ``If`` in the body doubles the step on odd
    iterations."""
    odd = helper.make_graph([N("Add", ["step", "step"], ["odd_out"])], "odd", [],
                            [_info("odd_out")])
    even = helper.make_graph([N("Identity", ["step"], ["even_out"])], "even", [],
                             [_info("even_out")])
    condition = [N("Less", ["i", "stop"], ["keep_going"])] if stop_after is not None else \
        [N("Identity", ["cond_in"], ["keep_going"])]
    body = helper.make_graph(
        [N("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
         N("Mul", ["x", "i_float"], ["step"]),
         N("Mod", ["i", "two_int"], ["parity"]),
         N("Cast", ["parity"], ["is_odd"], to=TensorProto.BOOL),
         N("If", ["is_odd"], ["increment"], then_branch=odd, else_branch=even),
         N("Add", ["acc_in", "increment"], ["acc_out"]),
         N("ReduceSum", ["acc_out", "rows"], ["scan"], keepdims=0), *condition],
        "body", [_info("i", TensorProto.INT64, []), _info("cond_in", TensorProto.BOOL, []),
                 _info("acc_in")],
        [_info("keep_going", TensorProto.BOOL, []), _info("acc_out"), _info("scan")])
    initializers = {"trips": np.array(4, np.int64), "start": np.array(True),
                    "two_int": np.array(2, np.int64), "rows": np.array([1], np.int64)}
    if stop_after is not None:
        initializers["stop"] = np.array(stop_after, np.int64)
    nodes = [N("Loop", ["trips", "start", "x"], ["final", "every"], body=body)]
    return _model(nodes, [_info("x", shape=[2, 3])], ["final", "every"], initializers)


def test_if_takes_either_branch(backend):
    x = R.normal(size=(3, 4)).astype(np.float32)
    y = R.normal(size=(3, 4)).astype(np.float32)
    model = if_model()
    for sign in (1.0, -1.0):
        feed = np.abs(x) * sign
        got = compare(model, [feed, y], backend)[0]
        expected = feed * 2 + y if sign > 0 else -feed
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("stop_after", [None, 2], ids=["for", "while"])
def test_loop_carries_values_and_stacks_scan_outputs(backend, stop_after):
    x = R.normal(size=(2, 3)).astype(np.float32)
    final, every = compare(loop_model(stop_after), [x], backend)
    assert every.shape == ((4 if stop_after is None else 3), 2)
    np.testing.assert_allclose(final.numpy().sum(axis=1), every.numpy()[-1], rtol=1e-6)


def test_a_loaded_model_runs_its_branches_again(backend):
    """The plan keeps what a branch reads alive until the If runs, call after call."""
    model = burn.onnx.load(if_model().SerializeToString(), backend=backend)
    x, y = np.ones((3, 4), np.float32), np.zeros((3, 4), np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(model(x, y).numpy(), 2.0)
        np.testing.assert_array_equal(model(-x, y).numpy(), 1.0)


def test_an_unsupported_operator_inside_a_branch_is_named_at_load():
    with pytest.raises(burn.BurnError, match=r"operators burn does not run yet: Frobnicate "
                                             r"\(1 node, first '#2.then_branch#0'\)"):
        burn.onnx.load(if_model("Frobnicate").SerializeToString())


def test_a_branch_reading_an_undefined_name_is_refused_at_load():
    model = if_model()
    branch = next(a.g for a in model.graph.node[2].attribute if a.name == "then_branch")
    branch.node[1].input[1] = "nowhere"
    with pytest.raises(burn.BurnError, match=r"node 2 \(If\) reads 'nowhere', which no "
                                             r"earlier node, input or initializer defines"):
        burn.onnx.load(model.SerializeToString())


def test_a_failing_body_names_where_it_failed():
    body_error = loop_model(None)
    body = next(a.g for a in body_error.graph.node[0].attribute if a.name == "body")
    body.node[6].input[1] = "trips"  # ReduceSum over axis 4 of a 2-D value
    model = burn.onnx.load(body_error.SerializeToString(), backend="numpy")
    with pytest.raises(burn.BurnError, match=r"node 0 \(Loop\) failed: .*body, iteration 0: "
                                             r"node 6 '' \(ReduceSum\) failed: .*axis 4"):
        model(np.ones((2, 3), np.float32))


def scan_model(axis: int = 0, reverse: int = 0) -> onnx.ModelProto:
    """A recurrence ``h = tanh(h * decay + x_t)`` along ``axis`` of ``xs`` (forward or
    ``reverse``), ``decay`` read from the outer graph; scan outputs: each step's ``h`` row
    sums stacked along ``axis`` (in the input's direction) and each ``h`` along axis 0."""
    body = helper.make_graph(
        [N("Mul", ["h_in", "decay"], ["kept"]), N("Add", ["kept", "x_t"], ["mixed"]),
         N("Tanh", ["mixed"], ["h_out"]),
         N("ReduceSum", ["h_out", "last"], ["sums"], keepdims=0),
         N("Identity", ["h_out"], ["every_h"])],
        "body", [_info("h_in", shape=[2, 3]), _info("x_t", shape=[2, 3])],
        [_info("h_out"), _info("sums"), _info("every_h")])
    directions = {} if not reverse else {"scan_input_directions": [1],
                                         "scan_output_directions": [1, 0]}
    axes = {} if not axis else {"scan_input_axes": [axis], "scan_output_axes": [axis, 0]}
    shape = [5, 2, 3] if axis == 0 else [2, 5, 3]
    nodes = [N("Scan", ["h0", "xs"], ["h", "sums", "every_h"], body=body, num_scan_inputs=1,
               **directions, **axes)]
    return _model(nodes, [_info("h0", shape=[2, 3]), _info("xs", shape=shape)],
                  ["h", "sums", "every_h"], {"decay": np.array(0.5, np.float32),
                                             "last": np.array([1], np.int64)})


def test_scan_runs_a_recurrence(backend):
    """Along axis 0, forward: what ONNX's reference evaluator runs."""
    h0 = R.normal(size=(2, 3)).astype(np.float32)
    xs = R.normal(size=(5, 2, 3)).astype(np.float32)
    h, sums, every = compare(scan_model(), [h0, xs], backend)
    assert sums.shape == (5, 2) and every.shape == (5, 2, 3)
    np.testing.assert_allclose(h.numpy(), every.numpy()[-1])


def test_scan_along_another_axis_in_reverse(backend):
    """Axis 1, reverse (which the reference evaluator does not run): against the recurrence
    in float64, each output element placed back where its input element came from."""
    h0 = R.normal(size=(2, 3)).astype(np.float32)
    xs = R.normal(size=(2, 5, 3)).astype(np.float32)
    h, sums, every = burn.onnx.load(scan_model(axis=1, reverse=1).SerializeToString(),
                                    backend=backend)(h0, xs)
    state, want_sums, want_every = h0.astype(np.float64), np.zeros((2, 5)), []
    for t in reversed(range(5)):
        state = np.tanh(state * 0.5 + xs[:, t])
        want_sums[:, t] = state.sum(axis=1)
        want_every.append(state)
    np.testing.assert_allclose(h.numpy(), state, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sums.numpy(), want_sums, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(every.numpy(), np.stack(want_every), rtol=1e-5, atol=1e-6)


def test_opset_8_scan_is_refused():
    model = scan_model()
    model.opset_import[0].version = 8
    loaded = burn.onnx.load(model.SerializeToString(), backend="numpy")
    with pytest.raises(burn.BurnError, match=r"Scan: opset 8's Scan \(a batch axis and "
                                             r"sequence_lens\) is not supported yet; export "
                                             r"with opset 9 or later"):
        loaded(np.zeros((2, 3), np.float32), np.zeros((5, 2, 3), np.float32))
