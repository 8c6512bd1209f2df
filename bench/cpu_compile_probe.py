"""Cold compile time of cpu kernels: this checkout against another one, or two levels.

Each op's first call in a fresh process with empty caches (cubepy's and Numba's, so that the
helpers compile too) is almost all compiling (Numba's typing, lowering and LLVM, then the
native image). The ops are eight burn ops, then three of cubepy's own tile kernels (asv's
softmax and matmul, the example flash attention). Both sides run the same ops in turns, each
in its own child process, so that the ratio compares like with like on one machine:

    .venv/bin/python bench/cpu_compile_probe.py --other /tmp/before [--turns 2]
    .venv/bin/python bench/cpu_compile_probe.py --levels 3,2 [--turns 2]

``--other`` is a checkout of the revision to compare with (``git worktree add /tmp/before REV``);
``--levels A,B`` compares ``CUBEPY_CPU_OPT=A`` (the "other" column) with ``B`` in this checkout.
Prints one markdown row per op: the median first-call seconds of each side and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

THIS_REPO = Path(__file__).resolve().parents[1]

# One child's work: each op's first call, timed; what it computes is checked by the test suite.
CHILD = r"""
import json, sys, time
import numpy as np
import burn

rng = np.random.default_rng(0)
long_row = rng.standard_normal(100_000).astype(np.float32)
ints = rng.integers(-3, 4, 100_000).astype(np.int32)
rows = rng.standard_normal((64, 300)).astype(np.float32)
a = rng.standard_normal((128, 64)).astype(np.float32)
b = rng.standard_normal((64, 96)).astype(np.float32)
image = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
weight = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)

def on(x):
    return burn.from_numpy(x, backend="cpu")

ops = {
    "sum, long row": lambda: on(long_row).sum(),
    "argmin, long row": lambda: on(long_row).argmin(),
    "var, long row": lambda: on(long_row).var(),
    "cumsum int32, long row": lambda: on(ints).cumsum(0),
    "layer_norm 64x300": lambda: burn.layer_norm(on(rows), 300),
    "softmax 64x300": lambda: burn.softmax(on(rows), -1),
    "matmul 128x64x96": lambda: burn.matmul(on(a), on(b)),
    "conv2d 2x3x9x8 * 4x3x3x3": lambda: burn.conv2d(on(image), on(weight)),
}
try:  # cubepy's own tile kernels: in the other checkout too, where it has them
    from asv_bench import cpu_kernels
    from examples import flash_attention
    q = rng.standard_normal((1, 2, 64, 32)).astype(np.float32)
    ops["asv softmax 64x300 (tile)"] = lambda: cpu_kernels.softmax(rows, target="cpu")
    ops["asv matmul 128x64x96 (tile, dot)"] = lambda: cpu_kernels.matmul(
        a, b, target="cpu", blocks=(32, 32, 32))
    ops["flash attention 1x2x64x32 (tile)"] = lambda: flash_attention.attention(
        q, q, q, np.empty_like(q), block_m=32, block_n=32, target="cpu")
except ImportError:
    pass
times = {}
for name, op in ops.items():
    start = time.perf_counter()
    result = op()
    getattr(result, "numpy", lambda: result)()
    times[name] = time.perf_counter() - start
print(json.dumps(times))
"""


def run_child(repo: Path, level: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="cubepy-cold-") as cache_dir:
        # NUMBA_CACHE_DIR too: Numba keeps the helpers' binaries beside their source otherwise
        env = {**os.environ, "CUBEPY_CACHE_DIR": cache_dir, "NUMBA_CACHE_DIR": cache_dir,
               "PYTHONPATH": str(repo)}
        if level is not None:
            env["CUBEPY_CPU_OPT"] = level
        done = subprocess.run([sys.executable, "-c", CHILD], cwd=repo, env=env, check=True,
                              capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    side = parser.add_mutually_exclusive_group(required=True)
    side.add_argument("--other", type=Path, help="a checkout of the revision to compare with")
    side.add_argument("--levels", help="two CUBEPY_CPU_OPT levels to compare, e.g. 3,2")
    parser.add_argument("--turns", type=int, default=2, help="children per side")
    args = parser.parse_args(argv)
    if args.levels:
        other_level, this_level = args.levels.split(",")
        sides = {"other": (THIS_REPO, other_level), "this": (THIS_REPO, this_level)}
        names = (f"level {other_level}", f"level {this_level}")
    else:
        sides = {"other": (args.other.resolve(), None), "this": (THIS_REPO, None)}
        names = ("other checkout", "this checkout")
    runs: dict[str, list[dict[str, float]]] = {"this": [], "other": []}
    for turn in range(args.turns):
        for label, (repo, level) in sides.items():
            runs[label].append(run_child(repo, level))
            total = sum(runs[label][-1].values())
            print(f"turn {turn + 1}/{args.turns}, {label}: {total:.1f} s", file=sys.stderr)
    print(f"| op | {names[0]} (s) | {names[1]} (s) | ratio |")
    print("| --- | --- | --- | --- |")
    for name in runs["this"][0]:
        other = statistics.median(r[name] for r in runs["other"])
        this = statistics.median(r[name] for r in runs["this"])
        print(f"| {name} | {other:.2f} | {this:.2f} | {this / other:.2f} |")
    other = statistics.median(sum(r.values()) for r in runs["other"])
    this = statistics.median(sum(r.values()) for r in runs["this"])
    print(f"| all | {other:.2f} | {this:.2f} | {this / other:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
