"""Writes the torch-exported models that tests/burn/test_onnx_models.py imports: the small
ResNet and the transformer encoder of ``onnx_gpu_bench.py``, exported by torch's TorchScript
exporter at opset 17 (``torch_<name>``) and by its ``torch.export`` exporter, torch's default
since 2.9, at the opset it picks (``torch_<name>_dynamo``; needs onnxscript), each with an
input and torch's output for it.

Run by hand where torch is installed (CI has no torch; the files are committed):
``python bench/export_onnx_fixtures.py`` writes ``tests/burn/data/torch_<name>[_dynamo].onnx``
and ``.npz``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from onnx_gpu_bench import SmallResNet, encoder, exported  # noqa: E402

FOLDER = Path(__file__).resolve().parents[1] / "tests" / "burn" / "data"


def main() -> None:
    FOLDER.mkdir(exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    models = {"resnet": (SmallResNet(8, 5), rng.normal(size=(2, 3, 12, 12))),
              "encoder": (encoder(16, 4, 2), rng.normal(size=(2, 7, 16)))}
    for name, (model, x) in models.items():
        with torch.no_grad():
            for m in model.modules():  # batch-norm statistics that are not the identity
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.5, 0.5)
                    m.running_var.uniform_(0.5, 2.0)
            x = torch.from_numpy(x.astype(np.float32))
            y = model.eval()(x)
        (FOLDER / f"torch_{name}.onnx").write_bytes(exported(model, x))
        np.savez(FOLDER / f"torch_{name}.npz", x=x.numpy(), y=y.numpy())
        program = torch.onnx.export(model, (x,), dynamo=True,
                                    dynamic_shapes=({0: torch.export.Dim("batch")},))
        (FOLDER / f"torch_{name}_dynamo.onnx").write_bytes(
            program.model_proto.SerializeToString())
        np.savez(FOLDER / f"torch_{name}_dynamo.npz", x=x.numpy(), y=y.numpy())
        print(f"wrote torch_{name}.onnx, torch_{name}_dynamo.onnx and their .npz")


if __name__ == "__main__":
    main()
