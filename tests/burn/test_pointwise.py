"""Elementwise ops on every backend against the NumPy reference: every unary and binary op,
broadcasting, non-contiguous views, 0-size and 1-element tensors, the dtype matrix, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from optest import VIEW_KINDS, check, on, random_tensor, strided, supports

import burn
from burn.tensor import elementwise
from kernels import elementwise as kernel_ops
from kernels.layout import CPU_BLOCK, Context
from kernels.strided import CPU_ROW_LANES

# input ranges where each op is defined and well conditioned
DOMAIN = {
    "log": (0.1, 10.0), "log2": (0.1, 10.0), "log10": (0.1, 10.0), "sqrt": (0.1, 10.0),
    "rsqrt": (0.1, 10.0), "log1p": (-0.9, 10.0), "tan": (-1.2, 1.2), "atan": (-10.0, 10.0),
    "reciprocal": (0.5, 4.0), "exp": (-5.0, 5.0), "exp2": (-5.0, 5.0), "expm1": (-2.0, 2.0),
}
FLOAT_ONLY = set(kernel_ops.FLOAT_UNARY) | {"reciprocal"}
UNARY = [op for op in kernel_ops.UNARY_OPS if op != "identity"]


def _unary_input(rng: np.random.Generator, op: str, shape, dtype: str) -> np.ndarray:
    low, high = DOMAIN.get(op, (-3.0, 3.0))
    if dtype in ("int32", "int64", "int8", "int16", "uint8", "uint32", "bool"):
        return random_tensor(rng, shape, dtype)
    x = random_tensor(rng, shape, dtype, low, high)
    if op in ("round", "floor", "ceil", "trunc"):  # exact halves too
        x[..., :3] = np.array([0.5, 2.5, -1.5], dtype=x.dtype)[: x.shape[-1]]
    if op in kernel_ops.PREDICATE_UNARY:
        x[..., :3] = np.array([np.nan, np.inf, -np.inf], dtype=x.dtype)[: x.shape[-1]]
    return x


@pytest.mark.parametrize("op", UNARY)
def test_unary_float32(backend, ref, rng, op):
    if op == "bitwise_not":
        x = random_tensor(rng, (37, 5), "int32")
    else:
        x = _unary_input(rng, op, (37, 5), "float32")
    check(lambda b: getattr(burn, op)(on(b, x)), backend, ref)


@pytest.mark.parametrize("op", ["exp", "log1p", "expm1", "atan", "tanh", "erf", "sigmoid",
                                "round", "sign", "softplus"])
def test_unary_float64(backend, ref, rng, op):
    if not supports(backend, ["float64"]):
        pytest.skip("float64 is checked as an explicit error in test_dtype_matrix")
    x = _unary_input(rng, op, (300,), "float64")
    check(lambda b: getattr(burn, op)(on(b, x)), backend, ref)


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "bfloat16",
          "float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_matrix(backend, ref, rng, dtype):
    """Every dtype through a numeric op, a float op, a comparison and a cast."""
    if not supports(backend, [dtype]):
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, random_tensor(rng, 4, dtype))
        return
    x = random_tensor(rng, (9, 7), dtype)
    y = random_tensor(rng, (7,), dtype)
    if dtype != "bool":
        check(lambda b: burn.abs(on(b, x)), backend, ref)
        check(lambda b: on(b, x) + on(b, y), backend, ref)
        check(lambda b: burn.maximum(on(b, x), on(b, y)), backend, ref)
    check(lambda b: burn.exp(on(b, x).to(burn.float32) * 0.1), backend, ref)
    check(lambda b: on(b, x) < on(b, y), backend, ref)
    check(lambda b: on(b, x).to(burn.float32), backend, ref)


@pytest.mark.parametrize("op", kernel_ops.DERIVATIVE_BINARY)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_activation_derivatives(backend, ref, rng, op, dtype):
    """The one-kernel ``g * f'(v)`` ops of the Autodiff backend, as the NumPy reference."""
    if dtype not in backend.dtypes:
        pytest.skip("dtype refusals are checked in test_pointwise.py::test_dtype_matrix")
    g, v = random_tensor(rng, (3, 70), dtype), random_tensor(rng, (3, 70), dtype, -3.0, 3.0)
    check(lambda b: burn.Tensor(b.binary(op, on(b, g).prim, on(b, v).prim, burn.float32,
                                         on(b, g).dtype), b), backend, ref)


