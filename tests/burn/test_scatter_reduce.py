"""``scatter_reduce`` (sum, prod, mean, amax, amin; with and without ``include_self``) on every
backend: against the NumPy reference (``np.add/multiply/maximum/minimum.at``) over axes,
views, the dtype matrix and a src larger than the index; torch's documented results written
out; NaN, integer means, products with zeros; gradients against finite differences (products
through zeros too) and the even share among ties; bad input; the GPU code of the kernel
compiled for sm_90 and gfx942."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients
from optest import check, on, random_tensor, strided, supports

import burn
import cubepy as cube
from cubepy.ir import dtypes as dt
from kernels import scatter

REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


def _index(rng: np.random.Generator, shape, high: int, dtype: str = "int64") -> np.ndarray:
    return rng.integers(0, high, size=shape).astype(dtype)


def _atomics(backend: burn.Backend) -> frozenset[str]:
    return cube.target_info(backend.ctx.target.partition(":")[0]).atomic_dtypes


def _factors(rng: np.random.Generator, shape) -> np.ndarray:
    """Values whose products stay near 1 in float32: magnitudes in [0.7, 1.4), either sign."""
    signs = rng.choice([-1.0, 1.0], size=shape)
    return (signs * rng.uniform(0.7, 1.4, size=shape)).astype(np.float32)


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scatter_reduce(backend, ref, rng, axis, reduce, include_self):
    x = _factors(rng, (4, 6, 5))
    shape = [3, 5, 4]  # smaller than x off the axis ...
    shape[axis] = 9  # ... and longer along it: many elements per slot, some slots unnamed
    idx = _index(rng, shape, x.shape[axis])
    src = _factors(rng, [n + 1 for n in shape])  # larger than the index: the rest is unread
    check(lambda b: on(b, x).scatter_reduce(axis, on(b, idx), on(b, src), reduce,
                                            include_self=include_self), backend, ref)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_views(backend, ref, rng, reduce):
    x = _factors(rng, (6, 5))
    src = _factors(rng, (8, 5))
    idx = _index(rng, (8, 5), 6, "int32")
    check(lambda b: strided(b, x, "transposed").scatter_reduce(
        0, strided(b, idx, "flipped"), strided(b, src, "sliced"), reduce), backend, ref)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64"])
def test_scatter_reduce_dtypes(backend, ref, rng, dtype, reduce):
    if not supports(backend, [dtype]):
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, random_tensor(rng, 4, dtype))
        return
    small = dtype in ("int8", "uint8")
    x = random_tensor(rng, (5, 9), dtype, 0 if small else None, 4 if small else None)
    src = random_tensor(rng, (12, 9), dtype, 0 if small else None, 4 if small else None)
    if dtype.startswith(("float", "bfloat")):
        x, src = _factors(rng, x.shape).astype(x.dtype), _factors(rng, src.shape).astype(x.dtype)
    idx = _index(rng, (12, 9), 5)
    if dtype not in _atomics(backend) and dtype in ("float64", "int64"):  # WebGPU: 32-bit
        with pytest.raises(burn.BurnError, match=rf"scatter_reduce.* no atomics for {dtype}"):
            burn.scatter_reduce(on(backend, x), 0, on(backend, idx), on(backend, src),
                                "prod" if reduce == "mean" else reduce)
        return
    # products of integers wrap; 16-bit floats reduce in float32 and round once
    check(lambda b: burn.scatter_reduce(on(b, x), 0, on(b, idx), on(b, src), reduce), backend,
          ref)


def test_scatter_reduce_torch_results(backend):
    """torch's results for the same calls (torch 2.13, written out)."""
    x = on(backend, np.array([5.0, -7.0, 3.0], np.float32))
    idx = on(backend, np.array([0, 1, 1, 0]))
    src = on(backend, np.array([2.0, 2.0, -4.0, 3.0], np.float32))
    expected = {("sum", True): [10, -9, 3], ("sum", False): [5, -2, 3],
                ("prod", True): [30, 56, 3], ("prod", False): [6, -8, 3],
                ("mean", True): [10 / 3, -3, 3], ("mean", False): [2.5, -1, 3],
                ("amax", True): [5, 2, 3], ("amax", False): [3, 2, 3],
                ("amin", True): [2, -7, 3], ("amin", False): [2, -4, 3]}
    for (reduce, include_self), values in expected.items():
        got = x.scatter_reduce(0, idx, src, reduce, include_self=include_self).numpy()
        np.testing.assert_allclose(got, np.array(values, np.float32), rtol=1e-6,
                                   err_msg=f"{reduce}, include_self={include_self}")
    # an integer mean rounds down (-9 / 3 = -3, -2 / 2 = -1, -3 / 2 = -2)
    xi = on(backend, np.array([5, -7, 0], np.int32))
    si = on(backend, np.array([2, 2, -4, 3], np.int32))
    assert xi.scatter_reduce(0, idx, si, "mean").tolist() == [3, -3, 0]
    assert xi.scatter_reduce(0, idx, si, "mean", include_self=False).tolist() == [2, -1, 0]
    odd = on(backend, np.array([-1, -2], np.int32))
    pair = on(backend, np.array([0, 0]))
    assert xi.scatter_reduce(0, pair, odd, "mean", include_self=False).tolist() == [-2, -7, 0]


