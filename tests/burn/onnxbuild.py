"""Helpers of the ONNX import tests: one-node models built with ``onnx.helper``, run by
burn and by ONNX's own NumPy reference evaluator (``onnx.reference``), and compared.

Example:
    model = one_node("Relu", [x])                       # x: a graph input
    compare(model, [x], backend)                         # burn vs onnx.reference
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from util import assert_close

import burn


@dataclass(frozen=True)
class Const:
    """An input given as an initializer (as exporters give shapes, axes and weights)."""

    value: np.ndarray


def one_node(op: str, inputs: Sequence[np.ndarray | Const | None], attrs: dict | None = None,
             *, outputs: int = 1, opset: int = 18) -> onnx.ModelProto:
    """A model of one ``op`` node; arrays are graph inputs ``in0, in1, ...``, ``Const``
    values initializers, ``None`` an omitted optional input."""
    names, graph_inputs, initializers = [], [], []
    for i, value in enumerate(inputs):
        name = f"in{i}"
        if value is None:
            names.append("")
            continue
        names.append(name)
        if isinstance(value, Const):
            initializers.append(numpy_helper.from_array(np.asarray(value.value), name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape))
    out_names = [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op, names, out_names, **(attrs or {}))
    graph = helper.make_graph([node], op.lower(), graph_inputs,
                              [helper.make_tensor_value_info(n, 0, None) for n in out_names],
                              initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def graph_model(nodes: list, inputs: dict[str, np.ndarray], outputs: Sequence[str],
                initializers: dict[str, np.ndarray], opset: int = 18,
                shapes: dict[str, list] | None = None) -> onnx.ModelProto:
    """A model of ``nodes`` (``helper.make_node``) with named inputs and initializers; an
    input's declared shape is ``shapes[name]``, else its example's with a "batch" axis."""
    shapes = shapes or {}
    graph = helper.make_graph(
        nodes, "model",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                       shapes.get(n, ["batch", *a.shape[1:]]))
         for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def reference(model: onnx.ModelProto, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
    names = [i.name for i in model.graph.input]
    return ReferenceEvaluator(model).run(None, dict(zip(names, feeds)))


def compare(model: onnx.ModelProto, feeds: Sequence[np.ndarray], backend: burn.Backend,
            rtol: float | None = None, atol: float | None = None) -> Any:
    """Run ``model`` with burn on ``backend`` and with ONNX's reference; compare each
    output (shape, dtype kind and values). Returns burn's outputs."""
    expected = reference(model, feeds)
    got = burn.onnx.load(model.SerializeToString(), backend=backend)(*feeds)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for tensor, want in zip(got, expected):
        array = tensor.numpy()
        assert array.shape == want.shape, (array.shape, want.shape)
        if want.dtype == np.int64 and array.dtype == np.int32:
            want = want.astype(np.int32)  # a backend without int64 narrows indices
        assert array.dtype == want.dtype, (array.dtype, want.dtype)
        assert_close(array, want, rtol, atol)
    return got
