"""Launching a compiled Triton kernel again without Triton's per-launch dispatch.

Every ``jit_fn[grid](*args)`` goes through ``JITFunction.run``: it binds the arguments,
specializes each one, builds the cache key and looks the compiled kernel up before calling the
kernel's C launcher. On the H200's host that dispatch is about 9 of a launch's 15 µs
(``bench/launch_probe.py``). A trusted launch (``TritonKernel.trusted_launcher``: arguments
whose kinds, dtypes and device the JIT's fast-path key has fixed) can find the same compiled
kernel from what else Triton specializes on:

- pointers: the address divisible by 16 or not;
- integers: equal to 1 (a constant in the kernel), divisible by 16, and their width (i32,
  i64 or u64);
- floats and bools: nothing.

``DirectLauncher`` keys the kernels Triton returned by exactly that. A launch with a key not
seen yet goes through ``JITFunction.run`` (which compiles or finds the kernel, launches it and
returns it); later launches with that key call the kernel's launcher as ``run`` does, on the
current device's current stream, with Triton's launch hooks and metadata (so profilers see
them). Triton's own knobs (``TRITON_DEBUG`` and the like) changed inside a process after a
launch are not seen, as they are part of Triton's key and not of this one.

Example:
    >>> launch = DirectLauncher(jit_fn, {"num_warps": 4})  # doctest: +SKIP
    >>> launch((8, 1, 1), [x, y, out, 1024])  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

_INT32 = (-(2**31), 2**31)
_MAX_KERNELS = 64  # specializations kept per launcher: a handful in practice


def _int_class(value: int) -> int:
    """What Triton specializes an integer argument on, as one small int: its width (i32, i64,
    u64), whether it is 1 and whether 16 divides it."""
    width = 0 if _INT32[0] <= value < _INT32[1] else (1 if value < 2**63 else 2)
    return width * 4 + (value == 1) * 2 + (value % 16 == 0)


class DirectLauncher:
    """Launches ``jit_fn`` with ``options`` (``num_warps``...) on GPU arrays and numbers,
    through Triton's dispatch once per specialization and straight to its launcher after."""

    def __init__(self, jit_fn: Any, options: dict[str, int]):
        from triton import knobs
        from triton.runtime import driver

        self.jit_fn = jit_fn
        self.options = options
        self.kernels: dict[tuple, Any] = {}
        self.runtime = knobs.runtime  # launch hooks: read at every launch, as Triton does
        active = driver.active  # a lazy proxy: resolved once, not per launch
        self.current_device = active.get_current_device
        self.current_stream = active.get_current_stream
        self.direct = True  # False once this Triton's launcher refused our call

    def __call__(self, grid: tuple[int, int, int], args: list[Any]) -> None:
        key = self._specialization(args)
        kernel = self.kernels.get(key) if self.direct else None
        if kernel is None:
            kernel = self.jit_fn.run(*args, grid=grid, warmup=False, **self.options)
            if kernel is not None and len(self.kernels) < _MAX_KERNELS:
                self.kernels[key] = kernel
            return
        stream = self.current_stream(self.current_device())
        runtime = self.runtime
        metadata = kernel.launch_metadata(grid, stream, *args)
        try:
            kernel.run(grid[0], grid[1], grid[2], stream, kernel.function,
                       kernel.packed_metadata, metadata, runtime.launch_enter_hook,
                       runtime.launch_exit_hook, *args)
        except (TypeError, AttributeError):
            # another Triton's launcher signature: these are raised while reading the
            # arguments, before anything runs, so the launch goes through Triton instead
            self.direct = False
            self.jit_fn.run(*args, grid=grid, warmup=False, **self.options)

    @staticmethod
    def _specialization(args: list[Any]) -> tuple:
        key = []
        for arg in args:
            kind = type(arg)
            if kind is int:
                key.append(_int_class(arg))
            elif kind is not float and kind is not bool:  # a GPU array: its alignment
                key.append(arg.data_ptr() % 16 == 0)
        return tuple(key)
