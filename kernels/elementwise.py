"""Elementwise kernels: unary and binary ops, ``where``, ``clamp``, casts and strided copies.

One kernel per arity; the op is a comptime string, so each op is its own specialization with
only its code generated. Inputs are strided views of any layout (broadcast axes have stride 0),
loaded in their own dtype, computed in ``compute`` (float32 for 16-bit floats) and stored as
the result's dtype into a fresh contiguous view. Which dtypes an op accepts and returns is the
caller's business (burn's dtype rules); ``UNARY_OPS`` and ``BINARY_OPS`` list the names.

Example:
    >>> ctx = Context("cpu", lambda n, dtype: np.empty(n, dtype.numpy))  # doctest: +SKIP
    >>> y = unary(ctx, "exp", x, compute=cube.float32, out_dtype=cube.float32)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import cubepy as cube
from cubepy.ir.dtypes import DType

from . import mathlib
from .layout import Context, View, float_register, launch_plan, scalar
from .strided import dense_offset, lanes, layout_args, operand_args, strided_launch, strided_offset

FLOAT_UNARY = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
               "cos", "tan", "tanh", "atan", "erf", "sigmoid", "gelu", "silu", "softplus")
ROUNDING_UNARY = ("floor", "ceil", "round", "trunc")
NUMERIC_UNARY = ("neg", "abs", "sign", "square", "relu", "reciprocal")
PREDICATE_UNARY = ("isnan", "isinf", "isfinite")
UNARY_OPS = (FLOAT_UNARY + ROUNDING_UNARY + NUMERIC_UNARY + PREDICATE_UNARY
             + ("logical_not", "bitwise_not", "identity"))

ARITHMETIC_BINARY = ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum",
                     "minimum", "atan2")
COMPARISON_BINARY = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL_BINARY = ("logical_and", "logical_or", "logical_xor")
BITWISE_BINARY = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
#: ``g * f'(v)`` for an activation ``f``, in one kernel (burn's Autodiff backend): ``v`` is the
#: input for gelu, silu and relu, the output for tanh and sigmoid
DERIVATIVE_BINARY = ("gelu_grad", "silu_grad", "relu_grad", "tanh_grad", "sigmoid_grad")
BINARY_OPS = (ARITHMETIC_BINARY + COMPARISON_BINARY + LOGICAL_BINARY + BITWISE_BINARY
              + DERIVATIVE_BINARY)


@cube.func
def apply_unary(v, OP):
    # Folded at compile time: only OP's branch is generated.
    if OP == "identity":
        r = v
    elif OP == "neg":
        r = -v
    elif OP == "abs":
        r = cube.abs(v)
    elif OP == "sign":
        r = mathlib.sign(v)
    elif OP == "square":
        r = v * v
    elif OP == "relu":
        r = cube.maximum(v, 0)
    elif OP == "reciprocal":
        r = 1.0 / v
    elif OP == "exp":
        r = cube.exp(v)
    elif OP == "exp2":
        r = cube.exp2(v)
    elif OP == "expm1":
        r = mathlib.expm1(v)
    elif OP == "log":
        r = cube.log(v)
    elif OP == "log2":
        r = cube.log2(v)
    elif OP == "log10":
        r = cube.log(v) * mathlib.LN10_INV
    elif OP == "log1p":
        r = mathlib.log1p(v)
    elif OP == "sqrt":
        r = cube.sqrt(v)
    elif OP == "rsqrt":
        r = cube.rsqrt(v)
    elif OP == "sin":
        r = cube.sin(v)
    elif OP == "cos":
        r = cube.cos(v)
    elif OP == "tan":
        r = mathlib.tan(v)
    elif OP == "tanh":
        r = cube.tanh(v)
    elif OP == "atan":
        r = mathlib.atan(v)
    elif OP == "erf":
        r = cube.erf(v)
    elif OP == "sigmoid":
        r = cube.sigmoid(v)
    elif OP == "gelu":
        r = mathlib.gelu(v)
    elif OP == "silu":
        r = mathlib.silu(v)
    elif OP == "softplus":
        r = mathlib.softplus(v)
    elif OP == "floor":
        r = cube.floor(v)
    elif OP == "ceil":
        r = cube.ceil(v)
    elif OP == "round":
        r = mathlib.round_half_even(v)
    elif OP == "trunc":
        r = mathlib.trunc(v)
    elif OP == "isnan":
        r = v != v
    elif OP == "isinf":
        r = cube.abs(v) == float("inf")
    elif OP == "isfinite":
        r = cube.abs(v) < float("inf")
    elif OP == "logical_not":
        r = v == 0
    else:  # bitwise_not
        r = ~v
    return r


@cube.func
def apply_binary(a, b, OP):
    if OP == "add":
        r = a + b
    elif OP == "sub":
        r = a - b
    elif OP == "mul":
        r = a * b
    elif OP == "div":
        r = a / b
    elif OP == "floor_divide":
        r = a // b  # NumPy's floor_divide on every target, 0 for an integer divided by zero
    elif OP == "remainder":
        r = a % b  # NumPy's remainder: the sign of the divisor, exact for floats
    elif OP == "pow":
        if a.dtype.is_float:
            r = cube.pow(a, b)
        else:
            r = mathlib.int_pow(a, b, a.dtype.bits)
    elif OP == "maximum":
        r = cube.maximum(a, b)
    elif OP == "minimum":
        r = cube.minimum(a, b)
    elif OP == "atan2":
        r = mathlib.atan2(a, b)
    elif OP == "eq":
        r = a == b
    elif OP == "ne":
        r = a != b
    elif OP == "lt":
        r = a < b
    elif OP == "le":
        r = a <= b
    elif OP == "gt":
        r = a > b
    elif OP == "ge":
        r = a >= b
    elif OP == "logical_and":
        r = (a != 0) & (b != 0)
    elif OP == "logical_or":
        r = (a != 0) | (b != 0)
    elif OP == "logical_xor":
        r = (a != 0) ^ (b != 0)
    elif OP == "bitwise_and":
        r = a & b
    elif OP == "bitwise_or":
        r = a | b
    elif OP == "bitwise_xor":
        r = a ^ b
    elif OP == "left_shift":
        r = a << b
    elif OP == "right_shift":
        r = a >> b
    else:
        r = activation_derivative(a, b, OP)
    return r


@cube.func
def activation_derivative(g, v, OP):
    # g times the activation's derivative, from its input (gelu, silu, relu) or output
    if OP == "gelu_grad":  # Phi(v) + v * phi(v)
        r = g * (0.5 * (1.0 + cube.erf(v * 0.7071067811865476))
                 + v * cube.exp(v * v * -0.5) * 0.3989422804014327)
    elif OP == "silu_grad":
        s = cube.sigmoid(v)
        r = g * (s * (1.0 + v * (1.0 - s)))
    elif OP == "relu_grad":
        r = cube.where(v > 0, g, 0.0)
    elif OP == "tanh_grad":
        r = g * (1.0 - v * v)
    else:  # sigmoid_grad
        r = g * (v * (1.0 - v))
    return r


@cube.kernel
def unary_kernel(x, xo, xs0, xs1, xs2, xs3, out, oo, n, d1, d2, d3,
                 OP: cube.Comptime[str], CT: cube.Comptime[object], DT: cube.Comptime[object],
                 BY_ROW: cube.Comptime[bool], XSTEP: cube.Comptime[int],
                 RANK: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    idx, cols, m = lanes(n, d3, BLOCK, BY_ROW)
    # masked lanes read 1: defined for every op (log, 1/x, ...) so no lane raises a warning
    v = cube.load(x + xo + strided_offset(idx, cols, BY_ROW, XSTEP, RANK, d1, d2, d3, xs0, xs1,
                                          xs2, xs3), mask=m, other=1)
    cube.store(out + oo + idx, apply_unary(v.to(CT), OP).to(DT), mask=m)


@cube.kernel
def binary_kernel(x, xo, xs0, xs1, xs2, xs3, y, yo, ys0, ys1, ys2, ys3, out, oo, n, d1, d2, d3,
                  OP: cube.Comptime[str], CT: cube.Comptime[object], DT: cube.Comptime[object],
                  BY_ROW: cube.Comptime[bool], XSTEP: cube.Comptime[int],
                  YSTEP: cube.Comptime[int], RANK: cube.Comptime[int],
                  BLOCK: cube.Comptime[int]):
    idx, cols, m = lanes(n, d3, BLOCK, BY_ROW)
    a = cube.load(x + xo + strided_offset(idx, cols, BY_ROW, XSTEP, RANK, d1, d2, d3, xs0, xs1,
                                          xs2, xs3), mask=m, other=1)
    b = cube.load(y + yo + strided_offset(idx, cols, BY_ROW, YSTEP, RANK, d1, d2, d3, ys0, ys1,
                                          ys2, ys3), mask=m, other=1)
    cube.store(out + oo + idx, apply_binary(a.to(CT), b.to(CT), OP).to(DT), mask=m)


# Dense forms of the two kernels above, for operands that are all contiguous: a third of the
# arguments, which is most of the host cost of launching a small op on the cpu target.
@cube.kernel
def unary_dense_kernel(x, xo, out, n, OP: cube.Comptime[str], CT: cube.Comptime[object],
                       DT: cube.Comptime[object], BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = idx < n
    v = cube.load(x + xo + idx, mask=m, other=1)
    cube.store(out + idx, apply_unary(v.to(CT), OP).to(DT), mask=m)


@cube.kernel
def binary_dense_kernel(x, xo, y, yo, out, n, OP: cube.Comptime[str], CT: cube.Comptime[object],
                        DT: cube.Comptime[object], XSTEP: cube.Comptime[int],
                        YSTEP: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    idx = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    m = idx < n
    a = cube.load(x + xo + dense_offset(idx, XSTEP), mask=m, other=1)
    b = cube.load(y + yo + dense_offset(idx, YSTEP), mask=m, other=1)
    cube.store(out + idx, apply_binary(a.to(CT), b.to(CT), OP).to(DT), mask=m)


@cube.kernel
def where_kernel(c, co, cs0, cs1, cs2, cs3, x, xo, xs0, xs1, xs2, xs3, y, yo, ys0, ys1, ys2, ys3,
                 out, oo, n, d1, d2, d3, DT: cube.Comptime[object], BY_ROW: cube.Comptime[bool],
                 CSTEP: cube.Comptime[int], XSTEP: cube.Comptime[int],
                 YSTEP: cube.Comptime[int], RANK: cube.Comptime[int],
                 BLOCK: cube.Comptime[int]):
    idx, cols, m = lanes(n, d3, BLOCK, BY_ROW)
    cond = cube.load(c + co + strided_offset(idx, cols, BY_ROW, CSTEP, RANK, d1, d2, d3, cs0, cs1,
                                             cs2, cs3), mask=m, other=0)
    a = cube.load(x + xo + strided_offset(idx, cols, BY_ROW, XSTEP, RANK, d1, d2, d3, xs0, xs1,
                                          xs2, xs3), mask=m, other=0)
    b = cube.load(y + yo + strided_offset(idx, cols, BY_ROW, YSTEP, RANK, d1, d2, d3, ys0, ys1,
                                          ys2, ys3), mask=m, other=0)
    cube.store(out + oo + idx, cube.where(cond != 0, a.to(DT), b.to(DT)), mask=m)


@cube.kernel
def clamp_kernel(x, xo, xs0, xs1, xs2, xs3, out, oo, n, d1, d2, d3, lo, hi,
                 HAS_LO: cube.Comptime[bool], HAS_HI: cube.Comptime[bool],
                 CT: cube.Comptime[object], DT: cube.Comptime[object],
                 BY_ROW: cube.Comptime[bool], XSTEP: cube.Comptime[int],
                 RANK: cube.Comptime[int], BLOCK: cube.Comptime[int]):
    idx, cols, m = lanes(n, d3, BLOCK, BY_ROW)
    v = cube.load(x + xo + strided_offset(idx, cols, BY_ROW, XSTEP, RANK, d1, d2, d3, xs0, xs1,
                                          xs2, xs3), mask=m, other=0).to(CT)
    if HAS_LO:
        v = cube.maximum(v, lo)
    if HAS_HI:
        v = cube.minimum(v, hi)
    cube.store(out + oo + idx, v.to(DT), mask=m)


def unary(ctx: Context, op: str, x: View, compute: DType, out_dtype: DType) -> View:
    """``op`` applied to every element of ``x`` (computed in ``compute``), as ``out_dtype``."""
    if op not in UNARY_OPS:
        raise ValueError(f"unknown unary op {op!r}; ops: {', '.join(UNARY_OPS)}")
    out = ctx.new(x.shape, out_dtype)
    if x.is_contiguous:
        n = out.numel
        block = ctx.block(n)
        unary_dense_kernel[(cube.cdiv(n, block),)](
            x.storage, x.offset, out.storage, n, OP=op, CT=float_register(compute), DT=out_dtype,
            BLOCK=block, target=ctx.target)
        return out
    for part in launch_plan(x.shape, [x]):
        go = strided_launch(ctx, part)
        unary_kernel[go.grid](
            x.storage, *operand_args(part, 0), out.storage, part.out_offset, *layout_args(part),
            OP=op, CT=float_register(compute), DT=out_dtype, **go.comptimes("XSTEP"),
            target=ctx.target)
    return out


def binary(ctx: Context, op: str, x: View, y: View, compute: DType, out_dtype: DType) -> View:
    """``op(x, y)`` elementwise; ``x`` and ``y`` have one shape (broadcast beforehand)."""
    if op not in BINARY_OPS:
        raise ValueError(f"unknown binary op {op!r}; ops: {', '.join(BINARY_OPS)}")
    out = ctx.new(x.shape, out_dtype)
    steps = _dense_steps(x, y)
    if steps is not None:  # a third of the general kernel's arguments, and no index math
        n = out.numel
        block = ctx.block(n)
        binary_dense_kernel[(cube.cdiv(n, block),)](
            x.storage, x.offset, y.storage, y.offset, out.storage, n, OP=op,
            CT=float_register(compute), DT=out_dtype, XSTEP=steps[0], YSTEP=steps[1],
            BLOCK=block, target=ctx.target)
        return out
    for part in launch_plan(x.shape, [x, y]):
        go = strided_launch(ctx, part)
        binary_kernel[go.grid](
            x.storage, *operand_args(part, 0), y.storage, *operand_args(part, 1),
            out.storage, part.out_offset, *layout_args(part),
            OP=op, CT=float_register(compute), DT=out_dtype, **go.comptimes("XSTEP", "YSTEP"),
            target=ctx.target)
    return out


def _dense_steps(x: View, y: View) -> tuple[int, int] | None:
    """Each operand's step for ``binary_dense_kernel``: both contiguous (1, 1), or one
    contiguous and the other one element broadcast (0: ``x * 0.5``, ``1 - x``); None for
    any other layout (the general kernel's)."""
    x_dense, y_dense = x.is_contiguous, y.is_contiguous
    if x_dense and y_dense:
        return 1, 1
    if x_dense and not any(y.strides):
        return 1, 0
    if y_dense and not any(x.strides):
        return 0, 1
    return None


def where(ctx: Context, cond: View, x: View, y: View, out_dtype: DType) -> View:
    """``x`` where ``cond`` is true, else ``y`` (all three of one shape)."""
    out = ctx.new(x.shape, out_dtype)
    for part in launch_plan(x.shape, [cond, x, y]):
        go = strided_launch(ctx, part)
        where_kernel[go.grid](
            cond.storage, *operand_args(part, 0), x.storage, *operand_args(part, 1),
            y.storage, *operand_args(part, 2), out.storage, part.out_offset, *layout_args(part),
            DT=out_dtype, **go.comptimes("CSTEP", "XSTEP", "YSTEP"), target=ctx.target)
    return out


def clamp(ctx: Context, x: View, lo: Any, hi: Any, out_dtype: DType) -> View:
    """``x`` limited to ``[lo, hi]`` (either bound may be None)."""
    out = ctx.new(x.shape, out_dtype)
    compute = float_register(out_dtype)
    for part in launch_plan(x.shape, [x]):
        go = strided_launch(ctx, part)
        clamp_kernel[go.grid](
            x.storage, *operand_args(part, 0), out.storage, part.out_offset, *layout_args(part),
            scalar(0 if lo is None else lo, compute), scalar(0 if hi is None else hi, compute),
            HAS_LO=lo is not None, HAS_HI=hi is not None, CT=compute, DT=out_dtype,
            **go.comptimes("XSTEP"), target=ctx.target)
    return out


def cast(ctx: Context, x: View, dtype: DType) -> View:
    """``x`` converted to ``dtype`` (floats to integers truncate toward zero)."""
    return unary(ctx, "identity", x, float_register(x.dtype), dtype)


def copy(ctx: Context, x: View) -> View:
    """A contiguous copy of any view."""
    return unary(ctx, "identity", x, x.dtype, x.dtype)


def contiguous(ctx: Context, x: View | None) -> View | None:
    """``x`` itself when it is None or contiguous (kernels that read flat storage take it as
    it is), else a contiguous copy."""
    return x if x is None or x.is_contiguous else copy(ctx, x)


def copy_into(ctx: Context, target: View, source: View) -> None:
    """Write ``source`` (any layout) into the dense ``target`` of its shape and dtype."""
    if not target.is_contiguous or target.shape != source.shape or \
            target.dtype != source.dtype:
        raise ValueError(f"copy_into: a dense {target.dtype.name}{list(target.shape)} target "
                         f"takes a source of its shape and dtype, got "
                         f"{source.dtype.name}{list(source.shape)}")
    for part in launch_plan(source.shape, [source]):
        go = strided_launch(ctx, part)
        unary_kernel[go.grid](
            source.storage, *operand_args(part, 0), target.storage,
            target.offset + part.out_offset, *layout_args(part), OP="identity",
            CT=float_register(source.dtype), DT=target.dtype, **go.comptimes("XSTEP"),
            target=ctx.target)
