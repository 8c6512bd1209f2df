"""Command line of the differential fuzzer (see the package docstring): run as
`python bench/fuzz_differential.py`, `python bench/fuzz` or `python -m bench.fuzz`."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, as other bench scripts

from fuzz.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