@pytest.mark.parametrize("op", elementwise.PUBLIC_BINARY)
def test_binary_broadcast(backend, ref, rng, op):
    ints = op in kernel_ops.BITWISE_BINARY or op in ("floor_divide", "remainder")
    dtype = "int32" if ints else "float32"
    if op in ("left_shift", "right_shift"):
        x = random_tensor(rng, (6, 1, 5), dtype, -1000, 1000)
        y = random_tensor(rng, (4, 1), dtype, 0, 8)
    elif op == "pow":
        x = random_tensor(rng, (6, 1, 5), dtype, 0.5, 2.0)
        y = random_tensor(rng, (4, 1), dtype, -2.0, 2.0)
    else:
        x = random_tensor(rng, (6, 1, 5), dtype)
        y = random_tensor(rng, (4, 1), dtype)
        if op in ("floor_divide", "remainder"):
            y[0, 0] = 0  # division by zero gives 0 for integers
    check(lambda b: getattr(burn, op)(on(b, x), on(b, y)), backend, ref)


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "pow"])
def test_integer_arithmetic(backend, ref, rng, op):
    x = random_tensor(rng, (50,), "int32", -20, 20)
    y = random_tensor(rng, (50,), "int32", -4, 5) if op != "pow" else \
        random_tensor(rng, (50,), "int32", -2, 6)
    check(lambda b: getattr(burn, op)(on(b, x), on(b, y)), backend, ref)


@pytest.mark.parametrize("kind", VIEW_KINDS)
def test_views_as_operands(backend, ref, rng, kind):
    x = random_tensor(rng, (8, 6), "float32")
    y = random_tensor(rng, (8, 6), "float32")
    check(lambda b: strided(b, x, kind) * strided(b, y, "transposed" if kind != "transposed"
                                                  else "sliced") + 1.0, backend, ref)
    check(lambda b: burn.sin(strided(b, x, kind)), backend, ref)


def test_high_rank_permutation(backend, ref, rng):
    """A permutation of 6 axes that no neighbours merge: more than 4 collapsed axes."""
    x = random_tensor(rng, (2, 3, 2, 3, 2, 3), "float32")
    check(lambda b: on(b, x).permute(5, 3, 1, 4, 2, 0) * 2.0, backend, ref)


@pytest.mark.parametrize("layout, n", [
    *((layout, CPU_ROW_LANES + 8)
      for layout in ("row broadcast", "column broadcast", "transposed 3-D", "six axes")),
    ("row broadcast", CPU_BLOCK + 8), ("transposed 3-D", CPU_BLOCK + 8)])
def test_long_rows_of_strided_operands(backend, ref, rng, layout, n):
    """Strided operands whose rows are at least ``CPU_ROW_LANES`` long, which the cpu target
    reads row by row (each row's offset once per cube; a row in one cube of its length
    rounded up, or in several of the cpu's block): broadcasts along either axis, a
    permutation of three axes, and six axes that need one launch per outer index; through
    each strided kernel (binary, unary, where, clamp, a copy) and under ``Fusion``."""
    x = random_tensor(rng, (3, 2, n) if layout != "six axes" else (2, 2, 3, 2, 2, n),
                      "float32")

    def operands(b):
        t = on(b, x)
        if layout == "row broadcast":
            return t, on(b, x[0, 0])
        if layout == "column broadcast":
            return t, on(b, x[:, :, :1])
        if layout == "transposed 3-D":
            return on(b, np.ascontiguousarray(x.transpose(1, 0, 2))).permute(1, 0, 2), t
        return on(b, np.ascontiguousarray(x.transpose(4, 0, 3, 1, 2, 5))).permute(
            1, 3, 4, 2, 0, 5), t

    def run(b):
        u, v = operands(b)
        return (u * v, -u, burn.where(u > 0.5, u, v), u.clamp(-0.5, 0.5), u.contiguous(),
                (u - v).exp() * 2 + v)

    check(run, backend, ref)
    fusion = burn.Fusion(backend.wraps if isinstance(backend, burn.Fusion) else backend)
    check(run, fusion, ref)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (1,), (1, 1), ()])
