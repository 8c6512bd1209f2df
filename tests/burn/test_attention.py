"""Scaled dot-product attention on every backend against float64 NumPy: the fused op (self
and cross attention, causal with Sq < Sk and Sq > Sk, head dims 16, 24 and 64, odd
lengths, strided views, 3-D and 5-D inputs, float32/float16/bfloat16, its log-sum-exp
against the NumPy reference backend), the composed path (bool and float masks, float64, a
head dim past the kernels', Dv != D, a negative scale), gradients of q, k and v on
``burn.Autodiff`` against central differences, ``MultiHeadAttention`` and
``TransformerEncoderLayer`` against NumPy recomputations from their parameters, a short
training of ``MultiHeadAttention``, and bad input.

Tolerances are fractions of the output's largest magnitude: the fused kernel rounds the
attention weights to the input's dtype before multiplying them with v (as tensor cores
take them), so 16-bit results carry about one rounding of the weights and one of the output.
Shapes are small (B * H <= 4, sequences <= 40): the Triton interpreter and Numba are slow.
Cases share the kernels' compiled variants (dtype, head-dim tile, causal) where they can, as
Numba compiles each variant once per process.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central_differences
from optest import check, on, supports
from util import erf_ref, np_dtype

import burn

#: largest error of a fused result, as a fraction of the output's largest magnitude
TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-12}
#: the same for gradients (float32: as tests/burn/gradcheck.py; 16-bit: the weights and dS
#: are rounded to the dtype before their products, each a sum over up to 40 keys)
GRAD_TOLERANCE = {"float32": 2e-4, "float16": 1e-2, "bfloat16": 6e-2}


def _skip_missing(backend: burn.Backend, dtype: str) -> None:
    if not supports(backend, [dtype]):
        pytest.skip(f"{backend.name} has no {dtype} (its refusal is tested in test_tensor)")


def _data(rng: np.random.Generator, shape, dtype: str = "float32") -> np.ndarray:
    return rng.standard_normal(shape).astype(np_dtype(dtype))


def _weights64(q, k, causal=False, scale=None, mask=None) -> np.ndarray:
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention64(q, k, v, causal=False, scale=None, mask=None) -> np.ndarray:
    """The float64 NumPy reference: ``softmax(q @ k^T * scale + mask) @ v``."""
    return _weights64(q, k, causal, scale, mask) @ np.asarray(v, np.float64)


def assert_near(got: burn.Tensor, expected: np.ndarray, dtype: str) -> None:
    """``got`` has ``dtype`` and ``expected``'s shape and is within the dtype's tolerance of
    it, as a fraction of its largest magnitude."""
    assert got.dtype.name == dtype and got.shape == expected.shape, (got.dtype, got.shape)
    magnitude = float(np.abs(expected).max())
    np.testing.assert_allclose(got.numpy().astype(np.float64), expected, rtol=0,
                               atol=TOLERANCE[dtype] * magnitude)


def sdpa(backend: burn.Backend, q, k, v, **options) -> burn.Tensor:
    return burn.scaled_dot_product_attention(on(backend, q), on(backend, k), on(backend, v),
                                             **options)


# ---------------------------------------------------------------- the fused op

# (name, (B, H), Sq, Sk, D, causal)
FUSED_CASES = [
    ("self", (1, 2), 33, 33, 16, False),
    ("cross-causal", (2, 1), 7, 40, 64, True),
    ("one-query", (1, 2), 1, 7, 24, False),
    ("more-queries-causal", (2, 2), 9, 5, 16, True),  # rows past Sk see every key
]


@pytest.mark.parametrize("case", FUSED_CASES, ids=lambda c: c[0])
def test_fused(backend, rng, case):
    _, lead, sq, sk, d, causal = case
    q, k, v = _data(rng, (*lead, sq, d)), _data(rng, (*lead, sk, d)), _data(rng, (*lead, sk, d))
    assert_near(sdpa(backend, q, k, v, causal=causal), attention64(q, k, v, causal), "float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fused_16_bit(backend, rng, dtype):
    _skip_missing(backend, dtype)
    q, k, v = (_data(rng, (1, 2, s, 16), dtype) for s in (17, 33, 33))
    assert_near(sdpa(backend, q, k, v, causal=True), attention64(q, k, v, True), dtype)


def test_backend_op_and_log_sum_exp(backend, ref, rng):
    """``Backend.attention`` itself: the output and each row's log-sum-exp (which the backward
    kernel reads), against the NumPy reference backend, with a given scale."""
    q, k, v = _data(rng, (2, 2, 9, 24)), _data(rng, (2, 2, 12, 24)), _data(rng, (2, 2, 12, 24))

    def op(b):
        views = b.attention(on(b, q).prim, on(b, k).prim, on(b, v).prim, False, 0.3)
        return [burn.Tensor(view, b) for view in views]

    out, lse = op(backend)
    assert out.shape == (2, 2, 9, 24) and lse.shape == (2, 2, 9)
    assert lse.dtype == burn.float32 and lse.is_contiguous()
    magnitude = float(np.abs(attention64(q, k, v, False, 0.3)).max())
    check(op, backend, ref, rtol=1e-5, atol=1e-5 * magnitude)


def test_strided_inputs(backend, rng):
    """q from a (B, S, H, D) tensor's transpose(1, 2) (heads split off the features, as
    MultiHeadAttention does), k every other position of a longer tensor, v stored with its
    last two axes swapped."""
    q = _data(rng, (2, 11, 2, 16))           # (B, S, H, D) storage
    k = _data(rng, (2, 2, 26, 16))           # every other key used
    v = _data(rng, (2, 2, 16, 13))           # (B, H, D, S) storage
    got = burn.scaled_dot_product_attention(on(backend, q).transpose(1, 2),
                                            on(backend, k)[:, :, ::2],
                                            on(backend, v).transpose(-1, -2), causal=True)
    expected = attention64(q.transpose(0, 2, 1, 3), k[:, :, ::2], np.swapaxes(v, -1, -2), True)
    assert_near(got, expected, "float32")


def test_other_ranks(backend, rng):
    """(B, S, D) inputs are one head per batch; (A, B, H, S, D) fold A and B into the batch."""
    q, k, v = _data(rng, (3, 5, 16)), _data(rng, (3, 8, 16)), _data(rng, (3, 8, 16))
    assert_near(sdpa(backend, q, k, v), attention64(q, k, v), "float32")
    q, k, v = (_data(rng, (2, 1, 2, s, 16)) for s in (6, 6, 6))
    assert_near(sdpa(backend, q, k, v, causal=True), attention64(q, k, v, True), "float32")


def test_empty_queries_and_batches(backend, rng):
    k, v = _data(rng, (1, 2, 5, 16)), _data(rng, (1, 2, 5, 8))
    out = sdpa(backend, _data(rng, (1, 2, 0, 16)), k, v)
    assert out.shape == (1, 2, 0, 8) and out.dtype == burn.float32
    out = sdpa(backend, *(np.zeros((0, 2, 3, 16), np.float32) for _ in range(3)), causal=True)
    assert out.shape == (0, 2, 3, 16)


# ---------------------------------------------------------------- the composed path


def test_masks(backend, rng):
    """Masks run composed: bool (True: may attend) broadcast over batch and heads, float
    (added) per batch, each with and without ``causal``."""
    q, k, v = _data(rng, (2, 2, 6, 16)), _data(rng, (2, 2, 9, 16)), _data(rng, (2, 2, 9, 16))
    allowed = rng.random((6, 9)) < 0.7
    allowed[:, 0] = True  # no row fully masked
    bias = rng.uniform(-2, 0, (2, 1, 6, 9)).astype(np.float32)
    for causal in (False, True):
        got = sdpa(backend, q, k, v, mask=on(backend, allowed), causal=causal)
        assert_near(got, attention64(q, k, v, causal, mask=allowed), "float32")
        got = sdpa(backend, q, k, v, mask=on(backend, bias), causal=causal)
        assert_near(got, attention64(q, k, v, causal, mask=bias), "float32")


# (name, dtype, D, Dv, keyword arguments): each outside the fused op's reach
COMPOSED_CASES = [
    ("float64", "float64", 16, 16, {"causal": True}),
    ("head-dim-160", "float32", 160, 160, {}),
    ("value-dim-differs", "float32", 16, 24, {"causal": True}),
    ("negative-scale", "float32", 16, 16, {"scale": -0.5}),
]


@pytest.mark.parametrize("case", COMPOSED_CASES, ids=lambda c: c[0])
def test_composed(backend, rng, case):
    _, dtype, d, dv, options = case
    _skip_missing(backend, dtype)
    q, k = _data(rng, (1, 2, 7, d), dtype), _data(rng, (1, 2, 10, d), dtype)
    v = _data(rng, (1, 2, 10, dv), dtype)
    expected = attention64(q, k, v, options.get("causal", False), options.get("scale"))
    assert_near(sdpa(backend, q, k, v, **options), expected, dtype)


def test_promotes_mixed_float_dtypes(backend, rng):
    _skip_missing(backend, "float16")
    q, k, v = _data(rng, (1, 1, 4, 16), "float16"), _data(rng, (1, 1, 5, 16)), \
        _data(rng, (1, 1, 5, 16))
    got = sdpa(backend, q, k, v)
    assert_near(got, attention64(q, k, v), "float32")


# ---------------------------------------------------------------- gradients


# (name, dtype, (B, H), Sq, Sk, D, causal, with a mask)
GRADIENT_CASES = [
    ("fused-causal", "float32", (1, 2), 7, 7, 16, True, False),
    ("fused-cross", "float32", (2, 1), 5, 11, 24, False, False),
    ("fused-float16", "float16", (1, 2), 6, 9, 16, True, False),
    ("fused-bfloat16", "bfloat16", (1, 2), 6, 9, 16, True, False),
    ("composed-mask", "float32", (1, 2), 5, 8, 16, False, True),
]


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=lambda c: c[0])
def test_gradients(backend, rng, case):
    _, dtype, lead, sq, sk, d, causal, masked = case
    _skip_missing(backend, dtype)
    arrays = [_data(rng, (*lead, s, d), dtype).astype(np.float64) for s in (sq, sk, sk)]
    mask = rng.random((sq, sk)) < 0.6 if masked else None
    if mask is not None:
        mask[:, 0] = True
    weights = rng.uniform(0.5, 1.5, (*lead, sq, d))
    expected = central_differences(
        lambda a: float((attention64(*a, causal, mask=mask) * weights).sum()), arrays)
    ad = burn.Autodiff(backend)
    q, k, v = (burn.from_numpy(a.astype(np_dtype(dtype)), backend=ad).require_grad()
               for a in arrays)
    out = burn.scaled_dot_product_attention(
        q, k, v, causal=causal, mask=None if mask is None else burn.from_numpy(mask, backend=ad))
    grads = (out * burn.from_numpy(weights.astype(np_dtype(dtype)), backend=ad)).sum().backward()
    for name, x, e in zip("qkv", (q, k, v), expected):
        g = x.grad(grads)
        assert g.dtype.name == dtype and g.shape == e.shape and g.backend == backend, name
        tol = GRAD_TOLERANCE[dtype] * max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(g.numpy().astype(np.float64), e, rtol=0, atol=tol,
                                   err_msg=f"gradient of {name}")


def test_gradient_of_one_input(backend, rng):
    """Only v tracked: q and k are constants, whose gradients are not asked for."""
    q, k, v = (_data(rng, (1, 1, 4, 16)) for _ in range(3))
    ad = burn.Autodiff(backend)
    tracked = burn.from_numpy(v, backend=ad).require_grad()
    out = burn.scaled_dot_product_attention(on(ad, q), on(ad, k), tracked, causal=True)
    grad = out.sum().backward()[tracked]
    expected = _weights64(q, k, True).sum(axis=-2)[..., None] * np.ones(16)  # sum_i P[i, j]
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- layers


def _mha64(params: dict, query, key, value, heads: int, causal: bool) -> np.ndarray:
    """MultiHeadAttention recomputed in float64 NumPy from its parameters."""
    def linear(x, name):
        return x @ params[f"{name}.weight"].astype(np.float64).T + params[f"{name}.bias"]

    def split(x):
        b, s, e = x.shape
        return x.reshape(b, s, heads, e // heads).transpose(0, 2, 1, 3)

    attended = attention64(split(linear(query, "q_proj")), split(linear(key, "k_proj")),
                           split(linear(value, "v_proj")), causal)
    b, _, sq, _ = attended.shape
    return linear(attended.transpose(0, 2, 1, 3).reshape(b, sq, -1), "out_proj")


def test_multi_head_attention(backend, rng):
    mha = burn.nn.MultiHeadAttention(32, 2, kdim=8, vdim=12, dropout=0.5, backend=backend,
                                     generator=burn.Generator(0)).eval()  # eval: no dropout
    assert [name for name, _ in mha.named_parameters()] == [
        f"{p}.{w}" for p in ("q_proj", "k_proj", "v_proj", "out_proj") for w in ("weight", "bias")]
    query, key, value = _data(rng, (2, 5, 32)), _data(rng, (2, 9, 8)), _data(rng, (2, 9, 12))
    params = mha.state_dict()
    got = mha(on(backend, query), on(backend, key), on(backend, value), causal=True)
    assert_near(got, _mha64(params, query, key, value, 2, True), "float32")


def test_multi_head_attention_trains(backend, rng):
    """Two Adam steps of causal self-attention halve an MSE loss towards each position's
    running mean of the inputs (which uniform causal attention computes)."""
    ad = burn.Autodiff(backend)
    model = burn.nn.MultiHeadAttention(32, 2, backend=backend,
                                       generator=burn.Generator(1)).to(ad).require_grad()
    x = _data(rng, (2, 8, 32))
    target = on(ad, (np.cumsum(x, axis=1) / np.arange(1, 9)[:, None]).astype(np.float32))
    x = on(ad, x)
    optimizer = burn.optim.Adam(lr=3e-2)
    losses = []
    for _ in range(3):
        loss = burn.nn.mse_loss(model(x, causal=True), target)
        losses.append(loss.item())
        model = optimizer.step(model, loss.backward())
    assert losses[-1] < 0.5 * losses[0], losses


def _encoder64(params: dict, x: np.ndarray, norm_first: bool) -> np.ndarray:
    """TransformerEncoderLayer (GELU, causal) recomputed in float64 NumPy."""
    def norm(x, name):
        centered = x - x.mean(axis=-1, keepdims=True)
        scaled = centered / np.sqrt((centered ** 2).mean(axis=-1, keepdims=True) + 1e-5)
        return scaled * params[f"{name}.weight"] + params[f"{name}.bias"]

    def linear(x, name):
        return x @ params[f"{name}.weight"].astype(np.float64).T + params[f"{name}.bias"]

    def attention(x):
        inner = {name.removeprefix("self_attn."): value for name, value in params.items()}
        return _mha64(inner, x, x, x, 2, True)

    def feed_forward(x):
        hidden = linear(x, "linear1")
        return linear(hidden * 0.5 * (1 + erf_ref(hidden / np.sqrt(2))), "linear2")

    if norm_first:
        x = x + attention(norm(x, "norm1"))
        return x + feed_forward(norm(x, "norm2"))
    x = norm(x + attention(x), "norm1")
    return norm(x + feed_forward(x), "norm2")


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_transformer_encoder_layer(backend, rng, norm_first):
    layer = burn.nn.TransformerEncoderLayer(32, 2, 48, dropout=0.1, norm_first=norm_first,
                                            backend=backend, generator=burn.Generator(2)).eval()
    x = _data(rng, (2, 7, 32))
    got = layer(on(backend, x), causal=True)
    assert_near(got, _encoder64(layer.state_dict(), x, norm_first), "float32")


# ---------------------------------------------------------------- bad input


def test_errors(backend):
    q = burn.ones((1, 2, 4, 8), backend=backend)
    attend = burn.scaled_dot_product_attention
    ints = q.to(burn.int32)
    with pytest.raises(burn.BurnError, match=r"needs floating tensors, got int32 and int32 and "
                                             r"int32; cast with \.to\(burn\.float32\)"):
        attend(ints, ints, ints)
    with pytest.raises(burn.BurnError, match=r"q and k need one head dimension .*k \(1, 2, 4, 6\)"):
        attend(q, q[..., :6], q)
    with pytest.raises(burn.BurnError, match=r"equal leading \(batch, head\) axes"):
        attend(q, q[:, :1], q[:, :1])
    with pytest.raises(burn.BurnError, match=r"k and v need one number of keys"):
        attend(q, q, q[:, :, :3])
    with pytest.raises(burn.BurnError, match=r"no keys \(Sk == 0"):
        attend(q, q[:, :, :0], q[:, :, :0])
    with pytest.raises(burn.BurnError, match=r"q must have at least 2 dimensions"):
        attend(burn.ones(8, backend=backend), q, q)
    with pytest.raises(burn.BurnError, match=r"k must be a tensor, got ndarray"):
        attend(q, np.ones((1, 2, 4, 8)), q)
    with pytest.raises(burn.BurnError, match=r"scale must be finite, got nan; leave it None "
                                             r"for 1 / sqrt\(head dim\) = 0\.353553"):
        attend(q, q, q, scale=float("nan"))
    with pytest.raises(burn.BurnError, match=r"scale must be a number, got str"):
        attend(q, q, q, scale="0.5")
    with pytest.raises(burn.BurnError, match=r"mask of shape \(3, 4\) does not broadcast to "
                                             r"the scores' shape \(\.\.\., Sq, Sk\) = "
                                             r"\(1, 2, 4, 4\)"):
        attend(q, q, q, mask=burn.ones((3, 4), dtype=burn.bool, backend=backend))
    with pytest.raises(burn.BurnError, match=r"mask must be bool .* got int32; write "
                                             r"mask\.to\(burn\.bool\)"):
        attend(q, q, q, mask=burn.ones((4, 4), dtype=burn.int32, backend=backend))
    with pytest.raises(burn.BurnError, match=r"causal must be True or False, got 'tensor'"):
        attend(q, q, q, causal="tensor")


def test_layer_errors(backend):
    with pytest.raises(burn.BurnError, match=r"d_model \(30\) must be a positive multiple of "
                                             r"num_heads \(4\)"):
        burn.nn.MultiHeadAttention(30, 4)
    mha = burn.nn.MultiHeadAttention(8, 2, backend=backend)
    with pytest.raises(burn.BurnError, match=r"query must be \(batch, sequence, 8\), got "
                                             r"\(5, 8\); add a batch axis"):
        mha(burn.ones((5, 8), backend=backend))
    narrow_keys = burn.nn.MultiHeadAttention(8, 2, kdim=4, backend=backend)
    with pytest.raises(burn.BurnError, match=r"key must be \(batch, sequence, 4\), got "
                                             r"\(1, 5, 8\)$"):
        narrow_keys(burn.ones((1, 5, 8), backend=backend))  # the key defaults to the query
    with pytest.raises(burn.BurnError, match=r"need one batch size"):
        mha(burn.ones((1, 5, 8), backend=backend), burn.ones((2, 5, 8), backend=backend))
    with pytest.raises(burn.BurnError, match=r"activation must be one of \['gelu', 'relu'\], "
                                             r"got 'tanh'"):
        burn.nn.TransformerEncoderLayer(8, 2, 16, activation="tanh")
