"""The table of ONNX operators burn runs, and what each implementation is given.

An operator is a function ``run(attrs, *inputs)`` registered under its ONNX names with
``@operator("Relu")``. Its inputs arrive in the node's order, ``None`` for an omitted optional
input. Inputs that only steer the computation (a shape, axes, a count) are listed as
``host=``: they arrive as NumPy arrays, read once on the host. The other inputs arrive as
burn tensors on one backend: the device the model runs on, or the host's ``NumPy`` backend
when every one of them is known without the model's inputs (constant folding, shape
arithmetic). ``raw=True`` operators (``Shape``) get their tensors where they are.

Example:
    >>> attrs = burn.onnx.registry.Attributes({}, "Relu")
    >>> burn.onnx.OPERATORS["Relu"].run(attrs, burn.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

import cubepy as cube

from ..backend.base import Backend, BurnError
from ..tensor import family_functions
from ..tensor.tensor import Tensor
from .proto import TYPE_NAMES

#: burn's tensor functions by name (``ops.matmul``), as the operators call them
ops = SimpleNamespace(**family_functions())


@dataclass(frozen=True)
class Operator:
    """One ONNX operator: ``run(attrs, *inputs)`` returns a tensor or a list of them."""

    run: Callable[..., Any]
    host: frozenset[int] = frozenset()
    raw: bool = False


OPERATORS: dict[str, Operator] = {}


def operator(*names: str, host: Sequence[int] = (), raw: bool = False
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the ONNX operators ``names``."""
    def register(run: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            OPERATORS[name] = Operator(run, frozenset(host), raw)
        return run
    return register


class Attributes:
    """A node's attributes, read with the type and default the ONNX specification gives,
    and the opset the model was exported with (``version``). ``state`` keeps what one node
    carries from call to call (a seeded ``Dropout``'s random stream)."""

    def __init__(self, values: dict[str, Any], op_type: str, version: int = 21,
                 outputs: int = 1):
        self.values, self.op_type, self.version, self.outputs = values, op_type, version, outputs
        self.state: dict[str, Any] = {}

    def int(self, name: str, default: int | None = None) -> int:
        return int(self._get(name, default))

    def float(self, name: str, default: float | None = None) -> float:
        return float(self._get(name, default))

    def str(self, name: str, default: str | None = None) -> str:
        value = self._get(name, default)
        return value.decode() if isinstance(value, bytes) else str(value)

    def ints(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        value = self.values.get(name, default)
        return None if value is None else [int(v) for v in np.ravel(value)]

    def has(self, name: str) -> bool:
        return name in self.values

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def refuse(self, what: str, instead: str) -> BurnError:
        """The error for an attribute value or input burn does not run."""
        return BurnError(f"{self.op_type}: {what} is not supported yet; {instead}")

    def _get(self, name: str, default: Any) -> Any:
        if name in self.values:
            return self.values[name]
        if default is None:
            raise BurnError(f"{self.op_type}: the node has no {name!r} attribute, which this "
                            f"operator needs")
        return default


# TensorProto.DataType numbers (onnx.proto) of the element types burn holds
ONNX_DTYPES: dict[int, cube.DType] = {
    1: cube.float32, 2: cube.uint8, 3: cube.int8, 5: cube.int16, 6: cube.int32,
    7: cube.int64, 9: cube.bool, 10: cube.float16, 11: cube.float64, 12: cube.uint32,
    16: cube.bfloat16,
}


def onnx_dtype(number: int, where: str) -> cube.DType:
    """The burn dtype of ONNX element type ``number``."""
    if number not in ONNX_DTYPES:
        name = TYPE_NAMES.get(number, f"type {number}")
        raise BurnError(f"{where}: ONNX element type {name} has no burn dtype (burn holds "
                        f"{', '.join(sorted(d.name for d in ONNX_DTYPES.values()))})")
    return ONNX_DTYPES[number]


def stored_dtype(dtype: cube.DType, backend: Backend) -> cube.DType:
    """``dtype`` as ``backend`` stores it: int64 (ONNX's type of every index and shape)
    becomes int32 on a device without 64-bit integers, as WebGPU runtimes do."""
    if dtype == cube.int64 and "int64" not in backend.dtypes:
        return cube.int32
    return dtype


def to_backend(value: Tensor, backend: Backend) -> Tensor:
    """``value`` moved to ``backend``; int64 values narrowed where that backend stores
    int32 (checked: an index past 2**31 is an error, not a wrapped number)."""
    dtype = stored_dtype(value.dtype, backend)
    if dtype != value.dtype:
        array = value.numpy()
        if array.size and (array.min() < -(2**31) or array.max() >= 2**31):
            raise BurnError(f"an int64 value reaches {array.max()} (or {array.min()}), past "
                            f"int32, and {backend!r} has no int64")
        return Tensor(backend.from_numpy(array.astype(np.int32)), backend)
    return value.to(backend)


def axis_of(axis: int, rank: int, op_type: str) -> int:
    """``axis`` counted from the front (ONNX allows negative axes)."""
    if not -rank <= axis < max(rank, 1):
        raise BurnError(f"{op_type}: axis {axis} is out of range for a tensor of rank {rank}")
    return axis % max(rank, 1)