def test_empty_and_single(backend, ref, rng, shape):
    x = random_tensor(rng, shape, "float32")
    check(lambda b: burn.exp(on(b, x)) + 1.0, backend, ref)
    check(lambda b: on(b, x) * on(b, x), backend, ref)


def test_sizes_across_blocks(backend, ref, rng):
    """Sizes on both sides of the blocks (a GPU's 16 to 1024, the cpu's ``CPU_BLOCK``), one
    cube and several, contiguous and strided."""
    for n in (1, 17, 1023, 1025, 5000):
        x = random_tensor(rng, (n, 2), "float32")
        check(lambda b, x=x: on(b, x).sin(), backend, ref)
        check(lambda b, x=x: on(b, x).permute(1, 0) * 2.0, backend, ref)


def test_cpu_block_is_one_for_every_size():
    """The cpu's 1-D kernels take one block whatever the size, so that sizes share one
    compiled specialization; GPU targets fit it to small sizes."""
    cpu, gpu = Context("cpu", None), Context("triton", None)
    assert {cpu.block(n) for n in (1, 100, 5000, 10**8)} == {CPU_BLOCK}
    assert [gpu.block(n) for n in (1, 100, 5000)] == [16, 128, 1024]


def test_scalars_are_weak(backend, ref, rng):
    xh = random_tensor(rng, (5,), "float16")
    xi = random_tensor(rng, (5,), "int32")
    check(lambda b: on(b, xh) * 2.5, backend, ref)
    check(lambda b: (3 - on(b, xi), on(b, xi) * 2, on(b, xi) / 2, on(b, xi) + 0.5), backend, ref)
    assert (on(backend, xi) + 1).dtype == burn.int32
    assert (on(backend, xh) + 1.0).dtype == burn.float16
    assert (on(backend, xi) + 1.0).dtype == burn.float32


def test_numbers_seen_before_keep_their_type_and_sign(backend):
    # Backend.number keeps a number's constant by its type and bits: 0.0 and -0.0, 2 and 2.0
    # (of int32 and float32 against an int32 tensor) must never share one
    zeros = burn.from_numpy(np.array([-0.0, -0.0], np.float32), backend=backend)
    ints = burn.from_numpy(np.array([3, 4], np.int32), backend=backend)
    for _ in range(2):  # the second round finds every number cached
        assert np.signbit((zeros + 0.0).numpy()).tolist() == [False, False]
        assert np.signbit((zeros + -0.0).numpy()).tolist() == [True, True]
        assert (ints * 2).dtype == burn.int32 and (ints * 2.0).dtype == burn.float32
        assert (ints / 2).tolist() == [1.5, 2.0] and (ints // 2).tolist() == [1, 2]
    assert backend.number(0.5, burn.float32) is backend.number(0.5, burn.float32)
    assert backend.number(0.5, burn.float32) is not backend.number(0.5, burn.float64)


def test_where_and_clamp(backend, ref, rng):
    c = random_tensor(rng, (7, 1), "bool")
    x = random_tensor(rng, (7, 4), "float32")
    y = random_tensor(rng, (4,), "int32")
    check(lambda b: burn.where(on(b, c), on(b, x), on(b, y)), backend, ref)
    check(lambda b: burn.where(on(b, c), on(b, x), 0.0), backend, ref)
    check(lambda b: on(b, x).clamp(-0.5, 0.5), backend, ref)
    check(lambda b: on(b, x).clamp(min=0.0), backend, ref)
    check(lambda b: on(b, y).clamp(max=2), backend, ref)


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "float16"),
                                     ("int32", "float32"), ("float32", "bool"),
                                     ("bool", "int32"), ("float64", "float32"),
                                     ("float32", "bfloat16"), ("int64", "int32")])
def test_casts(backend, ref, rng, src, dst):
    if not supports(backend, [src, dst]):
        pytest.skip("dtype refusals are checked in test_dtype_matrix")
    x = random_tensor(rng, (33,), src)
    check(lambda b: on(b, x).to(getattr(burn, dst)), backend, ref)


