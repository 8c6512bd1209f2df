"""16-bit floats on the cpu target: an add, an exp, a layer norm and a row sum of a
4096 x 1024 tensor in bfloat16 and float16, beside the same op in float32 (the peer, in the
same process). Milliseconds per call, medians of five after two warm-up calls (which
compile). 16-bit values are stored as 16 bits and computed in float32 registers, so each
element is converted on its way in and out; this measures what those conversions cost.

    make .venv/.stamp-dev && .venv/bin/python bench/cpu_half_probe.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import burn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from norm_backward_cpu_bench import milliseconds  # noqa: E402


def main() -> None:
    cpu = burn.Cpu()
    values = np.random.default_rng(0).standard_normal((4096, 1024)).astype(np.float32)
    x32 = burn.from_numpy(values, backend=cpu)
    ops = {"add": lambda x: x + x, "exp": lambda x: x.exp(),
           "layer_norm": lambda x: burn.layer_norm(x, 1024), "row sum": lambda x: x.sum(axis=1)}
    for name, op in ops.items():
        row = {"op": name, "shape": [4096, 1024]}
        for dtype in ("float32", "bfloat16", "float16"):
            x = x32.to(dtype)
            row[f"{dtype}_ms"] = round(milliseconds(lambda x=x, op=op: op(x), samples=5), 2)
        for dtype in ("bfloat16", "float16"):
            row[f"{dtype}_over_float32"] = round(row[f"{dtype}_ms"] / row["float32_ms"], 2)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
