"""``OnnxModel``: an ONNX graph as a burn module, with its weights as parameters.

``burn.onnx.load("model.onnx")`` reads the file, checks at once that burn runs every
operator in it (one error lists all it does not), makes the float initializers the module's
parameters (named as in the file, so ``state_dict`` keys are the exporter's names), folds
what can be computed without the inputs, and keeps the rest as the plan ``forward`` runs.
Steps that compute from the inputs' shapes only (exporters' ``Shape`` → ``Gather`` →
``Concat`` chains) run on the first call with those shapes; later calls reuse their values.
The module is a burn module like any other: ``to(backend)``, ``require_grad()`` and a
``Learner`` fine-tune it, under ``Autodiff`` and ``Fusion`` alike.

Example:
    >>> model = burn.onnx.load("mlp.onnx", backend="cpu")  # doctest: +SKIP
    >>> model(np.ones((2, 4), np.float32)).shape  # doctest: +SKIP
    (2, 3)
"""

from __future__ import annotations

import os
from collections import ChainMap, Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..backend import backend_for, default_backend
from ..backend.base import Backend, BurnError
from ..nn.module import Module, _mapped
from ..tensor.tensor import Tensor
from . import math_ops, nn_ops, resize, shape_ops  # noqa: F401 - each registers its operators
from .control import CONTROL_FLOW, all_nodes, node_reads
from .proto import Graph, Model, Node, ValueInfo, read_model
from .registry import OPERATORS, Attributes, onnx_dtype, stored_dtype, to_backend

_HOST = backend_for("numpy")
_REUSED_UPLOAD = 4096  # host-computed values up to this size keep their device copy
_SHAPES_KEPT = 8  # input shapes whose shape arithmetic is kept
#: the default-domain opsets whose operator definitions burn follows
OPSETS = range(7, 29)


@dataclass(frozen=True)
class _Step:
    """One node of the plan: what it runs and which values it may free afterwards."""

    index: int
    node: Node
    attrs: Attributes
    frees: tuple[str, ...]
    #: computes from the inputs' shapes and constants only (shape arithmetic): its outputs
    #: are kept for the next call with the same shapes
    shaped: bool = False