def test_operators(backend, ref, rng):
    x = random_tensor(rng, (4, 5), "float32", 0.5, 2.0)
    i = random_tensor(rng, (4, 5), "int32", 1, 9)
    check(lambda b: (-on(b, x), abs(on(b, x)), on(b, x) ** 2, 2 ** on(b, x), 1 / on(b, x),
                     on(b, x) // 0.3, on(b, x) % 0.3, on(b, x) >= 1.0, on(b, x) != 1.0),
          backend, ref)
    check(lambda b: (on(b, i) & 3, on(b, i) | 4, on(b, i) ^ 5, ~on(b, i), on(b, i) << 2,
                     on(b, i) >> 1, ~(on(b, i) > 3)), backend, ref)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "bool"])
def test_squares(backend, ref, rng, dtype):
    """``x ** 2`` (an int, a float or a NumPy 2) is ``x * x`` exactly, rounded once, with
    pow's dtype: special values included; a bool squared is pow's integer."""
    if not supports(backend, [dtype]):
        pytest.skip("dtype refusals are checked in test_dtype_matrix")
    x = random_tensor(rng, (40,), dtype)
    if dtype.startswith("float") or dtype == "bfloat16":
        x[:6] = [np.inf, -np.inf, np.nan, -0.0, 1e-30, -3e4]
    twos = (2, 2.0, np.float32(2), np.int64(2))
    check(lambda b: tuple(on(b, x) ** two for two in twos), backend, ref)
    if dtype != "bool":
        for two in twos:
            squared, product = (on(backend, x) ** two), on(backend, x) * on(backend, x)
            if squared.dtype == product.dtype:  # (NumPy's NaN-aware compare: in float64)
                np.testing.assert_array_equal(squared.numpy().astype(np.float64),
                                              product.numpy().astype(np.float64))


def test_nan_like_numpy(backend, ref, rng):
    """NaN through sign, a cast to bool (True), maximum/minimum, relu and clamp (NaN)."""
    x = random_tensor(rng, (4, 9), "float32")
    y = random_tensor(rng, (4, 9), "float32")
    x[:, :2] = y[:, 1:3] = np.nan
    check(lambda b: (burn.sign(on(b, x)), on(b, x).to(burn.bool), burn.relu(on(b, x)),
                     burn.maximum(on(b, x), on(b, y)), burn.minimum(on(b, x), on(b, y)),
                     on(b, x).clamp(-0.5, 0.5)), backend, ref)


def test_shifts_past_the_width(backend, ref, rng):
    """NumPy's: by 32 or more (or a negative amount) `<<` gives 0 and `>>` 0 or -1."""
    i = random_tensor(rng, (4, 8), "int32")
    s = rng.choice(np.array([0, 5, 31, 32, 33, 64, 100, -1], np.int32), (4, 8))
    check(lambda b: (on(b, i) << on(b, s), on(b, i) >> on(b, s), on(b, i) << 40,
                     on(b, i) >> 40), backend, ref)


def test_bad_input(backend, rng):
    x = on(backend, random_tensor(rng, (3, 4), "float32"))
    y = on(backend, random_tensor(rng, (5,), "float32"))
    with pytest.raises(burn.BurnError, match=r"add: shapes \(3, 4\) and \(5,\) do not broadcast"):
        x + y
    with pytest.raises(burn.BurnError, match="bitwise_and: needs integer or bool tensors"):
        x & x
    other = burn.from_numpy(np.ones(3, np.float32), backend="numpy")
    with pytest.raises(burn.BurnError, match="mul: tensors are on different devices"):
        x[0, :3] * other
    with pytest.raises(burn.BurnError, match="operands must be tensors or numbers"):
        x + "1"


def test_float_floor_divide_and_remainder_are_numpys(backend, rng):
    """Exact remainders with the divisor's sign, also where x / y is large or infinite: they
    were x - floor(x / y) * y, off by up to 0.57 at x ~ 1e4, y ~ 0.1 (the reference too)."""
    x = np.concatenate([rng.uniform(-1e4, 1e4, 60), [5.0, -5.0, np.inf, -0.3, 0.5, 0.0]])
    y = np.concatenate([rng.uniform(0.05, 0.2, 60) * rng.choice([-1, 1], 60),
                        [np.inf, np.inf, 2.0, 0.1, -np.inf, -3.0]])
    x, y = x.astype(np.float32), y.astype(np.float32)
    a, b = on(backend, x), on(backend, y)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(burn.remainder(a, b).numpy(), np.remainder(x, y))
        np.testing.assert_array_equal(burn.floor_divide(a, b).numpy(), np.floor_divide(x, y))
