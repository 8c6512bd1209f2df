"""Creation kernels: ``full``, ``arange``, ``linspace``, ``eye`` into fresh contiguous views.

Values are computed in the result's register dtype (float32 for 16-bit floats; float64 and
int64 results in their own dtype), so ``arange`` of float32 matches ``start + i * step``
rounded once.

Example:
    >>> v = arange(ctx, 0.0, 0.5, 8, cube.float32)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cubepy as cube
from cubepy.ir.dtypes import DType

from .layout import Context, View, register, scalar


@cube.kernel
def fill_kernel(out, n, value, RT: cube.Comptime[object], DT: cube.Comptime[object],
                BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(out + idx, (cube.zeros((BLOCK,), RT) + value).to(DT), mask=idx < n)


@cube.kernel
def affine_kernel(out, n, start, step, last, stop, CT: cube.Comptime[object],
                  DT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    # start + i * step, and exactly `stop` at index `last` (linspace's end point)
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    v = start + idx.to(CT) * step
    v = cube.where(idx == last, stop, v)
    cube.store(out + idx, v.to(DT), mask=idx < n)


@cube.kernel
def eye_kernel(out, n, cols, DT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    diagonal = (idx // cols) == (idx % cols)
    cube.store(out + idx, cube.where(diagonal, 1, 0).to(DT), mask=idx < n)


def full(ctx: Context, shape: Sequence[int], value: Any, dtype: DType) -> View:
    """A tensor of ``shape`` with every element ``value``."""
    out = ctx.new(shape, dtype)
    n = out.numel
    block = ctx.block(n)
    value_dtype = cube.float32 if dtype.is_bool else register(dtype)
    fill_kernel[(cube.cdiv(n, block),)](out.storage, n, scalar(value, value_dtype), RT=value_dtype,
                                        DT=dtype, BLOCK=block, target=ctx.target)
    return out


def _affine(ctx: Context, start: float, step: float, n: int, last: int, stop: float,
            dtype: DType) -> View:
    out = ctx.new((n,), dtype)
    block = ctx.block(n)
    compute = register(dtype)
    affine_kernel[(cube.cdiv(n, block),)](
        out.storage, n, scalar(start, compute), scalar(step, compute), last,
        scalar(stop, compute), CT=compute, DT=dtype, BLOCK=block, target=ctx.target)
    return out


def arange(ctx: Context, start: float, step: float, n: int, dtype: DType) -> View:
    """``start + i * step`` for ``i < n``."""
    return _affine(ctx, start, step, n, -1, 0, dtype)


def linspace(ctx: Context, start: float, stop: float, n: int, dtype: DType) -> View:
    """``n`` evenly spaced values from ``start`` to ``stop`` (both included)."""
    step = (stop - start) / (n - 1) if n > 1 else 0.0
    return _affine(ctx, start, step, n, n - 1 if n > 1 else -1, stop, dtype)


def eye(ctx: Context, n: int, m: int, dtype: DType) -> View:
    """``n x m`` with ones on the main diagonal."""
    out = ctx.new((n, m), dtype)
    total = n * m
    block = ctx.block(total)
    eye_kernel[(cube.cdiv(total, block),)](out.storage, total, max(m, 1), DT=dtype, BLOCK=block,
                                           target=ctx.target)
    return out
