"""ONNX's elementwise operators, activations, matrix products and reductions, as burn ops.

Every operator here is written with burn's tensor functions, so it runs on each backend and
records gradients under ``Autodiff`` as any burn model does.

Example:
    >>> attrs = burn.onnx.registry.Attributes({"alpha": 0.1}, "LeakyRelu")
    >>> burn.onnx.OPERATORS["LeakyRelu"].run(attrs, burn.tensor([-1.0, 2.0])).tolist()
    [-0.10000000149011612, 2.0]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from functools import reduce

import numpy as np

from ..backend.base import BurnError
from ..tensor.tensor import Tensor
from .registry import Attributes, axis_of, onnx_dtype, operator, ops, stored_dtype

# ---- elementwise ----

_UNARY: dict[str, Callable[[Tensor], Tensor]] = {
    "Abs": ops.abs, "Neg": ops.neg, "Exp": ops.exp, "Log": ops.log, "Sqrt": ops.sqrt,
    "Reciprocal": ops.reciprocal, "Floor": ops.floor, "Ceil": ops.ceil, "Round": ops.round,
    "Sin": ops.sin, "Cos": ops.cos, "Tan": ops.tan, "Atan": ops.atan, "Tanh": ops.tanh,
    "Sigmoid": ops.sigmoid, "Relu": ops.relu, "Erf": ops.erf, "Sign": ops.sign,
    "Not": ops.logical_not, "Softplus": ops.softplus, "IsNaN": ops.isnan,
    "BitwiseNot": ops.bitwise_not,
}
_BINARY: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "Add": ops.add, "Sub": ops.sub, "Mul": ops.mul, "Equal": ops.eq, "Less": ops.lt,
    "Greater": ops.gt, "LessOrEqual": ops.le, "GreaterOrEqual": ops.ge,
    "And": ops.logical_and, "Or": ops.logical_or, "Xor": ops.logical_xor,
    "BitwiseAnd": ops.bitwise_and, "BitwiseOr": ops.bitwise_or, "BitwiseXor": ops.bitwise_xor,
}


def _unary(fn: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]:
    return lambda attrs, x: fn(x)


def _binary(fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    return lambda attrs, a, b: fn(a, b)


for _name, _fn in _UNARY.items():
    operator(_name)(_unary(_fn))
for _name, _fn in _BINARY.items():
    operator(_name)(_binary(_fn))


@operator("Identity")
def identity(attrs: Attributes, x: Tensor) -> Tensor:
    return x


@operator("Div")
def div(attrs: Attributes, a: Tensor, b: Tensor) -> Tensor:
    if a.dtype.is_float:
        return ops.div(a, b)
    # integer division truncates toward zero (C's rule), where floor_divide rounds down
    floored = ops.floor_divide(a, b)
    inexact = ops.ne(ops.mul(floored, b), a)
    return ops.where(ops.logical_and(inexact, ops.lt(floored, 0)), floored + 1, floored)


@operator("Mod")
def mod(attrs: Attributes, a: Tensor, b: Tensor) -> Tensor:
    if attrs.int("fmod", 0) == 0:
        if a.dtype.is_float:
            raise attrs.refuse("Mod with fmod=0 on floats", "the ONNX specification asks "
                               "for fmod=1 there")
        return ops.remainder(a, b)  # the sign of the divisor, as Python's %
    if not a.dtype.is_float:
        return ops.sub(a, ops.mul(div(attrs, a, b), b))
    return ops.sub(a, ops.mul(ops.trunc(ops.div(a, b)), b))  # the sign of the dividend


@operator("Pow")
def power(attrs: Attributes, x: Tensor, y: Tensor) -> Tensor:
    return ops.pow(x, y if y.dtype == x.dtype else ops.cast(y, x.dtype))


@operator("BitShift")
def bit_shift(attrs: Attributes, x: Tensor, y: Tensor) -> Tensor:
    direction = attrs.str("direction")
    return ops.left_shift(x, y) if direction == "LEFT" else ops.right_shift(x, y)


@operator("Where")
def where(attrs: Attributes, condition: Tensor, x: Tensor, y: Tensor) -> Tensor:
    return ops.where(condition, x, y)


def _variadic(fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    return lambda attrs, *inputs: reduce(fn, inputs)


operator("Max")(_variadic(ops.maximum))
operator("Min")(_variadic(ops.minimum))
operator("Sum")(_variadic(ops.add))


@operator("Mean")
def mean_of(attrs: Attributes, *inputs: Tensor) -> Tensor:
    return ops.div(reduce(ops.add, inputs), len(inputs))


@operator("IsInf")
def is_inf(attrs: Attributes, x: Tensor) -> Tensor:
    positive, negative = attrs.int("detect_positive", 1), attrs.int("detect_negative", 1)
    if positive and negative:
        return ops.isinf(x)
    if positive:
        return ops.eq(x, math.inf)
    return ops.eq(x, -math.inf) if negative else ops.zeros(x.shape, "bool", x.backend)


@operator("Cast")
def cast(attrs: Attributes, x: Tensor) -> Tensor:
    dtype = onnx_dtype(attrs.int("to"), "Cast")
    return ops.cast(x, stored_dtype(dtype, x.backend))


@operator("CastLike")
def cast_like(attrs: Attributes, x: Tensor, like: Tensor) -> Tensor:
    return ops.cast(x, like.dtype)


@operator("Clip", host=(1, 2))
def clip(attrs: Attributes, x: Tensor, low: np.ndarray | None = None,
         high: np.ndarray | None = None) -> Tensor:
    if attrs.version < 11:
        low, high = attrs.get("min"), attrs.get("max")
    low = None if low is None else np.asarray(low).item()
    high = None if high is None else np.asarray(high).item()
    return x if low is None and high is None else ops.clamp(x, low, high)


# ---- activations ----

@operator("LeakyRelu")
def leaky_relu(attrs: Attributes, x: Tensor) -> Tensor:
    return ops.where(ops.lt(x, 0), x * attrs.float("alpha", 0.01), x)


@operator("PRelu")
def prelu(attrs: Attributes, x: Tensor, slope: Tensor) -> Tensor:
    return ops.where(ops.lt(x, 0), x * slope, x)


@operator("Elu")
def elu(attrs: Attributes, x: Tensor) -> Tensor:
    return ops.where(ops.lt(x, 0), ops.expm1(x) * attrs.float("alpha", 1.0), x)


@operator("Selu")
def selu(attrs: Attributes, x: Tensor) -> Tensor:
    alpha = attrs.float("alpha", 1.67326319217681884765625)
    gamma = attrs.float("gamma", 1.05070102214813232421875)
    return ops.where(ops.le(x, 0), ops.expm1(x) * alpha, x) * gamma


@operator("Celu")
def celu(attrs: Attributes, x: Tensor) -> Tensor:
    alpha = attrs.float("alpha", 1.0)
    return ops.relu(x) + ops.minimum(ops.expm1(x / alpha) * alpha, 0.0)


@operator("HardSigmoid")
def hard_sigmoid(attrs: Attributes, x: Tensor) -> Tensor:
    return ops.clamp(x * attrs.float("alpha", 0.2) + attrs.float("beta", 0.5), 0.0, 1.0)


@operator("HardSwish")
def hard_swish(attrs: Attributes, x: Tensor) -> Tensor:
    return x * ops.clamp(x * (1 / 6) + 0.5, 0.0, 1.0)


@operator("Softsign")
def softsign(attrs: Attributes, x: Tensor) -> Tensor:
    return x / (ops.abs(x) + 1.0)


@operator("Mish")
def mish(attrs: Attributes, x: Tensor) -> Tensor:
    return x * ops.tanh(ops.softplus(x))


@operator("ThresholdedRelu")
def thresholded_relu(attrs: Attributes, x: Tensor) -> Tensor:
    return ops.where(ops.gt(x, attrs.float("alpha", 1.0)), x, 0.0)


@operator("Gelu")
def gelu(attrs: Attributes, x: Tensor) -> Tensor:
    approximate = attrs.str("approximate", "none")
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
        return x * 0.5 * (ops.tanh(inner) + 1.0)
    if approximate != "none":
        raise attrs.refuse(f"approximate={approximate!r}", "ONNX defines 'none' and 'tanh'")
    return x * 0.5 * (ops.erf(x * math.sqrt(0.5)) + 1.0)


def _softmax_family(fn: Callable[[Tensor, int], Tensor]) -> Callable[..., Tensor]:
    def run(attrs: Attributes, x: Tensor) -> Tensor:
        if attrs.version >= 13:
            return fn(x, axis_of(attrs.int("axis", -1), x.ndim, attrs.op_type))
        # before opset 13 the input is seen as a matrix: the axes from ``axis`` on are one row
        axis = axis_of(attrs.int("axis", 1), x.ndim, attrs.op_type)
        rows = math.prod(x.shape[:axis])
        return fn(x.reshape(rows, -1), 1).reshape(*x.shape)
    return run


operator("Softmax")(_softmax_family(ops.softmax))
operator("LogSoftmax")(_softmax_family(ops.log_softmax))


# ---- matrix products ----

@operator("MatMul")
def matmul(attrs: Attributes, a: Tensor, b: Tensor) -> Tensor:
    return ops.matmul(a, b)


@operator("Gemm")
def gemm(attrs: Attributes, a: Tensor, b: Tensor, c: Tensor | None = None) -> Tensor:
    a = a.T if attrs.int("transA", 0) else a
    b = b.T if attrs.int("transB", 0) else b
    product = ops.matmul(a, b)
    alpha, beta = attrs.float("alpha", 1.0), attrs.float("beta", 1.0)
    if alpha != 1.0:
        product = product * alpha
    if c is None or beta == 0.0:
        return product
    return product + (c if beta == 1.0 else c * beta)


# ---- reductions ----

def _reduction(fn: Callable[..., Tensor], axes_input_since: int) -> Callable[..., Tensor]:
    def run(attrs: Attributes, x: Tensor, axes: np.ndarray | None = None) -> Tensor:
        listed = attrs.ints("axes") if attrs.version < axes_input_since else (
            None if axes is None else [int(a) for a in np.ravel(axes)])
        keep = bool(attrs.int("keepdims", 1))
        if not listed:
            if attrs.int("noop_with_empty_axes", 0):
                return x
            listed = list(range(x.ndim))
        if x.ndim == 0:
            return fn(x, None, False)
        axes_ = tuple(sorted({axis_of(a, x.ndim, attrs.op_type) for a in listed}))
        return fn(x, axes_, keep)
    return run


def _sum_square(x: Tensor, axes: tuple | None, keep: bool) -> Tensor:
    return ops.sum(x * x, axes, keep)


def _l1(x: Tensor, axes: tuple | None, keep: bool) -> Tensor:
    return ops.sum(ops.abs(x), axes, keep)


def _l2(x: Tensor, axes: tuple | None, keep: bool) -> Tensor:
    return ops.sqrt(ops.sum(x * x, axes, keep))


def _log_sum(x: Tensor, axes: tuple | None, keep: bool) -> Tensor:
    return ops.log(ops.sum(x, axes, keep))


for _name, _fn, _since in [
        ("ReduceSum", ops.sum, 13), ("ReduceMean", ops.mean, 18), ("ReduceMax", ops.max, 18),
        ("ReduceMin", ops.min, 18), ("ReduceProd", ops.prod, 18),
        ("ReduceLogSumExp", ops.logsumexp, 18), ("ReduceSumSquare", _sum_square, 18),
        ("ReduceL1", _l1, 18), ("ReduceL2", _l2, 18), ("ReduceLogSum", _log_sum, 18)]:
    operator(_name, host=(1,))(_reduction(_fn, _since))


def _arg_extreme(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def run(attrs: Attributes, x: Tensor) -> Tensor:
        axis = axis_of(attrs.int("axis", 0), x.ndim, attrs.op_type)
        keep = bool(attrs.int("keepdims", 1))
        if not attrs.int("select_last_index", 0):
            found = fn(x, axis, keep)
        else:  # the last of equal values: search the reversed axis, then count back
            found = (x.shape[axis] - 1) - fn(ops.flip(x, axis), axis, keep)
        return ops.cast(found, stored_dtype(onnx_dtype(7, attrs.op_type), x.backend))
    return run


operator("ArgMax")(_arg_extreme(ops.argmax))
operator("ArgMin")(_arg_extreme(ops.argmin))


@operator("CumSum", host=(1,))
def cumulative_sum(attrs: Attributes, x: Tensor, axis: np.ndarray) -> Tensor:
    axis_ = axis_of(int(np.asarray(axis).item()), x.ndim, "CumSum")
    if attrs.int("reverse", 0):
        x = ops.flip(x, axis_)
    total = ops.cumsum(x, axis_)
    if attrs.int("exclusive", 0):
        total = total - x
    return ops.flip(total, axis_) if attrs.int("reverse", 0) else total


@operator("TopK", host=(1,))
def top_k(attrs: Attributes, x: Tensor, k: np.ndarray) -> list[Tensor]:
    axis = axis_of(attrs.int("axis", -1), x.ndim, "TopK")
    count = int(np.asarray(k).item())
    if not 0 <= count <= x.shape[axis]:
        raise BurnError(f"TopK: k={count} is more than the {x.shape[axis]} elements of axis "
                        f"{axis}")
    found = ops.topk(x, count, axis, largest=bool(attrs.int("largest", 1)))
    index_dtype = stored_dtype(onnx_dtype(7, "TopK"), x.backend)
    return [found.values, ops.cast(found.indices, index_dtype)]


# ---- Einsum ----

def _einsum_terms(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' index letters and the output's, with ``...`` spelled out as capital
    letters (einsum's own are lower case; the ellipsis axes of operands line up from the
    right) and an implicit output made explicit."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise BurnError(f"Einsum: {equation!r} names {len(terms)} operands, the node has "
                        f"{len(ranks)}")
    spread = [rank - len(term) + 3 if "..." in term else 0 for term, rank in zip(terms, ranks)]
    ellipsis = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:max(spread, default=0)]
    for i, (term, rank) in enumerate(zip(terms, ranks)):
        terms[i] = term.replace("...", ellipsis[len(ellipsis) - spread[i]:])
        if len(terms[i]) != rank:
            raise BurnError(f"Einsum: operand {i} of {equation!r} is {term!r} for a tensor of "
                            f"rank {rank}; write one letter per axis")
    if not arrow:  # implicit: the letters seen once, in alphabetical order
        counts = Counter("".join(terms))
        output = "..." + "".join(sorted(c for c in counts if counts[c] == 1 and c.islower()))
    return terms, output.replace("...", ellipsis)


def _sum_out(x: Tensor, term: str, keep: set[str]) -> tuple[Tensor, str]:
    gone = tuple(i for i, c in enumerate(term) if c not in keep)
    if not gone:
        return x, term
    return ops.sum(x, gone, False), "".join(c for c in term if c in keep)


def _contract(a: Tensor, ta: str, b: Tensor, tb: str, keep: set[str]) -> tuple[Tensor, str]:
    """``a`` and ``b`` multiplied over their shared letters, summing those not in ``keep``,
    as one batched matmul."""
    a, ta = _sum_out(a, ta, keep | set(tb))
    b, tb = _sum_out(b, tb, keep | set(ta))
    batch = [c for c in ta if c in tb and c in keep]
    inner = [c for c in ta if c in tb and c not in keep]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]
    sizes = {**dict(zip(ta, a.shape)), **dict(zip(tb, b.shape))}

    def laid_out(x: Tensor, term: str, order: list[str], rows: list[str], cols: list[str]):
        x = ops.permute(x, *[term.index(c) for c in order]) if order != list(term) else x
        return ops.reshape(x, *[sizes[c] for c in batch], math.prod(sizes[c] for c in rows),
                           math.prod(sizes[c] for c in cols))

    product = ops.matmul(laid_out(a, ta, batch + left + inner, left, inner),
                         laid_out(b, tb, batch + inner + right, inner, right))
    term = "".join(batch + left + right)
    return ops.reshape(product, *[sizes[c] for c in term]), term


def _diagonals(x: Tensor, term: str, equation: str, position: int) -> tuple[Tensor, str]:
    """``x`` with each letter ``term`` repeats taken along its diagonal (``ii->i``): a view
    whose diagonal axis comes last, as ``diagonal`` puts it."""
    for letter in dict.fromkeys(term):
        while term.count(letter) > 1:
            first = term.index(letter)
            second = term.index(letter, first + 1)
            if x.shape[first] != x.shape[second]:
                raise BurnError(f"Einsum: operand {position} of {equation!r} repeats "
                                f"{letter!r} over axes of sizes {x.shape[first]} and "
                                f"{x.shape[second]}; a diagonal needs equal sizes")
            x = ops.diagonal(x, 0, first, second)
            term = term[:first] + term[first + 1:second] + term[second + 1:] + letter
    return x, term


@operator("Einsum")
def einsum(attrs: Attributes, *operands: Tensor) -> Tensor:
    equation = attrs.str("equation")
    terms, output = _einsum_terms(equation, [t.ndim for t in operands])
    operands, terms = zip(*(_diagonals(x, term, equation, i)
                            for i, (x, term) in enumerate(zip(operands, terms))))
    result, term = operands[0], terms[0]
    for position in range(1, len(operands)):
        later = set(output).union(*terms[position + 1:])
        result, term = _contract(result, term, operands[position], terms[position], later)
    result, term = _sum_out(result, term, set(output))
    if term != output:
        result = ops.permute(result, *[term.index(c) for c in output])
    return result
