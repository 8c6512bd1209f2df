"""Run an ONNX model with burn, then fine-tune its weights.

    python examples/onnx_import.py                          # the ResNet torch exported
    python examples/onnx_import.py model.onnx --backend cuda
    python examples/onnx_import.py --steps 20               # and 20 fine-tuning steps

``burn.onnx.load`` reads the file (no ``onnx`` package needed), checks that burn runs every
operator in it and returns a ``burn.nn.Module`` whose parameters are the model's weights.
This prints the model's inputs, outputs, operators and parameters, runs it on random inputs
of the declared shapes (a named dimension such as ``batch`` is given ``--batch``), and times
the forward pass. The default model, ``tests/burn/data/torch_resnet.onnx``, comes with the
output torch computed for a saved input: the example checks burn's against it and exits
non-zero on a mismatch. With ``--steps``, it fine-tunes the model on random targets with
``burn.train.Learner`` (the parameters keep their ONNX names in ``state_dict``) and checks
that the loss went down.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import burn

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "burn" / "data" / "torch_resnet.onnx"


def describe(model: burn.onnx.OnnxModel, path: Path) -> None:
    operators = model.operator_counts()
    print(f"{path.name}: opset {model.opset}, {sum(operators.values())} nodes to run "
          f"({', '.join(f'{op} {n}' for op, n in operators.items())})")
    for spec in model.inputs:
        print(f"  input  {spec.name}: {spec.shape}")
    for spec in model.outputs:
        print(f"  output {spec.name}: {spec.shape}")
    print(f"  {len(model.params)} parameters, {model.num_parameters():,} numbers")


def example_inputs(model: burn.onnx.OnnxModel, batch: int, rng: np.random.Generator
                   ) -> list[np.ndarray]:
    """Random inputs of the declared shapes and dtypes; named dimensions get ``batch``."""
    arrays = []
    for spec in model.inputs:
        shape = [d if isinstance(d, int) else batch for d in spec.shape or ()]
        dtype = burn.onnx.registry.onnx_dtype(spec.elem_type, spec.name).numpy
        arrays.append(rng.normal(size=shape).astype(dtype))
    return arrays


def fine_tune(model: burn.onnx.OnnxModel, inputs: list[np.ndarray], steps: int) -> bool:
    """``steps`` Adam steps towards random targets; True if the loss fell."""
    output = model(*inputs)
    target = np.random.default_rng(1).normal(size=output.shape).astype(np.float32)
    learner = burn.train.Learner(model, burn.optim.Adam(lr=1e-3), burn.nn.mse_loss,
                                 dashboard=False)
    learner.fit([(*inputs, target)], epochs=steps)
    losses = [record["train"]["loss"] for record in learner.history]
    print(f"fine-tuned {steps} steps: loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses[-1] < losses[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", type=Path, default=FIXTURE)
    parser.add_argument("--backend", default=None, help="cpu, cuda, wgpu or numpy")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--steps", type=int, default=0, help="fine-tuning steps afterwards")
    args = parser.parse_args(argv)
    backend = burn.backend_for(args.backend) if args.backend else burn.default_backend()
    started = time.perf_counter()
    model = burn.onnx.load(args.model, backend=backend)
    print(f"loaded in {time.perf_counter() - started:.2f} s on {backend!r} (read by burn)")
    describe(model, args.model)
    saved = args.model.with_suffix(".npz")
    inputs = [np.load(saved)["x"]] if saved.exists() else example_inputs(
        model, args.batch, np.random.default_rng(0))
    output = model(*inputs)
    first = output[0] if isinstance(output, tuple) else output
    first.numpy()
    started = time.perf_counter()
    for _ in range(5):
        result = model(*inputs)
    (result[0] if isinstance(result, tuple) else result).numpy()
    print(f"output {first.shape} {first.dtype.name}; forward pass "
          f"{(time.perf_counter() - started) / 5 * 1e3:.2f} ms")
    ok = True
    if saved.exists():
        error = float(np.abs(first.numpy() - np.load(saved)["y"]).max())
        ok = error < 1e-3
        print(f"largest difference from the exporter's output: {error:.2e} "
              f"({'ok' if ok else 'MISMATCH'})")
    if args.steps:
        ok = fine_tune(model, inputs, args.steps) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
