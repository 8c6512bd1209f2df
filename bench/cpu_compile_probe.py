"""Cold compile time of burn ops on the cpu target: this checkout against another one.

Each op's first call in a fresh process with empty caches (cubepy's and Numba's, so that the
helpers compile too) is almost all compiling (Numba's
typing, lowering and LLVM, then the native image). Both checkouts run the same ops in turns,
each in its own child process, so that the ratio compares like with like on one machine:

    .venv/bin/python bench/cpu_compile_probe.py --other /tmp/before [--turns 2]

``--other`` is a checkout of the revision to compare with (``git worktree add /tmp/before REV``).
Prints one markdown row per op: the median first-call seconds of each checkout and the ratio.
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
times = {}
for name, op in ops.items():
    start = time.perf_counter()
    op().numpy()
    times[name] = time.perf_counter() - start
print(json.dumps(times))
"""


def run_child(repo: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="cubepy-cold-") as cache_dir:
        # NUMBA_CACHE_DIR too: Numba keeps the helpers' binaries beside their source otherwise
        env = {**os.environ, "CUBEPY_CACHE_DIR": cache_dir, "NUMBA_CACHE_DIR": cache_dir,
               "PYTHONPATH": str(repo)}
        done = subprocess.run([sys.executable, "-c", CHILD], cwd=repo, env=env, check=True,
                              capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True,
                        help="a checkout of the revision to compare with")
    parser.add_argument("--turns", type=int, default=2, help="children per checkout")
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, float]]] = {"this": [], "other": []}
    for turn in range(args.turns):
        for label, repo in (("other", args.other.resolve()), ("this", THIS_REPO)):
            runs[label].append(run_child(repo))
            total = sum(runs[label][-1].values())
            print(f"turn {turn + 1}/{args.turns}, {label}: {total:.1f} s", file=sys.stderr)
    print("| op | other checkout (s) | this checkout (s) | this / other |")
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
