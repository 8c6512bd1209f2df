"""burn.train.MixedPrecision on every backend present, in bfloat16 and float16.

- One step's gradients reach the float32 parameters in float32 and match a float64
  reference within the compute dtype's rounding; the model really runs in that dtype.
- A Learner trains in mixed precision (parameters kept in float32, validation in the
  compute dtype); float16's dynamic loss scale skips the steps that overflow, halves and
  regrows; a resumed run restores the scale and equals the uninterrupted one bit for bit.
- What a backend lacks (bfloat16 on WebGPU) and every bad argument are clear errors.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from optest import expect_unsupported
from test_train import blobs

import burn
from burn import nn, optim
from burn.backend.base import BurnError
from burn.data import ArrayDataset, DataLoader
from burn.train import Dashboard, Learner, MixedPrecision

DTYPES = ["bfloat16", "float16"]
# the error of one step's gradients, relative to the largest: about ten units in the last
# place of the compute dtype (2**-8 for bfloat16, 2**-11 for float16) through two layers and
# a normalization (measured: 0.020 and 0.0021 at worst over five draws)
GRAD_TOLERANCE = {"bfloat16": 10 * 2.0 ** -8, "float16": 10 * 2.0 ** -11}


def mlp(backend, inputs: int = 2) -> nn.Module:
    generator = burn.Generator(3)
    return nn.Sequential(nn.Linear(inputs, 16, generator=generator), nn.Tanh(),
                         nn.LayerNorm(16), nn.Linear(16, 3, generator=generator)).to(backend)


def supported(backend, dtype: str) -> bool:
    return dtype in backend.dtypes


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_reach_the_float32_parameters(backend, dtype, rng):
    """One step in ``dtype``: the gradients of the float32 parameters are float32 and
    match float64's (the same model on NumPy) within the dtype's rounding."""
    ad = burn.Autodiff(backend)
    amp = MixedPrecision(dtype, loss_scale=None if dtype == "bfloat16" else 256.0)
    if not supported(backend, dtype):
        expect_unsupported(backend, dtype, lambda: amp.check_backend(backend))
        return
    x = rng.normal(size=(32, 4)).astype(np.float32)
    labels = rng.integers(0, 3, 32)
    model = mlp(ad, inputs=4).require_grad()
    compute = amp.compute_model(model)
    hidden = compute(*amp.inputs([burn.tensor(x, backend=ad)]))
    assert hidden.dtype.name == dtype  # it ran in the compute dtype
    loss = nn.cross_entropy(amp.output(hidden), burn.tensor(labels, backend=ad))
    grads = amp.unscale(amp.scale(loss).backward())

    exact_backend = burn.Autodiff(burn.backend_for("numpy"))
    exact = model.detach().map_parameters(
        lambda name, p: burn.tensor(p.numpy().astype(np.float64), backend=exact_backend)
    ).require_grad()
    exact_loss = nn.cross_entropy(exact(burn.tensor(x.astype(np.float64),
                                                    backend=exact_backend)),
                                  burn.tensor(labels, backend=exact_backend))
    exact_grads = exact_loss.backward()
    tolerance = GRAD_TOLERANCE[dtype]
    for (path, p), (_, q) in zip(model.named_parameters(), exact.named_parameters()):
        got, want = grads[p], exact_grads[q].numpy()
        assert str(got.dtype) == "f32", path
        np.testing.assert_allclose(got.numpy(), want, rtol=tolerance,
                                   atol=tolerance * np.abs(want).max(), err_msg=path)
    assert abs(float(loss.numpy()) - float(exact_loss.numpy())) < 4 * tolerance


def loader(backend, seed: int = 0, batch_size: int = 24) -> DataLoader:
    return DataLoader(ArrayDataset(*blobs(32, seed)), batch_size, shuffle=True, seed=seed,
                      backend=backend)


@pytest.mark.parametrize("dtype", DTYPES)
def test_learner_trains_in_mixed_precision(backend, dtype):
    """Four epochs with Adam: the loss falls as float32's does, the parameters stay
    float32, and validation runs in the compute dtype too."""
    if not supported(backend, dtype):
        expect_unsupported(backend, dtype, lambda: Learner(
            mlp(backend), optim.Adam(lr=0.05), nn.cross_entropy, precision=dtype))
        return
    valid = DataLoader(ArrayDataset(*blobs(20, seed=7)), 30, backend=backend)
    runs = {}
    for precision in (None, dtype):
        learner = Learner(mlp(backend), optim.Adam(lr=0.05), nn.cross_entropy,
                          metrics=[burn.train.Accuracy()], dashboard=False,
                          precision=precision)
        runs[precision] = (learner.fit(loader(backend), epochs=4, valid=valid), learner)
    model, learner = runs[dtype]
    assert all(str(p.dtype) == "f32" for p in model.parameters())
    losses = [r["train"]["loss"] for r in learner.history]
    plain = [r["train"]["loss"] for r in runs[None][1].history]
    assert losses[-1] < 0.3 * losses[0]
    np.testing.assert_allclose(losses, plain, rtol=GRAD_TOLERANCE[dtype])
    assert learner.history[-1]["valid"]["accuracy"] >= 0.9
    assert learner.step == 16  # no step skipped
    assert learner.history[-1].get("skipped_steps", 0) == 0


def test_batch_norm_statistics_stay_float32_and_are_updated(backend):
    """A model with BatchNorm trained in bfloat16 (float16 where bfloat16 is missing): its
    running statistics are the float32 model's own, moved by each step, never trained."""
    dtype = "bfloat16" if supported(backend, "bfloat16") else "float16"
    generator = burn.Generator(5)
    model = nn.Sequential(nn.Linear(2, 8, generator=generator), nn.BatchNorm(8), nn.Tanh(),
                          nn.Linear(8, 3, generator=generator)).to(backend)
    if not supported(backend, dtype):
        expect_unsupported(backend, dtype, lambda: Learner(
            model, optim.AdamW(lr=0.05), nn.cross_entropy, precision=dtype))
        return
    learner = Learner(model, optim.AdamW(lr=0.05), nn.cross_entropy, precision=dtype,
                      dashboard=False)
    trained = learner.fit(loader(backend), epochs=2)
    statistics = trained.layers[1]
    assert str(statistics.running_mean.dtype) == "f32"
    assert not np.allclose(statistics.running_mean.numpy(), 0.0)
    assert statistics.num_batches_tracked.item() == learner.step  # every step's batch
    assert not any(key.startswith("layers.1.running")
                   for key in learner.optimizer.state_dict())
    losses = [r["train"]["loss"] for r in learner.history]
    assert losses[-1] < losses[0]


