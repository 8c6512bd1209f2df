"""burn.nn: layers against NumPy (and the functional ops), modules as values, the losses and
their gradients, and the errors a user can cause; on every backend present."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients
from util import assert_close

import burn
from burn import nn


def _np(t: burn.Tensor) -> np.ndarray:
    return t.numpy().astype(np.float64)


def test_linear_and_sequential_against_numpy(backend, rng):
    model = nn.Sequential(nn.Linear(5, 7), nn.GELU(), nn.Linear(7, 3, bias=False)).to(backend)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    w1, b1, w2 = (_np(p) for p in model.parameters())
    h = x @ w1.T + b1
    h = h * 0.5 * (1 + np.vectorize(__import__("math").erf)(h / np.sqrt(2)))
    assert_close(model(burn.from_numpy(x, backend=backend)).numpy(), h @ w2.T)
    assert len(model) == 3 and isinstance(model[1], nn.GELU)


def test_layers_match_the_functional_ops(backend, rng):
    x = burn.from_numpy(rng.normal(size=(2, 4, 9, 8)).astype(np.float32), backend=backend)
    conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2).to(backend)
    assert_close(conv(x).numpy(), burn.conv2d(x, conv.weight, conv.bias, 2, 1, 1, 2).numpy())
    seq = x.reshape(2, 4, 72)
    conv1 = nn.Conv1d(4, 2, 5, bias=False).to(backend)
    assert conv1.bias is None
    assert_close(conv1(seq).numpy(), burn.conv1d(seq, conv1.weight).numpy())
    pooled = nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(2, padding=1),
                           nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())(x)
    expected = burn.adaptive_avg_pool2d(burn.avg_pool2d(burn.max_pool2d(x, 2), 2, padding=1),
                                        (1, 1)).reshape(2, 4)
    assert_close(pooled.numpy(), expected.numpy())
    for layer, fn in ((nn.ReLU(), burn.relu), (nn.SiLU(), burn.silu), (nn.Tanh(), burn.tanh),
                      (nn.Sigmoid(), burn.sigmoid), (nn.Softmax(1), lambda t: t.softmax(1))):
        assert_close(layer(x).numpy(), fn(x).numpy())


@pytest.mark.parametrize("mode, numpy_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                              ("circular", "wrap")])
def test_convolution_padding_modes(backend, ref, rng, mode, numpy_mode):
    """padding_mode pads the input as NumPy's mode would, then convolves with no padding:
    against the NumPy backend's convolution of NumPy's padded input."""
    x = rng.normal(size=(2, 4, 6, 5)).astype(np.float32)
    conv = nn.Conv2d(4, 3, 3, padding=(1, 2), padding_mode=mode,
                     generator=burn.Generator(1)).to(backend)
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (2, 2)], mode=numpy_mode)
    expected = burn.conv2d(burn.from_numpy(padded, backend=ref), conv.weight.to(ref),
                           conv.bias.to(ref))
    assert_close(conv(burn.from_numpy(x, backend=backend)).numpy(), expected.numpy())
    line = x.reshape(2, 4, 30)
    conv1 = nn.Conv1d(4, 2, 5, padding=2, padding_mode=mode, bias=False).to(backend)
    expected = burn.conv1d(burn.from_numpy(np.pad(line, [(0, 0), (0, 0), (2, 2)],
                                                  mode=numpy_mode), backend=ref),
                           conv1.weight.to(ref))
    assert_close(conv1(burn.from_numpy(line, backend=backend)).numpy(), expected.numpy())


def test_norms_and_embedding(backend, rng):
    x = rng.normal(size=(3, 2, 4)).astype(np.float32)
    t = burn.from_numpy(x, backend=backend)
    norm = nn.LayerNorm((2, 4)).to(backend)
    flat = x.reshape(3, 8)
    expected = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    assert_close(norm(t).numpy(), expected.reshape(3, 2, 4))
    assert nn.LayerNorm(4, elementwise_affine=False).parameters() == []
    rms = nn.RMSNorm(4).to(backend)
    eps = np.finfo(np.float32).eps
    assert_close(rms(t).numpy(), x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))
    table = nn.Embedding(10, 3).to(backend)
    picked = table(burn.tensor([[1, 9], [0, 1]], backend=backend))
    assert_close(picked.numpy(), table.weight.numpy()[[[1, 9], [0, 1]]])


def test_initialization_is_seeded_and_bounded():
    a = nn.Linear(64, 32, generator=burn.Generator(3))
    b = nn.Linear(64, 32, generator=burn.Generator(3))
    assert np.array_equal(a.weight.numpy(), b.weight.numpy())
    weight = a.weight.numpy()
    bound = 1 / np.sqrt(64)
    assert np.all(np.abs(weight) <= bound) and np.abs(weight).max() > 0.9 * bound
    assert abs(weight.std() - bound / np.sqrt(3)) < 0.01  # uniform's std
    conv = nn.Conv2d(4, 8, (3, 2), groups=2, generator=burn.Generator(0))
    assert conv.weight.shape == (8, 2, 3, 2)
    assert np.abs(conv.weight.numpy()).max() <= 1 / np.sqrt(2 * 3 * 2)


def test_modules_are_values(backend):
    model = nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.5), nn.Linear(3, 1)).to(backend)
    names = [name for name, _ in model.named_parameters()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]
    assert model.num_parameters() == 2 * 3 + 3 + 3 + 1
    doubled = model.map_parameters(lambda name, p: p * 2)
    for old, new in zip(model.parameters(), doubled.parameters()):
        assert np.array_equal(new.numpy(), old.numpy() * 2)  # the old module is unchanged
    state = doubled.state_dict()
    restored = model.load_state_dict(state)
    for a, b in zip(restored.parameters(), doubled.parameters()):
        assert np.array_equal(a.numpy(), b.numpy()) and a.backend == backend
    evaluated = model.eval()
    assert model.training and model.layers[1].training
    assert not evaluated.training and not evaluated.layers[1].training
    x = burn.ones((64, 2), backend=backend)
    assert np.array_equal(evaluated(x).numpy(), evaluated(x).numpy())  # no dropout
    assert "Linear(weight=Tensor(3, 2)" in repr(model)


def test_module_errors(backend):
    model = nn.Linear(2, 3).to(backend)
    with pytest.raises(burn.BurnError, match=r"Linear: expects inputs whose last axis has 2 "
                                             r"features, got shape \(4, 5\)"):
        model(burn.ones((4, 5), backend=backend))
    with pytest.raises(burn.BurnError, match=r"missing \['bias'\], unexpected \['b'\]"):
        model.load_state_dict({"weight": np.zeros((3, 2)), "b": np.zeros(3)})
    with pytest.raises(burn.BurnError, match=r"weight has shape \(2, 3\), the module's "
                                             r"parameter \(3, 2\)"):
        model.load_state_dict({"weight": np.zeros((2, 3)), "bias": np.zeros(3)})
    with pytest.raises(burn.BurnError, match=r"must return a tensor of shape \(3,\) for bias"):
        model.map_parameters(lambda name, p: p.sum() if name == "bias" else p)
    with pytest.raises(burn.BurnError, match="6 input and 4 output channels must both divide "
                                             "into 4 groups"):
        nn.Conv2d(6, 4, 3, groups=4)
    with pytest.raises(burn.BurnError, match="Conv2d: padding_mode must be one of zeros, "
                                             "reflect, replicate, circular, got 'mirror'"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(burn.BurnError, match=r"p must be in \[0, 1\), got 1.0"):
        nn.Dropout(1.0)
    with pytest.raises(burn.BurnError, match="give one or more modules"):
        nn.Sequential()
    with pytest.raises(burn.BurnError, match="records no gradients"):
        model.require_grad()


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def test_losses_against_numpy(backend, rng):
    logits = rng.normal(size=(5, 4, 3)).astype(np.float32) * 3
    labels = rng.integers(0, 4, size=(5, 3))
    t, y = burn.from_numpy(logits, backend=backend), burn.from_numpy(labels, backend=backend)
    picked = np.take_along_axis(_log_softmax(logits, 1), labels[:, None], 1)[:, 0]
    assert_close(nn.cross_entropy(t, y, reduction="none").numpy(), -picked)
    assert_close(nn.cross_entropy(t, y).numpy(), -picked.mean())
    assert_close(nn.nll_loss(t.log_softmax(1), y, "sum").numpy(), -picked.sum())
    soft = rng.dirichlet(np.ones(4), size=(5, 3)).transpose(0, 2, 1).astype(np.float32)
    expected = -(soft * _log_softmax(logits, 1)).sum(1).mean()
    assert_close(nn.cross_entropy(t, burn.from_numpy(soft, backend=backend)).numpy(), expected)
    x = np.array([-100.0, -1.0, 0.0, 2.0, 100.0], np.float32)
    target = np.array([0.0, 1.0, 0.5, 1.0, 0.0], np.float32)
    bce = np.logaddexp(0, x) - x * target  # finite for logits of +-100
    got = nn.binary_cross_entropy_with_logits(burn.from_numpy(x, backend=backend),
                                              burn.from_numpy(target, backend=backend), "none")
    assert_close(got.numpy(), bce)
    a, b = (burn.from_numpy(v, backend=backend) for v in (x, target))
    assert_close(nn.mse_loss(a, b).numpy(), ((x - target) ** 2).mean())
    assert_close(nn.l1_loss(a, b, "sum").numpy(), np.abs(x - target).sum())


def test_loss_gradients(backend, rng):
    labels = np.array([2, 0, 1, 2])

    def cross_entropy(logits):
        return nn.cross_entropy(logits, burn.from_numpy(labels, backend=logits.backend)).reshape(1)

    check_gradients(cross_entropy, [rng.normal(size=(4, 3))], backend, "float32", rng)
    check_gradients(lambda x, t: nn.binary_cross_entropy_with_logits(x, t, "none"),
                    [rng.normal(size=(6,)) * 4, rng.uniform(size=(6,))], backend, "float32", rng)


def test_loss_errors(backend):
    logits = burn.ones((4, 3), backend=backend)
    with pytest.raises(burn.BurnError, match=r"target must be integer class indices of shape "
                                             r"\(4,\) for log-probabilities of shape \(4, 3\), "
                                             r"got int32 of shape \(4, 1\)"):
        nn.cross_entropy(logits, burn.zeros((4, 1), dtype=burn.int32, backend=backend))
    with pytest.raises(burn.BurnError, match=r"class probabilities must have the logits' shape"):
        nn.cross_entropy(logits, burn.zeros((4,), backend=backend))
    with pytest.raises(burn.BurnError, match="reduction must be one of mean, sum, none"):
        nn.mse_loss(logits, logits, reduction="avg")
    with pytest.raises(burn.BurnError, match=r"mse_loss: the prediction \(shape \(4, 3\)\) and "
                                             r"target \(shape \(3,\)\) must have one shape"):
        nn.mse_loss(logits, burn.ones(3, backend=backend))