def test_scatter_reduce_nan_and_zeros(backend):
    x = on(backend, np.array([1.0, 2.0, 0.0, 4.0], np.float32))
    idx = on(backend, np.array([0, 0, 1, 2, 3]))
    src = on(backend, np.array([np.nan, 3.0, np.nan, 5.0, -0.5], np.float32))
    amax = x.scatter_reduce(0, idx, src, "amax").numpy()
    assert np.isnan(amax[0]) and np.isnan(amax[1]) and amax[2:].tolist() == [5.0, 4.0]
    amin = x.scatter_reduce(0, idx, src, "amin", include_self=False).numpy()
    assert np.isnan(amin[0]) and np.isnan(amin[1]) and amin[2:].tolist() == [5.0, -0.5]
    prod = x.scatter_reduce(0, idx, src, "prod").numpy()  # a NaN slot ends its CAS loop
    assert np.isnan(prod[0]) and np.isnan(prod[1]) and prod[2:].tolist() == [0.0, -2.0]


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_gradients(backend, rng, reduce, include_self):
    idx = np.array([[0, 2, 1], [2, 2, 0], [0, 0, 1], [2, 1, 1]])  # slot 1 of column 1: none

    def fn(x, src):
        index = burn.from_numpy(idx, backend=x.backend)
        return x.scatter_reduce(0, index, src, reduce, include_self=include_self) * 1.5

    values = rng.permutation(np.linspace(-2.0, 2.0, 40)).reshape(8, 5)  # distinct: no ties
    # src is larger than the index: its elements past the index get no gradient
    check_gradients(fn, [values[:3, :3], values[3:, :4]], backend, "float32", rng)


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
def test_scatter_reduce_prod_gradients_through_zeros(backend, rng, include_self):
    """A product is a polynomial in each factor, so the differences are exact even where
    factors are 0: one zero in a slot (the others' product flows to it), two (nothing
    flows)."""
    idx = np.array([[0, 1], [0, 1], [1, 0], [0, 1]])

    def fn(x, src):
        index = burn.from_numpy(idx, backend=x.backend)
        return x.scatter_reduce(0, index, src, "prod", include_self=include_self)

    x = np.array([[0.0, 1.5], [2.0, 0.0]])
    src = np.array([[0.5, 0.0], [3.0, -1.0], [-2.0, 0.75], [1.25, 2.0]])
    check_gradients(fn, [x, src], backend, "float32", rng)


def test_scatter_reduce_ties_share_the_gradient(backend):
    ad = burn.Autodiff(backend)
    x = burn.from_numpy(np.array([5.0, 1.0, 0.0], np.float32), backend=ad).require_grad()
    src = burn.from_numpy(np.array([5.0, 5.0, 2.0, 7.0], np.float32), backend=ad).require_grad()
    idx = burn.from_numpy(np.array([0, 0, 1, 1]), backend=ad)
    grads = x.scatter_reduce(0, idx, src, "amax").sum().backward()
    assert x.grad(grads).tolist() == pytest.approx([1 / 3, 0.0, 1.0])
    assert src.grad(grads).tolist() == pytest.approx([1 / 3, 1 / 3, 0.0, 1.0])
    # without x's values, the two src values share (torch 2.13 gives them 1/3 each: it counts
    # x's 5.0 among the ties although x takes no part in that slot)
    grads = x.scatter_reduce(0, idx, src, "amax", include_self=False).sum().backward()
    assert x.grad(grads).tolist() == [0.0, 0.0, 1.0]
    assert src.grad(grads).tolist() == [0.5, 0.5, 0.0, 1.0]


