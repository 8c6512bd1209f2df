"""The cost of the launch key's comptime part (BENCHMARKS.md, "The launch key's cost").

A cached launch keys its comptime keywords; since the fifteenth session the key holds each
value's type and a float's bits (`C=1` and `C=1.0`, `0.0` and `-0.0` compile apart). This
times building and hashing that part the old way and the new way, for the eight comptime
keywords burn's reduction passes.

    python bench/launch_key_probe.py
"""

from __future__ import annotations

import timeit

import cubepy as cube
from cubepy import config

KEYWORDS = dict(OP="sum", POST="none", AT=cube.float32, DT=cube.float32, ROW_RANK=1, COL_RANK=1,
                ROWS=4, BLOCK=1024)


def old_key(kwargs: dict) -> tuple:
    return (*kwargs.items(), config.generation())


def new_key(kwargs: dict) -> tuple:  # as Kernel._fast_key builds it
    signature: list = []
    append = signature.append
    for name, value in kwargs.items():
        kind = type(value)
        append(name)
        append(kind)
        append(value.hex() if kind is float else value)
    return (*signature, config.generation())


def main() -> None:
    for key in (old_key, new_key):
        best = min(timeit.repeat(lambda key=key: hash(key(KEYWORDS)), number=100_000,
                                 repeat=5)) / 100_000
        print(f"{key.__name__}: {best * 1e6:.2f} us")


if __name__ == "__main__":
    main()