def test_dynamic_loss_scale_skips_overflowing_steps(backend):
    """float16 from a scale of 2**24: the first steps' gradients overflow, are skipped (the
    parameters and the optimizer's count unchanged) and halve the scale; training then
    goes on. The epoch record and the dashboard say so."""
    if not supported(backend, "float16"):
        expect_unsupported(backend, "float16", lambda: Learner(
            mlp(backend), optim.Adam(lr=0.05), nn.cross_entropy, precision="float16"))
        return
    stream = io.StringIO()
    amp = MixedPrecision("float16", init_scale=2.0 ** 24, growth_interval=3)
    learner = Learner(mlp(backend), optim.Adam(lr=0.05), nn.cross_entropy, precision=amp,
                      dashboard=Dashboard(stream=stream, live=False))
    model = learner.fit(loader(backend), epochs=3)
    skipped = sum(r["skipped_steps"] for r in learner.history)
    assert skipped >= 1 and amp.skipped_steps == skipped
    assert learner.step == 12 - skipped
    assert learner.optimizer.state_dict()["layers.0.weight/step"] == learner.step
    # halved once per skipped step, doubled after every 3 good steps in a row
    assert learner.history[-1]["loss_scale"] == amp.scale_factor < 2.0 ** 24
    assert "skipped: their float16 gradients overflowed" in stream.getvalue()
    assert all(np.isfinite(p.numpy()).all() for p in model.parameters())
    losses = [r["train"]["loss"] for r in learner.history]
    assert losses[-1] < 0.5 * losses[0]


