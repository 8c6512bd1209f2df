"""Random differential fuzzer: random kernels on every target, against NumPy.

The code lives in the package bench/fuzz/ (its docstring describes the fuzzer); this script
keeps the usual command line:

    mkdir -p -m 700 /tmp/xdg-fuzz
    export XDG_RUNTIME_DIR=/tmp/xdg-fuzz TRITON_DEFAULT_FP_FUSION=1 CUBEPY_CACHE_DIR=/tmp/cc-fuzz
    .venv/bin/python bench/fuzz_differential.py --seed 1 --cases 200 \
        --targets cpu,cpu:debug,triton,wgsl [--minutes 30] [--draws 4] [--repros bench/fuzz_cases]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
