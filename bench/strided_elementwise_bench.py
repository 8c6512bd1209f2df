"""Elementwise ops on strided operands on the cpu target: read row by row (each row's offset
once per cube, ``kernels.strided.by_rows``) against the same kernels finding every element's
offset by division (``CPU_ROW_LANES`` raised past every row, in the same process), NumPy's
and torch's same op, and burn's op on contiguous operands as the dense peer.

Each row: a (rows, cols) float32 product ``x * y`` where y is broadcast along the rows, along
the columns, or x is a transposed view; milliseconds per call, medians of 7 after two.

    make .venv/.stamp-dev && .venv/bin/python bench/strided_elementwise_bench.py \
        [--shapes 8192x128,16384x64]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from norm_backward_cpu_bench import milliseconds  # noqa: E402

import burn  # noqa: E402
from kernels import strided  # noqa: E402

SHAPES = [(1024, 1024), (4096, 512), (256, 4096)]
CASES = ("row broadcast", "column broadcast", "transposed")


def operands(case: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if case == "row broadcast":
        return x, y[0]
    if case == "column broadcast":
        return x, y[:, :1]
    return np.ascontiguousarray(x.T), y  # burn and torch read it transposed: x.T * y


def timed(case: str, a, b) -> float:
    if case == "transposed":
        return milliseconds(lambda: a.T * b)
    return milliseconds(lambda: a * b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=lambda text: [tuple(map(int, s.split("x")))
                                                       for s in text.split(",")],
                        default=SHAPES, help="rows x cols, comma-separated")
    shapes = parser.parse_args().shapes
    cpu = burn.Cpu()
    print(json.dumps({"backend": "cpu", "torch": torch.__version__,
                      "threads": torch.get_num_threads()}), flush=True)
    rng = np.random.default_rng(0)
    for shape in shapes:
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        y = rng.uniform(-1, 1, shape).astype(np.float32)
        dense_x, dense_y = (burn.from_numpy(v, backend=cpu) for v in (x, y))
        dense_ms = timed("dense", dense_x, dense_y)
        for case in CASES:
            a, b = operands(case, x, y)
            ba, bb = (burn.from_numpy(v, backend=cpu) for v in (a, b))
            by_row_ms = timed(case, ba, bb)
            limit = strided.CPU_ROW_LANES
            strided.CPU_ROW_LANES = 1 << 62  # every row too short: the division path
            try:
                divided_ms = timed(case, ba, bb)
            finally:
                strided.CPU_ROW_LANES = limit
            numpy_ms = timed(case, a, b)
            torch_ms = timed(case, torch.from_numpy(a), torch.from_numpy(b))
            got = (ba.T * bb if case == "transposed" else ba * bb).numpy()
            assert np.array_equal(got, a.T * b if case == "transposed" else a * b)
            print(json.dumps({
                "shape": list(shape), "case": case, "by_row_ms": round(by_row_ms, 3),
                "divided_ms": round(divided_ms, 3), "numpy_ms": round(numpy_ms, 3),
                "torch_ms": round(torch_ms, 3), "dense_ms": round(dense_ms, 3),
                "divided_over_by_row": round(divided_ms / by_row_ms, 2),
                "numpy_over_by_row": round(numpy_ms / by_row_ms, 2),
                "torch_over_by_row": round(torch_ms / by_row_ms, 2),
                "dense_over_by_row": round(dense_ms / by_row_ms, 2)}), flush=True)


if __name__ == "__main__":
    main()