class OnnxModel(Module):
    """An imported ONNX graph (see the module docstring); build it with ``burn.onnx.load``.

    ``forward(*inputs)`` takes the graph's inputs in order (burn tensors or NumPy arrays;
    arrays go to the parameters' backend) and returns its output, or a tuple of them when
    the graph has several. ``input_names``/``output_names`` list them.
    """

    def __init__(self, model: Model, backend: Backend, source: str):
        graph = model.graph
        self.source, self.opset = source, model.opsets.get("", 1)
        self.inputs = [v for v in graph.inputs if v.name not in graph.initializers]
        self.outputs = list(graph.outputs)
        self.params: dict[str, Tensor] = {}
        constants: dict[str, Tensor] = {}
        for name, array in graph.initializers.items():
            if array.dtype.name not in _HOST.dtypes:
                raise BurnError(f"burn.onnx: {source}: initializer {name!r} is "
                                f"{array.dtype.name}, which burn does not hold (it holds "
                                f"{', '.join(sorted(_HOST.dtypes))})")
            if array.dtype.kind == "f":  # weights: trained, moved, saved
                self.params[name] = Tensor(backend.from_numpy(array), backend)
            else:  # indices, shapes, masks: computed with on the host
                constants[name] = Tensor(_HOST.from_numpy(array), _HOST)
        self._default_backend = backend
        self.constants, steps = _fold(graph, self.opset, constants, set(self.params), source)
        self._steps = _with_frees(_shaped(steps, set(self.constants)),
                                  [v.name for v in self.outputs], set(self.params))
        #: the outputs of the shaped steps, by the inputs' (shape, dtype)s
        self._shape_values: dict[tuple, dict[str, Tensor]] = {}
        self._placed: dict[tuple[str, Backend], Tensor] = {}  # constants moved to a device
        self._uploads: dict[tuple[str, Backend], tuple[Any, Tensor]] = {}  # host values, last
        self._body_attrs: dict[Node, Attributes] = {}  # of the nodes in control-flow bodies

    @property
    def input_names(self) -> list[str]:
        return [v.name for v in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [v.name for v in self.outputs]

    def operator_counts(self) -> dict[str, int]:
        """The operators ``forward`` runs (what was not folded at load), with how many nodes
        use each, the most used first.

        Example:
            >>> model.operator_counts()  # doctest: +SKIP
            {'Conv': 5, 'Relu': 5, 'Add': 2, 'MaxPool': 1}
        """
        return dict(Counter(step.node.op_type for step in self._steps).most_common())

    # ---- parameters are named as in the file, not as attributes ----

    def named_parameters(self, prefix: str = "") -> list[tuple[str, Tensor]]:
        return [(prefix + name, p) for name, p in self.params.items()]

    def map_parameters(self, fn: Any, prefix: str = "") -> OnnxModel:
        new = super().map_parameters(fn, prefix)
        new.params = {name: _mapped(p, fn, prefix + name) for name, p in self.params.items()}
        return new

    # ---- running ----

    def forward(self, *inputs: Any) -> Tensor | tuple[Tensor, ...]:
        backend = self._backend(inputs)
        env: dict[str, Tensor] = dict(self.params)
        env.update(self.constants)
        for spec, value in zip(self._checked_count(inputs), inputs):
            env[spec.name] = self._input(spec, value, backend)
        key = tuple((env[name].shape, env[name].dtype) for name in self.input_names)
        known = self._shape_values.get(key)
        env.update(known or {})
        computed: dict[str, Tensor] = {}
        for step in self._steps:
            if step.shaped and known is not None:
                for name in step.frees:
                    env.pop(name, None)
                continue
            self._run(step, env, backend, computed if step.shaped else None)
        if known is None:
            if len(self._shape_values) >= _SHAPES_KEPT:
                self._shape_values.pop(next(iter(self._shape_values)))
            self._shape_values[key] = computed
        results = tuple(self._result(env, v.name, backend) for v in self.outputs)
        return results[0] if len(results) == 1 else results

    def _run(self, step: _Step, env: dict[str, Tensor], backend: Backend,
             kept: dict[str, Tensor] | None = None) -> None:
        """Run one step; its outputs also go to ``kept`` when given."""
        node = step.node
        try:
            produced = self._produce(node, step.attrs, env, backend,
                                     lambda: _where(self.source, step.index, node))
        except Exception as error:
            raise BurnError(f"burn.onnx: {_where(self.source, step.index, node)} failed: "
                            f"{error}") from error
        _store(env, node, produced, self.source, step.index)
        if kept is not None:
            kept.update((name, env[name]) for name in node.outputs if name)
        for name in step.frees:
            env.pop(name, None)

    def _produce(self, node: Node, attrs: Attributes, env: Mapping[str, Tensor],
                 backend: Backend, where: Callable[[], str]) -> Any:
        """What ``node`` computes from the values in ``env``: an operator's result, or a
        control-flow node's outputs (its subgraphs see ``env``; ``where()`` names the node
        in their errors, made only then: this runs for every node of every call)."""
        if node.op_type not in CONTROL_FLOW:
            arguments = _arguments(OPERATORS[node.op_type], node, env, self._place)
            return OPERATORS[node.op_type].run(attrs, *arguments)
        inputs = [env[name] if name else None for name in node.inputs]

        def run_graph(graph: Graph, values: list[Tensor], outer: Mapping[str, Tensor],
                      label: str) -> list[Tensor]:
            return self._run_graph(graph, values, outer, backend, f"{where()}, {label}")

        return CONTROL_FLOW[node.op_type](attrs, inputs, env, run_graph)

    def _run_graph(self, graph: Graph, inputs: list[Tensor], scope: Mapping[str, Tensor],
                   backend: Backend, where: str) -> list[Tensor]:
        """A subgraph's outputs: its nodes run in their own scope over ``scope``."""
        env: ChainMap[str, Tensor] = ChainMap({}, scope)  # type: ignore[arg-type]
        own = env.maps[0]
        own.update((spec.name, value) for spec, value in zip(graph.inputs, inputs))
        own.update((name, Tensor(_HOST.from_numpy(array), _HOST))
                   for name, array in graph.initializers.items())
        for index, node in enumerate(graph.nodes):
            attrs = self._body_attrs.get(node)
            if attrs is None:  # once per node, not per call or loop iteration
                attrs = self._body_attrs[node] = Attributes(
                    node.attributes, node.op_type, self.opset,
                    outputs=sum(1 for name in node.outputs if name))
            try:
                produced = self._produce(
                    node, attrs, env, backend,
                    lambda index=index, node=node: f"{where}: node {index} ({node.op_type})")
            except Exception as error:
                raise BurnError(f"{where}: node {index} {node.name!r} ({node.op_type}) "
                                f"failed: {error}") from error
            _store(own, node, produced, where, index)
        return [env[spec.name] for spec in graph.outputs]

    def _place(self, name: str, value: Tensor, backend: Backend) -> Tensor:
        """``value`` on ``backend``. A constant's copy there is kept for the next call; so is
        a small value the host computed (an index from the input's shape) while the next call
        computes the same numbers, so a call with the shapes of the last uploads nothing (and
        can be captured as a CUDA graph)."""
        if value.backend is backend:
            return value
        key = (name, backend)  # the backend itself: an id could be reused once it is freed
        if name in self.constants:
            if key not in self._placed:
                self._placed[key] = to_backend(value, backend)
            return self._placed[key]
        if value.backend is not _HOST or value.numel() > _REUSED_UPLOAD:
            return to_backend(value, backend)
        array = value.numpy()
        fingerprint = (array.dtype.str, array.shape, array.tobytes())
        kept = self._uploads.get(key)
        if kept is None or kept[0] != fingerprint:
            kept = self._uploads[key] = (fingerprint, to_backend(value, backend))
        return kept[1]

    def _backend(self, inputs: Sequence[Any]) -> Backend:
        if self.params:
            return next(iter(self.params.values())).backend
        for value in inputs:
            if isinstance(value, Tensor):
                return value.backend
        return self._default_backend

    def _checked_count(self, inputs: Sequence[Any]) -> list[ValueInfo]:
        if len(inputs) != len(self.inputs):
            raise BurnError(f"burn.onnx: {os.path.basename(self.source)} takes "
                            f"{len(self.inputs)} input(s) ({', '.join(self.input_names)}), "
                            f"got {len(inputs)}")
        return self.inputs

    def _input(self, spec: ValueInfo, value: Any, backend: Backend) -> Tensor:
        if isinstance(value, np.ndarray):  # through the host: to_backend narrows int64
            value = Tensor(_HOST.from_numpy(value), _HOST)
        if not isinstance(value, Tensor):
            raise BurnError(f"burn.onnx: input {spec.name!r} must be a burn tensor or a NumPy "
                            f"array, got {type(value).__name__}")
        where = f"burn.onnx: input {spec.name!r} of {os.path.basename(self.source)}"
        if spec.elem_type:
            expected = onnx_dtype(spec.elem_type, where)
            if value.dtype not in (expected, stored_dtype(expected, backend)):
                raise BurnError(f"{where} must be {expected.name}, got {value.dtype.name}")
        if spec.shape is not None and not _fits(value.shape, spec.shape):
            wanted = tuple(d if isinstance(d, int) else (d or "?") for d in spec.shape)
            raise BurnError(f"{where} has shape {value.shape}; the model expects "
                            f"{wanted}".replace("'", ""))
        return to_backend(value, backend) if value.backend is not backend else value

    def _result(self, env: dict[str, Tensor], name: str, backend: Backend) -> Tensor:
        value = env[name]
        return value if value.backend is backend else self._place(name, value, backend)


def load(source: str | os.PathLike | bytes | memoryview,
         backend: Backend | str | None = None) -> OnnxModel:
    """The ONNX model in ``source`` (a path, or the file's bytes) as a burn module whose
    parameters live on ``backend`` (the default backend when None).

    Example:
        >>> model = burn.onnx.load("resnet18.onnx", backend="cuda")  # doctest: +SKIP
        >>> logits = model(images)  # doctest: +SKIP
    """
    name = "<bytes>" if isinstance(source, (bytes, bytearray, memoryview)) else \
        os.fspath(source)
    model = read_model(source)
    _check_supported(model, name)
    target = default_backend() if backend is None else backend_for(backend)
    return OnnxModel(model, target, name)


# ---- checks made once, at load ----

def _check_supported(model: Model, source: str) -> None:
    """Every node's operator is one burn runs, in an opset it follows; otherwise one error
    that lists every node it cannot run, so nothing is found one failure at a time."""
    opset = model.opsets.get("", None)
    if opset is not None and opset not in OPSETS:
        raise BurnError(f"burn.onnx: {source} uses opset {opset}; burn reads opsets "
                        f"{OPSETS.start}-{OPSETS.stop - 1} (convert it with "
                        f"onnx.version_converter)")
    missing: dict[str, list[str]] = {}
    for where, node in all_nodes(model.graph):  # the bodies of If, Loop and Scan too
        if node.domain not in ("", "ai.onnx") or (node.op_type not in OPERATORS
                                                  and node.op_type not in CONTROL_FLOW):
            label = node.op_type if not node.domain else f"{node.domain}.{node.op_type}"
            missing.setdefault(label, []).append(node.name or where)
    if missing:
        listed = "; ".join(f"{op} ({len(names)} node{'s' * (len(names) > 1)}, first "
                           f"{names[0]!r})" for op, names in sorted(missing.items()))
        raise BurnError(f"burn.onnx: {source} has operators burn does not run yet: {listed}. "
                        f"burn runs: {', '.join(sorted([*OPERATORS, *CONTROL_FLOW]))}")


def _fold(graph: Graph, opset: int, constants: dict[str, Tensor], params: set[str],
          source: str) -> tuple[dict[str, Tensor], list[_Step]]:
    """Run on the host every node whose inputs are all constants; the rest is the plan.
    Also checks that each node's inputs are defined before it (ONNX's topological order)."""
    known = set(constants) | params | {v.name for v in graph.inputs}
    steps = []
    for index, node in enumerate(graph.nodes):
        attrs = Attributes(node.attributes, node.op_type, opset,
                           outputs=sum(1 for name in node.outputs if name))
        for name in node_reads(node):  # a subgraph's reads of this graph's values too
            if name not in known:
                raise BurnError(f"burn.onnx: {_where(source, index, node)} reads {name!r}, "
                                f"which no earlier node, input or initializer defines")
        if node.op_type not in CONTROL_FLOW and all(not name or name in constants
                                                    for name in node.inputs):
            try:
                arguments = _arguments(OPERATORS[node.op_type], node, constants,
                                       lambda name, value, backend: value.to(backend))
                produced = OPERATORS[node.op_type].run(attrs, *arguments)
            except Exception as error:
                raise BurnError(f"burn.onnx: {_where(source, index, node)} failed on its "
                                f"constant inputs: {error}") from error
            _store(constants, node, produced, source, index)
        else:
            steps.append(_Step(index, node, attrs, ()))
        known.update(name for name in node.outputs if name)
    return constants, steps


def _shaped(steps: list[_Step], constants: set[str]) -> list[_Step]:
    """Mark the steps that compute from shapes and constants only: ``Shape``/``Size`` (which
    read a tensor's shape, not its values) and what only they and constants feed. A shape
    that depends on values (a ``Reshape`` or ``TopK`` steered by a computed number) is not
    one the inputs' shapes fix: a ``Shape`` of it is not marked."""
    known, value_shaped, marked = set(constants), set(), []
    for step in steps:
        node = step.node
        if node.op_type in CONTROL_FLOW:  # what a branch or a loop computes: values
            value_shaped.update(name for name in node.outputs if name)
            marked.append(step)
            continue
        op = OPERATORS[node.op_type]
        if node.op_type in ("Shape", "Size"):
            shaped = node.inputs[0] not in value_shaped
        else:
            shaped = all(not name or name in known for name in node.inputs)
        outputs = [name for name in node.outputs if name]
        if shaped:
            known.update(outputs)
        elif any(name and ((i in op.host and name not in known) or name in value_shaped)
                 for i, name in enumerate(node.inputs)):
            value_shaped.update(outputs)
        marked.append(replace(step, shaped=shaped))
    return marked


def _with_frees(steps: list[_Step], outputs: list[str], kept: set[str]) -> list[_Step]:
    """Each step frees the values that no later step (nor the output) reads, so a deep
    graph holds only its live activations."""
    last_use: dict[str, int] = {}
    for position, step in enumerate(steps):
        for name in (*node_reads(step.node), *step.node.outputs):
            if name:
                last_use[name] = position
    keep = set(outputs) | kept
    freed: dict[int, list[str]] = {}
    for name, position in last_use.items():
        if name not in keep:
            freed.setdefault(position, []).append(name)
    return [replace(s, frees=tuple(freed.get(p, ()))) for p, s in enumerate(steps)]


# ---- one node ----

def _arguments(op: Any, node: Node, env: dict[str, Tensor], place: Any) -> list[Any]:
    """The node's inputs as its operator takes them: host inputs as NumPy arrays, the rest
    on one backend (the device when any of them lives there, else the host)."""
    values = [env[name] if name else None for name in node.inputs]
    while values and values[-1] is None:
        values.pop()
    if op.raw:
        return values
    data = [(i, v) for i, v in enumerate(values) if v is not None and i not in op.host]
    devices = [v.backend for _, v in data if v.backend is not _HOST]
    target = devices[0] if devices else _HOST
    arguments: list[Any] = []
    for i, value in enumerate(values):
        if value is None:
            arguments.append(None)
        elif i in op.host:
            arguments.append(value.numpy())
        else:
            arguments.append(place(node.inputs[i], value, target))
    return arguments


def _store(env: dict[str, Tensor], node: Node, produced: Any, source: str, index: int) -> None:
    results = list(produced) if isinstance(produced, (list, tuple)) else [produced]
    names = [name for name in node.outputs]
    if len(results) < sum(1 for name in names if name):
        raise BurnError(f"burn.onnx: {_where(source, index, node)} has {len(names)} outputs; "
                        f"burn computes {len(results)}")
    for name, value in zip(names, results):
        if name:
            env[name] = value


def _where(source: str, index: int, node: Node) -> str:
    label = f"{node.name!r} " if node.name else ""
    return f"{os.path.basename(source)}: node {index} {label}({node.op_type})"


def _fits(shape: tuple[int, ...], declared: tuple[int | str | None, ...]) -> bool:
    return len(shape) == len(declared) and all(
        not isinstance(d, int) or d == s for s, d in zip(shape, declared))
