"""``batch_norm`` (torch's ``F.batch_norm``) and its fused backward pass on every backend:
the forward pass and the gradients of x, weight and bias against closed forms in float64
for every float dtype and every rank, statistics of the batch and running ones, the
channel-sum kernel's tiles and shares (across channels when positions are few, many shares
forced small), views, empty batches, the running statistics' in-place update (a tensor
momentum too), gradients against finite differences (through given statistics too),
second derivatives, bad input, and the kernels' GPU code compiled for sm_90 and gfx942."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from gradcheck import check_gradients, check_second_order
from optest import on, supports

import burn
import cubepy as cube
from cubepy.ir import dtypes as dt
from kernels import batch_norm as bn

EPS = 1e-5
#: the largest error against float64 of the results in each dtype: two rounding units of a
#: 16-bit result, sums over a few thousand float32/float64 values
TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12}


def _closed_form(x, dy, w, b, mean=None, var=None):
    """The output and the gradients of x, weight and bias in float64."""
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    axes = (0, *range(2, x.ndim))
    per_channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    own = mean is None
    mean = x.mean(axis=axes) if own else mean.astype(np.float64)
    var = x.var(axis=axes) if own else var.astype(np.float64)
    rstd = (1 / np.sqrt(var + EPS)).reshape(per_channel)
    normalized = (x - mean.reshape(per_channel)) * rstd
    scale = w.astype(np.float64).reshape(per_channel)
    out = normalized * scale + b.astype(np.float64).reshape(per_channel)
    g = dy * scale
    if own:
        dx = rstd * (g - g.mean(axis=axes, keepdims=True)
                     - normalized * (g * normalized).mean(axis=axes, keepdims=True))
    else:
        dx = g * rstd
    return out, dx, (dy * normalized).sum(axis=axes), dy.sum(axis=axes)


def _numpy(t: burn.Tensor) -> np.ndarray:
    return t.to(burn.float64).numpy() if t.dtype.name != "float64" else t.numpy()


def _run(backend, x, dy, w, b, training=True, mean=None, var=None):
    """burn's output and gradients of x, weight and bias on ``Autodiff(backend)``."""
    ad = burn.Autodiff(backend)
    xt = burn.from_numpy(x, backend=ad).require_grad()
    wt = burn.from_numpy(w, backend=ad).require_grad()
    bt = burn.from_numpy(b, backend=ad).require_grad()
    stats = [None if s is None else burn.from_numpy(s, backend=ad) for s in (mean, var)]
    out = burn.batch_norm(xt, *stats, wt, bt, training=training, eps=EPS)
    grads = (out * burn.from_numpy(dy, backend=ad)).sum().backward()
    return [_numpy(t) for t in (out, grads[xt], grads[wt], grads[bt])]


def _check(backend, rng, shape, dtype, training=True):
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    if not supports(backend, [dtype]):  # WebGPU: no bfloat16, float64 where the adapter lacks it
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, np.zeros(shape, np_dtype))
        return
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(np_dtype)
    dy = rng.standard_normal(shape).astype(np_dtype)
    w = rng.uniform(0.5, 1.5, shape[1]).astype(np_dtype)
    b = rng.standard_normal(shape[1]).astype(np_dtype)
    stats = (None, None) if training else (rng.standard_normal(shape[1]).astype(np_dtype),
                                           rng.uniform(0.5, 2.0, shape[1]).astype(np_dtype))
    got = _run(backend, x, dy, w, b, training, *stats)
    want = _closed_form(x, dy, w, b, *stats)
    for name, g, e in zip(("out", "dx", "dw", "db"), got, want):
        scale = max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(g, e, rtol=0, atol=TOLERANCE[dtype] * scale, err_msg=name)


