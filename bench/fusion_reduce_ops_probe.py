"""Fused against unfused row sums of one unary op on the cpu target: ``op(x - c).sum(1)``
on 1024 x 1024 (``c`` each row's max, broadcast along the row; ``sqrt`` and ``log1p`` take
``c - x``), float32 and bfloat16, under ``burn.Fusion(burn.Cpu())``: fused, the chain is
computed in the reduction's kernel; unfused, it is computed by its own kernel first, then
reduced. Milliseconds per call, medians of 7 after two; "unfused / fused" above 1: fusing
pays.

    make .venv/.stamp-dev && .venv/bin/python bench/fusion_reduce_ops_probe.py [--ops exp,sqrt]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / ".cache" / "bench-torch")]

from norm_backward_cpu_bench import milliseconds  # noqa: E402

import burn  # noqa: E402

OPS = ("exp", "tanh", "sigmoid", "sin", "log1p", "sqrt", "abs", "square")


def fused_and_unfused_ms(fusion: burn.Fusion, a: burn.Tensor, c: burn.Tensor, op: str
                         ) -> tuple[float, float]:
    """Milliseconds of ``op``'s row sum fused, then unfused (the chain realized first)."""
    def chain() -> burn.Tensor:
        return getattr(c - a if op in ("sqrt", "log1p") else a - c, op)()

    def unfused() -> burn.Tensor:
        value = chain()
        fusion.realize(value)
        return fusion.realize(value.sum(1))

    return milliseconds(lambda: fusion.realize(chain().sum(1))), milliseconds(unfused)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated unary ops")
    ops = parser.parse_args().ops.split(",")
    fusion = burn.Fusion(burn.Cpu())
    x = np.random.default_rng(0).uniform(-1, 1, (1024, 1024)).astype(np.float32)
    peak = x.max(axis=1, keepdims=True)
    for dtype in ("float32", "bfloat16"):
        a, c = (burn.from_numpy(v, backend=fusion).to(getattr(burn, dtype)) for v in (x, peak))
        for op in ops:
            fused_ms, unfused_ms = fused_and_unfused_ms(fusion, a, c, op)
            print(json.dumps({"op": op, "dtype": dtype, "fused_ms": round(fused_ms, 3),
                              "unfused_ms": round(unfused_ms, 3),
                              "unfused_over_fused": round(unfused_ms / fused_ms, 2)}),
                  flush=True)


if __name__ == "__main__":
    main()
