"""The fused backward pass of layer_norm and rms_norm (``norm_backward``) on every backend,
against the closed-form gradients in float64: every float dtype, rows in one tile and rows
longer than a tile, several normalized axes, cubes that loop over many row tiles, views,
inputs without weight or bias, a bfloat16 input with a float32 weight, empty tensors. (The
finite-difference checks of the same gradients are in test_autodiff.py; their GPU time and
memory against torch are measured by bench/norm_backward_gpu_bench.py.)"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from optest import expect_unsupported, on, random_tensor, strided, supports

import burn
import cubepy as cube
from kernels import norm_grad

FLOATS = ["float16", "bfloat16", "float32", "float64"]
# (rtol, atol as a fraction of the largest gradient): two units of rounding of 16-bit results
# (they compute in float32); float32 and float64, their sums' error over rows of 20000 (about
# 16 units; the worst seen on cpu, Triton's interpreter and lavapipe was 2.3e-4, 1.8e-3,
# 1.0e-7 and 2.2e-16 of |want| + the largest gradient)
TOLERANCE = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-6, "float64": 1e-13}
# A row in one tile, several normalized axes, a row longer than a tile on every target.
CASES = [((6, 37), 1), ((3, 5, 8), 2), ((3, 20000), 1)]


def expected_gradients(x: np.ndarray, k: int, weight: np.ndarray | None, grad: np.ndarray,
                       eps: float, rms: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dx, dweight, dbias of ``sum(norm(x) * grad)`` in float64, in closed form."""
    x, g = x.astype(np.float64), grad.astype(np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    centered = x if rms else x - x.mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt((centered ** 2).mean(axis=axes, keepdims=True) + eps)
    n = centered * rstd
    gy = g if weight is None else g * weight.astype(np.float64)
    d = gy - n * (gy * n).mean(axis=axes, keepdims=True)
    if not rms:
        d -= gy.mean(axis=axes, keepdims=True)
    leading = tuple(range(x.ndim - k))
    return d * rstd, (g * n).sum(axis=leading), g.sum(axis=leading)


def gradients(backend: burn.Backend, x: burn.Tensor | np.ndarray, k: int,
              weight: np.ndarray | None, bias: np.ndarray | None, grad: np.ndarray,
              eps: float, rms: bool, track_x: bool = True) -> list[np.ndarray | None]:
    """burn's gradients of x, weight and bias (None where not given) on ``Autodiff(backend)``."""
    ad = burn.Autodiff(backend)
    tx = x if isinstance(x, burn.Tensor) else on(backend, x)
    tx = burn.Tensor(tx.prim, ad)
    if track_x:
        tx = tx.require_grad()
    params = [None if a is None else on(ad, a).require_grad() for a in (weight, bias)]
    shape = tuple(tx.shape[tx.ndim - k:])
    if rms:
        y = burn.rms_norm(tx, shape, params[0], eps=eps)
    else:
        y = burn.layer_norm(tx, shape, params[0], params[1], eps=eps)
    grads = (y * on(ad, grad)).sum().backward()
    tracked = [tx if track_x else None] + params
    return [None if t is None else t.grad(grads).numpy() for t in tracked]


def assert_gradient(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    tol = TOLERANCE[dtype]
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-30)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
@pytest.mark.parametrize("case", CASES, ids=["tile", "two-axes", "long-rows"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_gradients_match_float64(backend, rng, dtype, case, rms):
    shape, k = case
    if not supports(backend, [dtype]):
        expect_unsupported(backend, dtype, lambda: on(backend, random_tensor(rng, 4, dtype)))
        return
    x = random_tensor(rng, shape, dtype, -3, 3)
    weight = random_tensor(rng, shape[-k:], dtype, 0.5, 2)
    bias = None if rms else random_tensor(rng, shape[-k:], dtype, -1, 1)
    grad = random_tensor(rng, shape, dtype, -1, 1)
    got = gradients(backend, x, k, weight, bias, grad, 1e-5, rms)
    want = expected_gradients(x, k, weight, grad, 1e-5, rms)
    assert got[0].dtype == x.dtype and got[1].dtype == weight.dtype
    for g, w in zip(got, want):
        if g is not None:
            assert_gradient(g, w, dtype)


@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
@pytest.mark.parametrize("shape", [(300, 37), (7, 20000)], ids=["tile", "long-rows"])
def test_cubes_share_the_rows(backend, rng, monkeypatch, shape, rms):
    # rows in a tile: three cubes for 5 or more row tiles, each one's partial sums of the
    # weight's and bias's gradients gather several tiles in registers; long rows: the
    # parameters' kernel sums slices of two rows, whose partial sums are added up after
    monkeypatch.setattr(norm_grad, "grad_cubes", lambda ctx, storage, n_tiles: 3)
    monkeypatch.setattr(norm_grad, "param_split_rows", lambda ctx, n_rows, blocks, rows: 2)
    x = random_tensor(rng, shape, "float32", -3, 3)
    weight = random_tensor(rng, shape[-1:], "float32", 0.5, 2)
    bias = random_tensor(rng, shape[-1:], "float32", -1, 1)
    grad = random_tensor(rng, shape, "float32", -1, 1)
    got = gradients(backend, x, 1, weight, None if rms else bias, grad, 1e-5, rms)
    for g, w in zip(got, expected_gradients(x, 1, weight, grad, 1e-5, rms)):
        if g is not None:
            assert_gradient(g, w, "float32")


@pytest.mark.parametrize("kind", ["transposed", "sliced", "flipped"])
def test_views_are_read_through_their_layout(backend, rng, kind):
    x = random_tensor(rng, (9, 12), "float32", -3, 3)
    weight = random_tensor(rng, (12,), "float32", 0.5, 2)
    grad = random_tensor(rng, (9, 12), "float32", -1, 1)
    view = strided(backend, x, kind)
    got = gradients(backend, view, 1, weight, weight, grad, 1e-3, False)
    for g, w in zip(got, expected_gradients(x, 1, weight, grad, 1e-3, False)):
        assert_gradient(g, w, "float32")


@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
def test_without_weight_or_bias(backend, rng, rms):
    x = random_tensor(rng, (4, 2, 6), "float32", -3, 3)
    grad = random_tensor(rng, (4, 2, 6), "float32", -1, 1)
    dx, dw, db = gradients(backend, x, 2, None, None, grad, 1e-5, rms)
    assert dw is None and db is None
    assert_gradient(dx, expected_gradients(x, 2, None, grad, 1e-5, rms)[0], "float32")


def test_parameters_alone_and_a_bias_without_weight(backend, rng):
    x = random_tensor(rng, (5, 16), "float32", -3, 3)
    weight = random_tensor(rng, (16,), "float32", 0.5, 2)
    grad = random_tensor(rng, (5, 16), "float32", -1, 1)
    _, dw, db = expected_gradients(x, 1, weight, grad, 1e-5, False)
    got = gradients(backend, x, 1, weight, weight, grad, 1e-5, False, track_x=False)
    assert got[0] is None
    assert_gradient(got[1], dw, "float32")
    assert_gradient(got[2], db, "float32")
    dx, _, db_alone = gradients(backend, x, 1, None, weight, grad, 1e-5, False)
    assert_gradient(dx, expected_gradients(x, 1, None, grad, 1e-5, False)[0], "float32")
    assert_gradient(db_alone, db, "float32")


def test_bfloat16_input_with_float32_weight(backend, rng):
    if not supports(backend, ["bfloat16"]):
        expect_unsupported(backend, "bfloat16",
                           lambda: on(backend, random_tensor(rng, 4, "bfloat16")))
        return
    x = random_tensor(rng, (8, 48), "bfloat16", -3, 3)
    weight = random_tensor(rng, (48,), "float32", 0.5, 2)
    bias = random_tensor(rng, (48,), "float32", -1, 1)
    grad = random_tensor(rng, (8, 48), "bfloat16", -1, 1)
    dx, dw, db = gradients(backend, x, 1, weight, bias, grad, 1e-5, False)
    assert (dx.dtype, dw.dtype, db.dtype) == (x.dtype, np.float32, np.float32)
    want = expected_gradients(x, 1, weight, grad, 1e-5, False)
    assert_gradient(dx, want[0], "bfloat16")
    for g, w in zip((dw, db), want[1:]):  # float32 sums of bfloat16 products
        assert_gradient(g, w, "float32")


@pytest.mark.parametrize("shape", [(0, 8), (3, 0)])
def test_empty_tensors(backend, rng, shape):
    x = np.zeros(shape, np.float32)
    weight = np.ones(shape[-1:], np.float32)
    dx, dw, db = gradients(backend, x, 1, weight, weight, x, 1e-5, False)
    assert dx.shape == shape and dw.shape == db.shape == shape[-1:]
    assert not dw.any() and not db.any()


@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
@pytest.mark.parametrize("kernel", ["tile", "loop", "param"])
def test_kernels_compile_for_sm90_and_gfx942(aot, kernel, rms):
    """Without a GPU here, the GPU code of the three kernels is checked by Triton's whole
    compiler (bfloat16 input, float32 statistics and partial sums); the H200 runs them in
    bench/h200_norm_backward_run.sh."""
    if "triton" not in cube.available_targets():
        pytest.skip("Triton is not installed: no triton target to compile for")
    x = np.zeros((8, 256), ml_dtypes.bfloat16)
    part = np.zeros((2, 4, 256), np.float32)
    eps = np.float32(1e-5)
    flags = dict(RMS=rms, CT=cube.float32, ROWS=2, BLOCK=64, target="triton")
    if kernel == "param":
        fn, args = norm_grad.norm_param_grad_kernel, (x, 0, x.copy(), 0, part, part, 8, 256, 2)
    else:
        flags.update(HAS_W=True, PARAMS=True, DT=cube.bfloat16)
        w = x[0].copy()
        if kernel == "tile":
            fn, args = norm_grad.norm_grad_tile_kernel, (x, 0, x.copy(), 0, x.copy(), part, 8,
                                                         256, 4, w, 0, eps)
            flags["BLOCK"] = 256
        else:
            fn, args = norm_grad.norm_grad_loop_kernel, (x, 0, x.copy(), 0, x.copy(), part, 8,
                                                         256, w, 0, eps)
    compiled, _, _ = cube.kernel(fn.fn).compiled(args, flags)
    assert set(compiled.aot) == {"cuda:90", "hip:gfx942"}
    assert "st.global" in compiled.aot["cuda:90"].asm["ptx"]
    assert "global_store" in compiled.aot["hip:gfx942"].asm["amdgcn"]
