"""ONNX control flow: ``If``, ``Loop`` and ``Scan``, whose bodies are subgraphs (node
attributes).

A subgraph may read any value of the graphs around it by name (ONNX's outer scope), so a
node's dependencies are its inputs plus the names its subgraphs read and do not define
(``node_reads``): the plan keeps those alive until the node runs. The bodies run node by
node each time the node runs (no folding inside them), through ``run_graph``, which the
model gives: the values a body computes stay in its own scope.

- ``If``: the condition is read on the host (one device read, as a branch needs), then the
  chosen branch runs and its outputs are the node's.
- ``Loop``: ``M`` (the most iterations, none for no limit) and ``cond`` (true if omitted)
  are read on the host; each iteration runs the body on (iteration number, condition,
  loop-carried values) and takes the body's condition output, the new carried values and
  its scan outputs, which are stacked along a new first axis at the end (as ONNX Runtime
  does and ONNX's own Loop tests expect; the reference evaluator's ``np.vstack`` agrees for
  0-d and 1-d scan outputs).

- ``Scan`` (opset 9 on): the body runs once per element along each scan input's axis
  (forward or reverse), on (state variables, one element of each scan input); the final
  states are outputs, and each scan output's elements are stacked along its own axis (in
  reverse order for a reverse direction).

Example:
    >>> sorted(CONTROL_FLOW)
    ['If', 'Loop', 'Scan']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from ..backend import backend_for
from ..backend.base import BurnError
from ..tensor.tensor import Tensor
from .proto import Graph, Node
from .registry import Attributes, ops

_HOST = backend_for("numpy")

#: runs ``graph`` with ``inputs`` (the graph's inputs, in order) over the ``scope`` of the
#: graphs around it; returns its outputs in order
RunGraph = Callable[[Graph, list[Tensor], Mapping[str, Tensor], str], list[Tensor]]


def subgraphs(node: Node) -> list[tuple[str, Graph]]:
    """(attribute name, graph) of each subgraph of ``node``."""
    found = []
    for name, value in node.attributes.items():
        for graph in value if isinstance(value, list) else [value]:
            if isinstance(graph, Graph):
                found.append((name, graph))
    return found


def all_nodes(graph: Graph) -> Iterator[tuple[str, Node]]:
    """Every node of ``graph`` and of its subgraphs, each with where it is (for errors)."""
    for index, node in enumerate(graph.nodes):
        yield f"#{index}", node
        for name, body in subgraphs(node):
            for where, inner in all_nodes(body):
                yield f"#{index}.{name}{where}", inner


def outer_names(graph: Graph) -> set[str]:
    """The names ``graph`` (with its own subgraphs) reads from the graphs around it."""
    defined = {v.name for v in graph.inputs} | set(graph.initializers)
    read: set[str] = set()
    for node in graph.nodes:
        read.update(name for name in node_reads(node) if name not in defined)
        defined.update(name for name in node.outputs if name)
    return read


def node_reads(node: Node) -> tuple[str, ...]:
    """The values ``node`` needs: its inputs and what its subgraphs read from outside."""
    implicit = set().union(*(outer_names(g) for _, g in subgraphs(node))) \
        if subgraphs(node) else set()
    return tuple(name for name in node.inputs if name) + tuple(sorted(implicit))


def _host_scalar(value: Tensor | None, what: str, attrs: Attributes) -> Any:
    if value is None:
        return None
    if value.numel() != 1:
        raise attrs.refuse(f"a {what} of shape {value.shape}", f"give {what} one element")
    return value.numpy().reshape(-1)[0]


def run_if(attrs: Attributes, inputs: list[Tensor | None], scope: Mapping[str, Tensor],
           run_graph: RunGraph) -> list[Tensor]:
    """The outputs of the branch that ``inputs[0]`` (the condition) picks."""
    chosen = "then_branch" if bool(_host_scalar(inputs[0], "condition", attrs)) \
        else "else_branch"
    return run_graph(attrs.get(chosen), [], scope, chosen)


def run_loop(attrs: Attributes, inputs: list[Tensor | None], scope: Mapping[str, Tensor],
             run_graph: RunGraph) -> list[Tensor]:
    """The final loop-carried values, then each scan output stacked over the iterations."""
    body: Graph = attrs.get("body")
    limit = _host_scalar(inputs[0] if inputs else None, "trip count M", attrs)
    keep_going = _host_scalar(inputs[1] if len(inputs) > 1 else None, "condition", attrs)
    keep_going = True if keep_going is None else bool(keep_going)
    carried = list(inputs[2:])
    if len(body.inputs) != 2 + len(carried):
        raise BurnError(f"Loop: the body takes {len(body.inputs)} inputs; it needs 2 + the "
                        f"{len(carried)} loop-carried values")
    scans: list[list[Tensor]] = [[] for _ in range(len(body.outputs) - 1 - len(carried))]
    iteration = 0
    while keep_going and (limit is None or iteration < int(limit)):
        number = Tensor(_HOST.from_numpy(np.array(iteration, np.int64)), _HOST)
        flag = Tensor(_HOST.from_numpy(np.array(keep_going)), _HOST)
        outputs = run_graph(body, [number, flag, *carried], scope, f"body, iteration {iteration}")
        keep_going = bool(_host_scalar(outputs[0], "body's condition output", attrs))
        carried = outputs[1:1 + len(carried)]
        for values, value in zip(scans, outputs[1 + len(carried):]):
            values.append(value)
        iteration += 1
    if scans and iteration == 0:
        raise BurnError("Loop: no iteration ran, so its scan outputs have no shape to be "
                        "empty in; burn needs at least one iteration")
    return carried + [ops.stack(values, 0) for values in scans]


def _axes(attrs: Attributes, name: str, count: int, ranks: list[int]) -> list[int]:
    """An axes attribute (default 0 each), each counted from the front of its rank."""
    axes = attrs.ints(name) or [0] * count
    if len(axes) != count:
        raise BurnError(f"Scan: {name} lists {len(axes)} axes for {count} tensors")
    for axis, rank in zip(axes, ranks):
        if not -rank <= axis < rank:
            raise BurnError(f"Scan: {name} has axis {axis}, out of range for rank {rank}")
    return [axis % rank for axis, rank in zip(axes, ranks)]


def run_scan(attrs: Attributes, inputs: list[Tensor | None], scope: Mapping[str, Tensor],
             run_graph: RunGraph) -> list[Tensor]:
    """The final state variables, then each scan output's elements stacked along its axis."""
    if attrs.version < 9:
        raise attrs.refuse("opset 8's Scan (a batch axis and sequence_lens)",
                           "export with opset 9 or later")
    body: Graph = attrs.get("body")
    count = attrs.int("num_scan_inputs")
    states, sequences = list(inputs[:len(inputs) - count]), inputs[len(inputs) - count:]
    in_axes = _axes(attrs, "scan_input_axes", count, [x.ndim for x in sequences])
    reverse_in = attrs.ints("scan_input_directions") or [0] * count
    lengths = {x.shape[axis] for x, axis in zip(sequences, in_axes)}
    if len(lengths) != 1:
        raise BurnError(f"Scan: the scan inputs have different lengths along their axes "
                        f"({sorted(lengths)})")
    length = lengths.pop()
    scans: list[list[Tensor]] = [[] for _ in range(len(body.outputs) - len(states))]
    for step in range(length):
        elements = [x[(slice(None),) * axis + (length - 1 - step if back else step,)]
                    for x, axis, back in zip(sequences, in_axes, reverse_in)]
        outputs = run_graph(body, [*states, *elements], scope, f"body, iteration {step}")
        states = outputs[:len(states)]
        for values, value in zip(scans, outputs[len(states):]):
            values.append(value)
    if scans and length == 0:
        raise BurnError("Scan: the scan inputs are empty, so its scan outputs have no shape "
                        "to be empty in; burn needs at least one element")
    out_axes = _axes(attrs, "scan_output_axes", len(scans),
                     [values[0].ndim + 1 for values in scans])
    reverse_out = attrs.ints("scan_output_directions") or [0] * len(scans)
    return states + [ops.stack(values[::-1] if back else values, axis)
                     for values, axis, back in zip(scans, out_axes, reverse_out)]


#: the control-flow operators: ``run(attrs, inputs, scope, run_graph)``
CONTROL_FLOW: dict[str, Callable[..., list[Tensor]]] = {"If": run_if, "Loop": run_loop,
                                                        "Scan": run_scan}