UFUNCS = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_index_add_and_index_reduce(backend, rng, axis, reduce):
    """The slice-wise forms against NumPy's ``ufunc.at`` along an axis (``index_add`` with
    an alpha for ``sum``), on a transposed view."""
    x = _factors(rng, (4, 5, 3))
    a = axis % 3
    index = rng.integers(0, x.shape[a], 7)
    source = _factors(rng, x.shape[:a] + (7,) + x.shape[a + 1:])
    want = x.astype(np.float64)
    moved = np.moveaxis(want, a, 0)  # a view: ufunc.at on it writes into want
    scale = 0.5 if reduce == "sum" else 1.0
    UFUNCS[reduce].at(moved, index, np.moveaxis(source, a, 0).astype(np.float64) * scale)
    xt = strided(backend, x, "transposed")
    if reduce == "sum":
        got = xt.index_add(axis, on(backend, index), on(backend, source), alpha=0.5)
    else:
        got = xt.index_reduce(axis, on(backend, index), on(backend, source), reduce)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_index_add_gradients(backend, rng):
    index = np.array([2, 0, 2])

    def fn(x, source):
        added = x.index_add(1, burn.from_numpy(index, backend=x.backend), source, alpha=3)
        return added.index_reduce(0, burn.from_numpy(np.array([1, 1]), backend=x.backend),
                                  added[:2] * 0.5, "amax")

    values = rng.permutation(np.linspace(-2.0, 2.0, 24))
    check_gradients(fn, [values[:12].reshape(3, 4), values[12:21].reshape(3, 3)], backend,
                    "float32", rng)


def test_index_add_errors(backend):
    x = on(backend, np.zeros((3, 4), np.float32))
    with pytest.raises(burn.BurnError, match=r"index_add: the index must be 1-D, got shape "
                                             r"\(1, 2\)"):
        x.index_add(0, on(backend, np.zeros((1, 2), np.int64)), x[:2])
    with pytest.raises(burn.BurnError, match=r"index_add: source has shape \(2, 3\); expected "
                                             r"\(2, 4\)"):
        x.index_add(0, on(backend, np.zeros(2, np.int64)), x[:2, :3])
    with pytest.raises(burn.BurnError, match=r"index_reduce: index values span \[0, 3\]"):
        x.index_reduce(0, on(backend, np.array([0, 3])), x[:2], "prod")
    xi = on(backend, np.zeros(3, np.int32))
    with pytest.raises(burn.BurnError, match=r"index_add: alpha must be an int for int32"):
        xi.index_add(0, on(backend, np.array([0])), xi[:1], alpha=0.5)


def test_scatter_reduce_errors(backend):
    x = on(backend, np.zeros((3, 4), np.float32))
    idx = on(backend, np.zeros((2, 4), np.int64))
    src = on(backend, np.ones((2, 4), np.float32))
    with pytest.raises(burn.BurnError, match=r"unknown reduce='max'; write one of 'sum', "
                                             r"'prod', 'mean', 'amax', 'amin'"):
        x.scatter_reduce(0, idx, src, "max")
    with pytest.raises(burn.BurnError, match=r"scatter_reduce: src \(int32.* must have the "
                                             r"input's dtype \(float32"):
        x.scatter_reduce(0, idx, on(backend, np.ones((2, 4), np.int32)), "amax")
    with pytest.raises(burn.BurnError, match=r"scatter_reduce: bool tensors cannot be reduced"):
        on(backend, np.zeros(3, bool)).scatter_reduce(0, idx[0, :3], on(backend, np.ones(3, bool)),
                                                      "amax")
    with pytest.raises(burn.BurnError, match=r"scatter_reduce: index values .*4"):
        x.scatter_reduce(0, idx + 4, src, "prod")
    with pytest.raises(burn.BurnError, match=r"scatter_reduce: the index \(shape \(2, 5\)\) is "
                                             r"larger than the input"):
        x.scatter_reduce(0, on(backend, np.zeros((2, 5), np.int64)),
                         on(backend, np.ones((2, 5), np.float32)), "amin")
    empty = on(backend, np.zeros((0, 4), np.int64))
    assert x.scatter_reduce(0, empty, src, "prod").tolist() == x.tolist()


@pytest.mark.parametrize("op", scatter.SCATTER_OPS)
def test_kernel_compiles_for_sm90_and_gfx942(aot, op):
    """Without a GPU here, Triton's whole compiler checks the GPU code of each op (the
    product's compare-and-swap loop included), on float32 and on int64."""
    if "triton" not in cube.available_targets():
        pytest.skip("Triton is not installed: no triton target to compile for")
    for values, bits in ((np.zeros(64, np.float32), cube.int32), (np.zeros(64, np.int64), None)):
        idx = np.zeros(64, np.int64)
        acc = values.copy()
        args = (values, 0, 1, 0, 0, 0, idx, 0, 1, 0, 0, 0, acc, 0, 1, 0, 0, 0, 64, 1, 1, 1, 1)
        flags = dict(OP=op, AT=dt.from_numpy(values.dtype), BITS=bits if op == "mul" else None,
                     RANK=1, BLOCK=64, target="triton")
        compiled, _, _ = cube.kernel(scatter.scatter_kernel.fn).compiled(args, flags)
        assert set(compiled.aot) == {"cuda:90", "hip:gfx942"}
        assert "atom" in compiled.aot["cuda:90"].asm["ptx"]
        assert "global_atomic" in compiled.aot["hip:gfx942"].asm["amdgcn"]
