"""Random differential fuzzer: random kernels on every target, against NumPy.

    mkdir -p -m 700 /tmp/xdg-fuzz
    export XDG_RUNTIME_DIR=/tmp/xdg-fuzz TRITON_DEFAULT_FP_FUSION=1 CUBEPY_CACHE_DIR=/tmp/cc-fuzz
    .venv/bin/python bench/fuzz_differential.py --seed 1 --cases 200 \
        --targets cpu,cpu:debug,triton,wgsl [--minutes 30] [--draws 4] [--repros bench/fuzz_cases]

Each case is one random kernel: an expression tree over 1-3 inputs (loaded tiles, some with a
masked load's `other=`, or NumPy scalars), with arithmetic (+ - * / // % **), comparisons,
`where`, min/max, abs, casts between every dtype, bit ops and shifts on integers, math
functions, `fma`, and either stored elementwise (1-D, any length, not a multiple of the block)
or reduced along an axis of a 2-D tile (sum/max/min/argmax/argmin). The kernel is compiled once
per target and run on several input draws, which mix random values with edge values (zeros of
both signs, infinities, NaN, extreme integers, subnormals, values next to whole numbers).

The reference evaluates the same tree with NumPy under cubepy's rules (docs/language.md:
promotion, weak literals, integer `/` and `**` in float32, floor `//` and `%`, shifts past the
width, ...). It carries, per element, a bound on how far a correct target may be from it (one
rounding per inexact operation, since targets contract to fma, compute float16 in float32 or
divide by a reciprocal; a few ulps per math function) and marks elements whose result the docs
leave unspecified or that sit on a discontinuity within that bound (INT_MIN // -1, float->int
casts out of range or of NaN, the sign of a zero from max/min of mixed zeros or sin/tanh/erf of
-0.0, a comparison closer than the bound, ...). Those elements are skipped, not reported.

A mismatch is shrunk (one failing element, or the three around it; subtrees replaced by their
operands; one finding per target, class and set of operations, within --shrink-total) and, with
`--repros DIR`, written as a standalone script. The summary lists every distinct mismatch (the
unshrunk ones are printed before it) and how many (kernel, draw) runs per target were clean.
Classes: "value" (beyond the bound, or NaN/inf where NumPy has none or the reverse), "zero-sign",
"error" (an exception on one target but not all), "out-of-bounds store"; "(subnormals flushed)"
marks a value mismatch that goes away when subnormal inputs read as zero.

The fuzzing runs in a worker process that the command restarts after a crash (a segfault is
reported with the kernel that caused it): one process computes at a time. A cpu compile takes
seconds, so keep --cases modest or use --minutes. `--replay SEED,SEED` runs the printed case
seeds again (e.g. after changing the reference or the compiler).

The package (run it with `python bench/fuzz_differential.py`, `python bench/fuzz` or, from the
repository root, `python -m bench.fuzz`): dtypes (tables and promotion rules), tree (expression
trees: inference, rendering), generate (random trees), bounds and reference (the NumPy
reference with error bounds), draws (input values), cases (kernels, draws, the reference of a
case), run (compile, launch, compare), shrink, report (shrinking findings, repro scripts,
summary lines) and cli (options, the worker loop, the supervisor).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # cubepy from this checkout
