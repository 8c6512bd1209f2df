"""torch models exported to ONNX and imported with ``burn.onnx``: do they load, do they agree
with torch, and what does a forward pass cost next to torch and onnxruntime in one process.

Models: a small ResNet (conv, batch norm, residual adds, pooling, a linear head) and a
transformer encoder (``nn.TransformerEncoderLayer``: attention, layer norm, GELU MLP).
Each is exported by ``torch.onnx.export`` (the TorchScript exporter, opset 17), loaded with
``burn.onnx.load`` on the backend asked for (plain and under ``Fusion``), checked against
torch's output, and timed: the median of ``--repeats`` forward passes, each synchronized.

Usage: ``python3 bench/onnx_gpu_bench.py --backend cuda --out results.json``
(``--backend cpu`` with ``--small`` runs on a machine without a GPU).
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import burn  # noqa: E402


class Block(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class SmallResNet(nn.Module):
    def __init__(self, width: int = 64, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2))
        self.blocks = nn.Sequential(Block(width), Block(width))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        y = self.blocks(self.stem(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def encoder(width: int, heads: int, layers: int) -> nn.Module:
    layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                       activation="gelu", batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def exported(model: nn.Module, example: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    torch.onnx.export(model.eval(), (example,), buffer, opset_version=17, dynamo=False,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return buffer.getvalue()


def timed(run, sync, repeats: int) -> float:
    for _ in range(3):
        run()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def measure(name: str, model: nn.Module, x: np.ndarray, backend: str, repeats: int) -> dict:
    torch.manual_seed(0)
    with torch.no_grad():
        for m in model.modules():  # batch-norm statistics that are not the identity
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    data = exported(model, torch.from_numpy(x))
    record: dict = {"model": name, "input": list(x.shape), "onnx_bytes": len(data)}
    device = "cuda" if torch.cuda.is_available() else "cpu"  # the peer: torch on the GPU
    torch_model, torch_x = model.eval().to(device), torch.from_numpy(x).to(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.no_grad():
        expected = torch_model(torch_x).cpu().numpy()
        record["torch_us"] = timed(lambda: torch_model(torch_x), sync, repeats)
    started = time.perf_counter()
    for label, target in [("burn", burn.backend_for(backend)),
                          ("burn_fusion", burn.Fusion(burn.backend_for(backend)))]:
        loaded = burn.onnx.load(data, backend=target)
        record.setdefault("load_s", time.perf_counter() - started)
        record["nodes"] = sum(loaded.operator_counts().values())
        bx = burn.from_numpy(x, backend=target)
        got = loaded(bx).numpy()
        record[f"{label}_max_error"] = float(np.abs(got - expected).max())
        record[f"{label}_us"] = timed(lambda m=loaded, v=bx: m(v).numpy() if backend == "cpu"
                                      else m(v), lambda t=target: _sync(t), repeats)
        record[f"{label}_vs_torch"] = record["torch_us"] / record[f"{label}_us"]
    if backend == "cuda" and torch.cuda.is_available():
        record.update(_captured(data, x, expected, repeats))
    record.update(_onnxruntime(data, x, repeats))
    if "burn_captured_us" in record:
        record["burn_captured_vs_torch"] = record["torch_us"] / record["burn_captured_us"]
    print(json.dumps(record), flush=True)
    return record


def _captured(data: bytes, x: np.ndarray, expected: np.ndarray, repeats: int) -> dict:
    """The imported model's forward pass captured as one CUDA graph (no host cost per op)."""
    backend = burn.backend_for("cuda")
    loaded = burn.onnx.load(data, backend=backend)
    step = burn.train.CapturedStep(lambda model, v: (model, model(v)))
    bx = burn.from_numpy(x, backend=backend)
    for _ in range(4):  # three warm-up calls, then the capture
        _, y = step(loaded, bx)
    run = lambda: step(loaded, bx)  # noqa: E731
    return {"burn_captured_max_error": float(np.abs(y.numpy() - expected).max()),
            "burn_captured_us": timed(run, lambda: _sync(backend), repeats)}


def _sync(backend: burn.Backend) -> None:
    burn.zeros(1, backend=backend).numpy()  # a read waits for the queue


def _onnxruntime(data: bytes, x: np.ndarray, repeats: int) -> dict:
    try:
        import onnxruntime as ort
    except ImportError:
        return {"onnxruntime": "not installed"}
    wanted = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider")
              if p in ort.get_available_providers()]
    session = ort.InferenceSession(data, providers=wanted)
    run = lambda: session.run(None, {"x": x})  # noqa: E731
    return {"onnxruntime_provider": session.get_providers()[0],
            "onnxruntime_us": timed(run, lambda: None, repeats)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--small", action="store_true", help="shapes for a CPU smoke run")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    batch, side, seq, width = (2, 16, 16, 32) if args.small else (64, 64, 128, 512)
    records = [
        measure("resnet", SmallResNet(16 if args.small else 64),
                rng.normal(size=(batch, 3, side, side)).astype(np.float32), args.backend,
                args.repeats),
        measure("transformer_encoder", encoder(width, 4 if args.small else 8, 2),
                rng.normal(size=(batch, seq, width)).astype(np.float32), args.backend,
                args.repeats),
    ]
    if args.out:
        Path(args.out).write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