@pytest.mark.parametrize("shape", [(16, 8), (4, 6, 33), (3, 5, 7, 9), (2, 3, 4, 5, 6)],
                         ids=["NC", "NCL", "NCHW", "NCDHW"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_batch_norm_training(backend, rng, shape, dtype):
    _check(backend, rng, shape, dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_batch_norm_running_statistics(backend, rng, dtype):
    _check(backend, rng, (6, 4, 5), dtype, training=False)


@pytest.mark.parametrize("shape", [(300, 40), (64, 40, 3), (2, 3, 4096), (1, 70, 50),
                                   (5, 3, 2, 40)],
                         ids=["short-channels", "short", "long", "one-item", "two-axes"])
def test_channel_sum_tiles_and_shares(backend, rng, shape, monkeypatch):
    """Tiles across channels (positions under 32, channels not a multiple of the block),
    runs per item, one item; and every launch split into many shares, forced small."""
    _check(backend, rng, shape, "float32")
    monkeypatch.setattr(bn, "sum_splits", lambda ctx, storage, blocks, units, unit_tiles: 7)
    _check(backend, rng, shape, "float32")


def test_batch_norm_views_and_no_parameters(backend, rng):
    ad = burn.Autodiff(backend)
    x = rng.standard_normal((5, 4, 6)).astype(np.float32)
    stored = burn.from_numpy(np.ascontiguousarray(x.transpose(2, 1, 0)), backend=ad)
    xt = stored.permute(2, 1, 0).require_grad()  # a transposed view of x
    out = burn.batch_norm(xt, training=True, eps=EPS)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    grad = (out * burn.from_numpy(dy, backend=ad)).sum().backward()[xt]
    want, dx, _, _ = _closed_form(x, dy, np.ones(4), np.zeros(4))
    np.testing.assert_allclose(out.numpy(), want, atol=2e-5)
    np.testing.assert_allclose(grad.numpy(), dx, atol=2e-5)


def test_batch_norm_updates_running_statistics_in_place(backend, rng):
    x = rng.standard_normal((8, 3, 4)).astype(np.float32)
    mean = burn.from_numpy(np.full(3, 0.5, np.float32), backend=backend)
    var = burn.from_numpy(np.full(3, 2.0, np.float32), backend=backend)
    burn.batch_norm(on(backend, x), mean, var, training=True, momentum=0.25)
    batch_mean, batch_var = x.mean(axis=(0, 2)), x.var(axis=(0, 2), ddof=1)
    np.testing.assert_allclose(mean.numpy(), 0.5 + (batch_mean - 0.5) * 0.25, atol=1e-6)
    np.testing.assert_allclose(var.numpy(), 2.0 + (batch_var - 2.0) * 0.25, atol=1e-5)
    rate = burn.from_numpy(np.array(0.5, np.float32), backend=backend)  # read on the device
    before = mean.numpy()
    burn.batch_norm(on(backend, x), mean, var, training=True, momentum=rate)
    np.testing.assert_allclose(mean.numpy(), before + (batch_mean - before) * 0.5, atol=1e-6)
    frozen = mean.numpy()
    burn.batch_norm(on(backend, x), mean, var)  # inference: the statistics are read only
    assert (mean.numpy() == frozen).all()


def test_empty_batch(backend):
    ad = burn.Autodiff(backend)
    x = burn.from_numpy(np.zeros((0, 3, 4), np.float32), backend=ad).require_grad()
    w = burn.from_numpy(np.ones(3, np.float32), backend=ad).require_grad()
    mean, var = burn.zeros(3, backend=ad), burn.ones(3, backend=ad)
    out = burn.batch_norm(x, mean, var, w)
    grads = out.sum().backward()
    assert out.shape == (0, 3, 4) and grads[x].shape == (0, 3, 4)
    assert grads[w].tolist() == [0.0, 0.0, 0.0]
    dx, dw, db = backend.batch_norm_backward(x.prim, x.prim, mean.prim, var.prim, None, EPS,
                                             True, dt.float32)
    assert dx.shape == (0, 3, 4) and burn.Tensor(dw, backend).tolist() == [0.0] * 3
    assert burn.Tensor(db, backend).tolist() == [0.0] * 3


@pytest.mark.parametrize("training", [True, False], ids=["batch", "running"])
def test_gradients_against_differences(backend, rng, training):
    def fn(x, w, b, mean, var):
        return burn.batch_norm(x, None if training else mean, None if training else var, w, b,
                               training=training) * 1.5

    arrays = [rng.standard_normal((4, 3, 5)), rng.uniform(0.5, 1.5, 3), rng.standard_normal(3),
              rng.standard_normal(3), rng.uniform(0.5, 2.0, 3)]
    check_gradients(fn, arrays, backend, "float32", rng)


def test_second_derivatives(backend, rng):
    x, w, b = rng.standard_normal((4, 3, 2)), rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)
    check_second_order(lambda a, c, d: burn.batch_norm(a, weight=c, bias=d, training=True),
                       [x, w, b], backend, "float32", rng)


def test_batch_norm_errors(backend):
    x = on(backend, np.zeros((4, 3), np.float32))
    with pytest.raises(burn.BurnError, match=r"batch_norm: the input must be \(N, C, \.\.\.\), "
                                             r"got shape \(3,\)"):
        burn.batch_norm(on(backend, np.zeros(3, np.float32)), training=True)
    with pytest.raises(burn.BurnError, match=r"batch_norm: the input must be a float tensor, "
                                             r"got int32"):
        burn.batch_norm(on(backend, np.zeros((4, 3), np.int32)), training=True)
    with pytest.raises(burn.BurnError, match=r"batch_norm: weight has shape \(4,\); expected "
                                             r"\(3,\), one per channel of the input \(4, 3\)"):
        burn.batch_norm(x, weight=on(backend, np.ones(4, np.float32)), training=True)
    with pytest.raises(burn.BurnError, match=r"give both running_mean and running_var"):
        burn.batch_norm(x, on(backend, np.zeros(3, np.float32)))
    with pytest.raises(burn.BurnError, match=r"training needs more than one value per channel"):
        burn.batch_norm(on(backend, np.zeros((1, 3), np.float32)), training=True)


def test_kernels_compile_for_sm90_and_gfx942(aot):
    """Without a GPU here, Triton's whole compiler checks the GPU code of every kernel: the
    channel sums in each mode and tile shape, the coefficients, and the normalizing kernel
    in each of its layouts; bfloat16 in, float32 sums."""
    if "triton" not in cube.available_targets():
        pytest.skip("Triton is not installed: no triton target to compile for")
    x = np.zeros((4, 8, 16), ml_dtypes.bfloat16)
    vec = np.ones(8, np.float32)
    coef = np.zeros((5, 8), np.float32)
    part = np.zeros((2, 1, 8), np.float32)
    eps = np.float32(EPS)
    f32 = dict(CT=cube.float32)
    launches = [(bn.channel_sums_kernel, (x, 0, x.copy(), 0, vec, 0, part, 8, 16, units, units,
                                          eps), dict(MODE=mode, PER_ITEM=per_item, KB=kb, CB=cb,
                                                     **f32))
                for mode in ("sum", "sqdev", "grad")
                for per_item, units, kb, cb in ((True, 4, 1024, 1), (False, 64, 32, 32))]
    launches += [
        (bn.channel_coefficients_kernel, (vec, 0, vec, 0, vec, 0, vec, 0, coef, 8, eps, eps),
         dict(HAS_W=True, HAS_B=True, BLOCK=64, **f32)),
        (bn.channel_backward_coefficients_kernel, (part, 0, vec, 0, vec, 0, vec, 0, coef, 8,
                                                   eps, eps), dict(HAS_W=True, BLOCK=64, **f32)),
    ]
    launches += [(bn.channel_affine_kernel, (x, 0, x.copy(), 0, coef, x.copy(), 16, 8, 16),
                  dict(PER_ROW=per_row, UNIT=unit, HAS_D=True, DT=cube.bfloat16, BLOCK=256,
                       **f32))
                 for per_row, unit in ((True, False), (False, True), (False, False))]
    for fn, args, flags in launches:
        compiled, _, _ = cube.kernel(fn.fn).compiled(args, {**flags, "target": "triton"})
        assert set(compiled.aot) == {"cuda:90", "hip:gfx942"}, (fn.fn.__name__, flags)
        assert "st.global" in compiled.aot["cuda:90"].asm["ptx"]
        assert "global_store" in compiled.aot["hip:gfx942"].asm["amdgcn"]