def test_scale_bookkeeping():
    """unscale: a non-finite gradient skips and halves; growth_interval good steps double;
    a fixed scale divides and never checks; state_dict round-trips."""
    ad = burn.Autodiff(burn.Cpu())
    w = burn.tensor(np.array([1.0, -2.0], np.float32), backend=ad).require_grad()
    amp = MixedPrecision("float16", init_scale=8.0, growth_interval=2)
    big = (w.to("float16") * 60000.0).sum()  # its gradient, 8 * 60000, overflows float16
    assert amp.unscale(amp.scale(big).backward()) is None
    assert (amp.scale_factor, amp.skipped_steps, amp.good_steps) == (4.0, 1, 0)
    small = (w.to("float16") * 3.0).sum()
    grads = amp.unscale(amp.scale(small).backward(), factor=0.5)
    np.testing.assert_array_equal(grads[w].numpy(), [1.5, 1.5])
    assert amp.good_steps == 1 and amp.scale_factor == 4.0
    amp.unscale(amp.scale(small).backward())
    assert amp.good_steps == 0 and amp.scale_factor == 8.0
    fixed = MixedPrecision("float16", loss_scale=1024.0)
    np.testing.assert_array_equal(fixed.unscale(fixed.scale(small).backward())[w].numpy(),
                                  [3.0, 3.0])
    assert not fixed.dynamic and fixed.scale_factor == 1024.0
    restored = MixedPrecision("float16")
    restored.load_state_dict(amp.state_dict())
    assert restored.state_dict() == amp.state_dict() == {"scale": 8.0, "good_steps": 0,
                                                         "skipped_steps": 1}
    assert repr(MixedPrecision("bf16")) == "MixedPrecision('bfloat16', loss_scale=None)"
    assert repr(MixedPrecision("float16")) == "MixedPrecision('float16', loss_scale='dynamic')"


def test_resumed_run_restores_the_loss_scale(tmp_path):
    """A float16 run stopped after two epochs and resumed equals the uninterrupted one bit
    for bit, the loss scale (which changed) included."""
    def learner(folder):
        amp = MixedPrecision("float16", init_scale=2.0 ** 20, growth_interval=2)
        return Learner(mlp("cpu"), optim.AdamW(lr=0.05), nn.cross_entropy, precision=amp,
                       checkpoints=folder, dashboard=False)

    straight = learner(tmp_path / "straight")
    expected = straight.fit(loader("cpu"), epochs=3)
    learner(tmp_path / "resumed").fit(loader("cpu"), epochs=2)
    resumed = learner(tmp_path / "resumed")
    got = resumed.fit(loader("cpu"), epochs=3, resume=True)
    assert resumed.precision.state_dict() == straight.precision.state_dict()
    assert straight.precision.skipped_steps >= 1
    assert resumed.step == straight.step
    for name, value in expected.state_dict().items():
        np.testing.assert_array_equal(got.state_dict()[name], value, err_msg=name)


@pytest.mark.parametrize("make, message", [
    (lambda: MixedPrecision("float32"), "must be 'bfloat16' or 'float16'"),
    (lambda: MixedPrecision("int8"), "must be 'bfloat16' or 'float16'"),
    (lambda: MixedPrecision("float16", loss_scale=-1.0), "loss_scale must be"),
    (lambda: MixedPrecision("float16", loss_scale="sometimes"), "loss_scale must be"),
    (lambda: MixedPrecision("float16", init_scale=0.0), "init_scale must be"),
    (lambda: MixedPrecision("float16", growth_interval=0), "growth_interval must be"),
    (lambda: Learner(mlp("cpu"), optim.SGD(lr=0.1), nn.cross_entropy, precision=3),
     "precision must be"),
    (lambda: Learner(mlp("cpu"), optim.SGD(lr=0.1), nn.cross_entropy, precision="float16",
                     capture=True), "dynamic loss scale reads"),
])
def test_precision_errors(make, message):
    with pytest.raises(BurnError, match=message):
        make()
