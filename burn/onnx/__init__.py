"""ONNX import: ``burn.onnx.load("model.onnx")`` is the exported model as a burn module.

The file is read by burn itself (``proto``: the protobuf wire format, external data files
included), so importing a model needs neither the ``onnx`` nor the ``protobuf`` package.
Every operator runs as burn ops on the model's backend (``registry``, ``math_ops``,
``shape_ops``, ``nn_ops``, ``resize``); shape arithmetic runs on the host; the float weights
are the module's parameters, so an imported model can be fine-tuned.

Example:
    >>> model = burn.onnx.load("classifier.onnx", backend="cpu")  # doctest: +SKIP
    >>> model(np.zeros((1, 3, 32, 32), np.float32)).shape  # doctest: +SKIP
    (1, 10)
"""

from .model import OPSETS, OnnxModel, load
from .registry import OPERATORS

__all__ = ["OPERATORS", "OPSETS", "OnnxModel", "load"]
