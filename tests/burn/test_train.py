"""burn.train on every backend present: the Learner trains with loaders, schedules and
validation; metrics against NumPy; a resumed run equals the uninterrupted one bit for bit;
checkpoints, the dashboard's output, and every error a user can cause."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import burn
from burn import nn, optim
from burn.data import ArrayDataset, DataLoader
from burn.train import Accuracy, Checkpointer, Dashboard, Learner, Loss, MeanAbsoluteError
from burn.train.stopping import EarlyStopping

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import train_classifier  # noqa: E402 - the example is the code under test

CENTRES = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points around each of three centres, and their class (0, 1, 2)."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(3), n)
    points = CENTRES[labels] + rng.normal(0, 0.5, (3 * n, 2))
    return points.astype(np.float32), labels.astype(np.int64)


def loader(backend, n=32, seed=0, batch_size=24, shuffle=True):
    return DataLoader(ArrayDataset(*blobs(n, seed)), batch_size, shuffle=shuffle, seed=seed,
                      backend=backend)


def small_mlp(backend) -> nn.Module:
    generator = burn.Generator(3)
    return nn.Sequential(nn.Linear(2, 8, generator=generator), nn.Tanh(),
                         nn.Linear(8, 3, generator=generator)).to(backend)


def softmax_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), labels].mean())


def test_learner_trains_a_classifier(backend):
    model = nn.Linear(2, 3, generator=burn.Generator(0)).to(backend)
    learner = Learner(model, optim.SGD(lr=0.3, momentum=0.9), nn.cross_entropy,
                      metrics=[Accuracy()], dashboard=False)
    valid_x, valid_y = blobs(20, seed=7)
    valid = DataLoader(ArrayDataset(valid_x, valid_y), 25, backend=backend)
    model = learner.fit(loader(backend), epochs=4, valid=valid)

    assert [r["epoch"] for r in learner.history] == [0, 1, 2, 3]
    assert learner.step == 4 * 4 and learner.epochs_done == 4  # 96 items in batches of 24
    losses = [r["train"]["loss"] for r in learner.history]
    assert losses[-1] < 0.5 * losses[0]
    last = learner.history[-1]["valid"]
    assert last["accuracy"] >= 0.9
    # the validation metrics are those of the returned model, computed in NumPy
    state = model.state_dict()
    logits = valid_x.astype(np.float64) @ state["weight"].T.astype(np.float64) + state["bias"]
    # the loss is small (confident predictions) and each item's log-softmax is a difference of
    # float32 numbers as large as the logits: its rounding error is absolute, a few ulps of them
    atol = 8 * np.finfo(np.float32).eps * np.abs(logits).max()
    np.testing.assert_allclose(last["loss"], softmax_cross_entropy(logits, valid_y), rtol=1e-5,
                               atol=atol)
    assert last["accuracy"] == np.mean(logits.argmax(axis=1) == valid_y)


def test_resumed_run_equals_the_uninterrupted_one(backend, tmp_path):
    def learner(folder):
        schedule = optim.Warmup(optim.CosineDecay(0.05, total_steps=8), steps=3)
        return Learner(small_mlp(backend), optim.AdamW(lr=0.05), nn.cross_entropy,
                       schedule=schedule, metrics=[Accuracy()], clip_grad_norm=5.0,
                       checkpoints=folder, dashboard=False)

    straight = learner(tmp_path / "straight")
    expected = straight.fit(loader(backend, batch_size=48), epochs=4)
    learner(tmp_path / "resumed").fit(loader(backend, batch_size=48), epochs=2)  # stopped
    resumed = learner(tmp_path / "resumed")
    got = resumed.fit(loader(backend, batch_size=48), epochs=4, resume=True)

    assert resumed.step == straight.step == 8
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in straight.history]
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in resumed.history] == strip
    for name, value in expected.state_dict().items():
        np.testing.assert_array_equal(got.state_dict()[name], value, err_msg=name)
    assert Checkpointer(tmp_path / "resumed").epochs() == [2, 3]  # keep=2


def test_resumed_run_with_dropout_draws_as_the_uninterrupted_one(backend, tmp_path):
    """Dropout from the global generator and from a module's own: a resumed run restores both
    generators' states, so its masks (and so its parameters) are the uninterrupted run's."""
    def learner(folder):
        generator = burn.Generator(3)
        model = nn.Sequential(nn.Linear(2, 16, generator=generator), nn.Tanh(), nn.Dropout(0.3),
                              nn.Linear(16, 16, generator=generator), nn.Tanh(),
                              nn.Dropout(0.2, generator=burn.Generator(9)),
                              nn.Linear(16, 3, generator=generator)).to(backend)
        return Learner(model, optim.SGD(lr=0.1), nn.cross_entropy, checkpoints=folder,
                       dashboard=False)

    burn.manual_seed(11)
    expected = learner(tmp_path / "straight").fit(loader(backend, batch_size=48), epochs=4)
    burn.manual_seed(11)
    learner(tmp_path / "resumed").fit(loader(backend, batch_size=48), epochs=2)  # stopped
    # the same checkpoints without the generators' states, as an older burn wrote them
    shutil.copytree(tmp_path / "resumed", tmp_path / "forgetful")
    document = tmp_path / "forgetful" / "epoch-0001" / "learner.json"
    state = json.loads(document.read_text())
    assert sorted(state.pop("generators")) == ["default", "module:layers.5"]
    document.write_text(json.dumps(state))

    def resume(folder):
        burn.manual_seed(12345)  # another process would start elsewhere: the checkpoint decides
        return learner(folder).fit(loader(backend, batch_size=48), epochs=4, resume=True)

    got, forgetful = resume(tmp_path / "resumed"), resume(tmp_path / "forgetful")
    for name, value in expected.state_dict().items():
        np.testing.assert_array_equal(got.state_dict()[name], value, err_msg=name)
    # the masks matter: resumed without the generators' states, the run goes elsewhere
    assert any(not np.array_equal(forgetful.state_dict()[name], value)
               for name, value in expected.state_dict().items())


def test_schedule_and_clipping_reach_the_optimizer():
    model = nn.Linear(2, 3, generator=burn.Generator(0))
    frozen = Learner(model, optim.SGD(lr=1.0), nn.cross_entropy, schedule=0.0, dashboard=False)
    after = frozen.fit(loader("cpu"), epochs=1)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(after.state_dict()[name], value, err_msg=name)
    assert frozen.history[0]["lr"] == 0.0

    # one step of plain SGD with the gradient clipped to norm 1e-3 moves the weights by
    # lr * 1e-3 at most, in L2 over all parameters
    clipped = Learner(model, optim.SGD(lr=1.0), nn.cross_entropy, clip_grad_norm=1e-3,
                      dashboard=False)
    one_batch = [blobs(4, seed=1)]
    after = clipped.fit(one_batch, epochs=1)
    moved = np.sqrt(sum(((after.state_dict()[k] - v) ** 2).sum()
                        for k, v in model.state_dict().items()))
    np.testing.assert_allclose(moved, 1e-3, rtol=1e-3)


def test_learner_keeps_fusion(backend):
    fused = burn.Fusion(backend)
    plain = Learner(small_mlp(backend), optim.Adam(lr=0.02), nn.cross_entropy, dashboard=False)
    learner = Learner(small_mlp(fused), optim.Adam(lr=0.02), nn.cross_entropy, dashboard=False)
    assert learner.backend.inner is fused
    got = learner.fit(loader(backend), epochs=2)
    expected = plain.fit(loader(backend), epochs=2)
    assert fused.stats.launches > 0
    for name, value in expected.state_dict().items():
        np.testing.assert_allclose(got.state_dict()[name], value, rtol=1e-5, atol=1e-6)


def test_metrics_against_numpy(backend, rng):
    logits = rng.normal(size=(2, 10, 5)).astype(np.float32)
    labels = rng.integers(0, 5, size=(2, 10))
    sizes, values = (10, 3), (rng.uniform(0, 2, 2)).astype(np.float32)
    accuracy, loss, mae = Accuracy(), Loss(), MeanAbsoluteError()
    for i, size in enumerate(sizes):
        out = burn.from_numpy(logits[i, :size], backend=backend)
        target = burn.from_numpy(labels[i, :size], backend=backend)
        batch_loss = burn.from_numpy(values[i:i + 1].reshape(()), backend=backend)
        for metric in (accuracy, loss):
            metric.update(out, target, batch_loss)
        mae.update(out, burn.from_numpy(logits[1 - i, :size], backend=backend), None)
    hits = [logits[i, :s].argmax(axis=1) == labels[i, :s] for i, s in enumerate(sizes)]
    assert accuracy.value() == pytest.approx(np.concatenate(hits).mean(), rel=1e-7)
    assert loss.value() == pytest.approx((values * sizes).sum() / sum(sizes), rel=1e-6)
    differences = [np.abs(logits[i, :s] - logits[1 - i, :s]) for i, s in enumerate(sizes)]
    assert mae.value() == pytest.approx(np.concatenate(
        [d.ravel() for d in differences]).mean(), rel=1e-5)
    accuracy.reset()
    assert np.isnan(accuracy.value())


def test_metric_errors():
    with pytest.raises(burn.BurnError, match=r"Accuracy: outputs of shape \(4, 3\) need targets "
                                             r"of shape \(4,\).*got \(4, 3\)"):
        Accuracy().update(burn.zeros((4, 3)), burn.zeros((4, 3), dtype="int64"), None)
    with pytest.raises(burn.BurnError, match=r"targets must be class indices .* got float32; "
                                             r"for one-hot targets pass target.argmax"):
        Accuracy().update(burn.zeros((4, 3)), burn.zeros(4), None)
    with pytest.raises(burn.BurnError, match=r"Loss metric: the loss must be one number"):
        Loss().update(None, burn.zeros(4), burn.zeros(4))
    with pytest.raises(burn.BurnError, match=r"MeanAbsoluteError: output \(2,\) and target"):
        MeanAbsoluteError().update(burn.zeros(2), burn.zeros(3), None)


def test_dashboard_lines():
    out = io.StringIO()
    learner = Learner(small_mlp("cpu"), optim.SGD(lr=0.1), nn.cross_entropy,
                      metrics=[Accuracy()], dashboard=Dashboard(out, log_every=1e-9))
    learner.fit(loader("cpu"), epochs=2, valid=loader("cpu", seed=5, shuffle=False))
    lines = out.getvalue().splitlines()
    progress = [line for line in lines if "items/s" in line]
    assert len(progress) == 8 and all("eta" in line and "accuracy" in line for line in progress)
    assert progress[0].startswith("epoch 1/2 [#####...............] 1/4")
    epochs = [line for line in lines if "items/s" not in line]
    assert [line.split("  ")[0] for line in epochs] == ["epoch 1/2", "epoch 2/2"]
    assert all(" train loss " in line and " valid loss " in line and "%" in line and " lr 0.1"
               in line for line in epochs)


def test_live_dashboard_redraws_one_line():
    out = io.StringIO()
    board = Dashboard(out, live=True, refresh=0.0)
    board.start_epoch(0, epochs=1, batches=2)
    board.batch(1, 10, lambda: {"loss": "1.5"})
    board.batch(2, 20, lambda: {"loss": "1.2"})
    board.end_epoch({"train": {"loss": "1.2"}}, seconds=0.5)
    text = out.getvalue()
    assert text.count("\r\x1b[2K") == 3 and text.endswith("epoch 1/1  0.5 s  train loss 1.2\n")
    assert "[####################] 2/2" in text


def test_silent_learner_prints_nothing(capsys):
    Learner(small_mlp("cpu"), optim.SGD(lr=0.1), nn.cross_entropy,
            dashboard=False).fit(loader("cpu"), epochs=1)
    assert capsys.readouterr() == ("", "")


def test_checkpoints_are_whole_or_absent(tmp_path):
    model, opt = small_mlp("cpu"), optim.Adam()
    checkpoints = Checkpointer(tmp_path, keep=2)
    for epoch in range(3):
        checkpoints.save(epoch, model, opt, {"step": epoch, "history": []})
    assert checkpoints.epochs() == [1, 2]
    (tmp_path / ".epoch-0003.tmp-99").mkdir()  # a save killed half-way
    assert checkpoints.epochs() == [1, 2]
    assert json.loads((tmp_path / "epoch-0002" / "learner.json").read_text())["step"] == 2
    _, state = checkpoints.load(small_mlp("cpu"), optim.Adam(), epoch=1)
    assert state["epoch"] == 1

    (tmp_path / "epoch-0002" / "optimizer.safetensors").unlink()
    with pytest.raises(burn.BurnError, match=r"epoch-0002 is not a whole checkpoint .* delete "
                                             r"it to resume from the one before"):
        checkpoints.load(small_mlp("cpu"), optim.Adam())
    with pytest.raises(burn.BurnError, match=r"no checkpoint of epoch 7 .* \(there are \[1, 2\]\)"):
        checkpoints.load(small_mlp("cpu"), optim.Adam(), epoch=7)
    document = tmp_path / "epoch-0001" / "learner.json"
    document.write_text(json.dumps({"format": 99}))
    with pytest.raises(burn.BurnError, match=r"checkpoint format 99; this burn reads format 1"):
        checkpoints.load(small_mlp("cpu"), optim.Adam(), epoch=1)
    with pytest.raises(burn.BurnError, match=r"Checkpointer.load: no checkpoint in"):
        Checkpointer(tmp_path / "empty").load(model, opt)
    with pytest.raises(burn.BurnError, match=r"keep must be >= 1 \(or None for all\), got 0"):
        Checkpointer(tmp_path, keep=0)


def test_divergence_stops_the_run_and_keeps_the_last_checkpoint(tmp_path):
    x, _ = blobs(8, seed=2)
    y = x.sum(axis=1, keepdims=True)
    batches = [(x[:12], y[:12]), (x[12:], y[12:])]
    learner = Learner(nn.Linear(2, 1), optim.SGD(lr=0.1), nn.mse_loss,
                      schedule=lambda step: 0.01 if step < 2 else 1e38,
                      checkpoints=tmp_path, dashboard=False)
    with pytest.raises(burn.BurnError, match=r"the training loss of epoch 2 is (nan|inf) \(the "
                                             r"model diverged\): lower the learning rate, or "
                                             r"pass clip_grad_norm=1.0 .* checkpoint is kept"):
        learner.fit(batches, epochs=3)
    assert Checkpointer(tmp_path).epochs() == [0] and learner.epochs_done == 1


@pytest.mark.parametrize("make, message", [
    (lambda: Learner("mlp", optim.SGD(lr=0.1), nn.mse_loss),
     r"Learner: expected a burn.nn.Module to train, got str"),
    (lambda: Learner(nn.Linear(1, 1), "sgd", nn.mse_loss),
     r"expected an optimizer such as burn.optim.Adam\(lr=1e-3\), got str"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), "mse"),
     r"the loss must be a function of \(output, target\)"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss, metrics=["accuracy"]),
     r"metrics must be burn.train.Metric instances .* got str"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss, clip_grad_norm=0),
     r"clip_grad_norm must be > 0, got 0"),
    (lambda: Learner(nn.Tanh(), optim.SGD(lr=0.1), nn.mse_loss),
     r"Learner: Tanh has no parameter to train"),
    (lambda: Learner(nn.Sequential(nn.Linear(1, 1).to("cpu"), nn.Linear(1, 1).to("numpy")),
                     optim.SGD(lr=0.1), nn.mse_loss),
     r"parameters live on several backends .* model.to\(backend\)"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss,
                     dashboard=False).fit([np.zeros((2, 1), np.float32)], epochs=1),
     r"a batch must be a tuple \(inputs..., target\), got ndarray"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss,
                     dashboard=False).fit([(np.zeros((2, 1), np.float32), [1, 2])], epochs=1),
     r"batch values must be tensors or NumPy arrays, got list"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), lambda out, y: out,
                     dashboard=False).fit([(np.zeros((2, 1), np.float32),) * 2], epochs=1),
     r"the loss function must return one number .* got \(2, 1\)"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss,
                     dashboard=False).fit(iter([]), epochs=1),
     r"the training data yielded no batch .* pass a list or a burn.data.DataLoader"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss).fit([], epochs=-1),
     r"Learner.fit: epochs must be >= 0, got -1"),
    (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss).fit([], 1, resume=True),
     r"resume=True\) needs checkpoints: Learner\(..., checkpoints='runs/name'\)"),
])
def test_learner_errors(make, message):
    with pytest.raises(burn.BurnError, match=message):
        make()


def test_resume_without_a_checkpoint_starts_over(tmp_path):
    out = io.StringIO()
    learner = Learner(small_mlp("cpu"), optim.SGD(lr=0.1), nn.cross_entropy,
                      checkpoints=tmp_path / "run", dashboard=Dashboard(out, log_every=0))
    learner.fit(loader("cpu"), epochs=1, resume=True)
    assert out.getvalue().startswith(f"no checkpoint in {tmp_path / 'run'}: starting from the "
                                     f"first epoch\nepoch 1/1")
    out.truncate(0)
    out.seek(0)
    again = Learner(small_mlp("cpu"), optim.SGD(lr=0.1), nn.cross_entropy,
                    checkpoints=tmp_path / "run", dashboard=Dashboard(out, log_every=0))
    again.fit(loader("cpu"), epochs=2, resume=True)
    assert out.getvalue().startswith(f"resumed from {tmp_path / 'run' / 'epoch-0000'} (epoch 1, "
                                     f"step 4)\nepoch 2/2")


def test_example_resumes_a_killed_run(tmp_path):
    """The example's run, killed during its last epoch (its checkpoint never written), goes on
    from the checkpoint before and ends with the uninterrupted run's parameters."""
    full = train_classifier.run("cpu", epochs=5, per_class=60, checkpoints=tmp_path / "a",
                                dashboard=False)
    train_classifier.run("cpu", epochs=5, per_class=60, checkpoints=tmp_path / "b",
                         dashboard=False)
    shutil.rmtree(tmp_path / "b" / "epoch-0004")
    resumed = train_classifier.run("cpu", epochs=5, per_class=60, checkpoints=tmp_path / "b",
                                   resume=True, dashboard=False)
    assert resumed.epochs_done == 5 and resumed.step == full.step
    assert resumed.history[-1]["valid"] == full.history[-1]["valid"]
    for name, value in full.model.state_dict().items():
        np.testing.assert_array_equal(resumed.model.state_dict()[name], value, err_msg=name)
    losses = [r["train"]["loss"] for r in full.history]
    assert losses[-1] < 0.6 * losses[0]


@pytest.mark.parametrize("saved", [True, False], ids=["checkpoints", "none"])
def test_an_interrupted_run_says_where_to_resume(tmp_path, saved):
    calls = []

    def loss(output, target):  # Ctrl-C in the second epoch
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return nn.cross_entropy(output, target)

    out = io.StringIO()
    learner = Learner(small_mlp("cpu"), optim.SGD(lr=0.1), loss,
                      checkpoints=tmp_path if saved else None,
                      dashboard=Dashboard(out, log_every=0))
    with pytest.raises(KeyboardInterrupt):
        learner.fit(loader("cpu"), epochs=3)
    last = out.getvalue().splitlines()[-1]
    where = "interrupted in epoch 2 at step 5; "
    assert last == (where + f"fit(..., resume=True) goes on from the newest checkpoint, "
                    f"{tmp_path / 'epoch-0000'}" if saved else where + "no checkpoint was "
                    "written (Learner(..., checkpoints='runs/name') saves one after each epoch, "
                    "to resume from)")


class BatchCount(burn.train.Metric):
    """A metric of the user's own: how many batches an epoch (or an evaluation) saw."""

    name = "batches"

    def reset(self):
        self.seen = []

    def update(self, output, target, loss):
        self.seen.append(target.shape[0])

    def value(self):
        return float(len(self.seen))


def test_a_metric_of_ones_own_is_reset_per_epoch_and_phase():
    metric = BatchCount()
    learner = Learner(small_mlp("cpu"), optim.SGD(lr=0.1), nn.cross_entropy, metrics=[metric],
                      dashboard=False)
    learner.fit(loader("cpu"), epochs=2, valid=loader("cpu", batch_size=48, shuffle=False))
    assert [(r["train"]["batches"], r["valid"]["batches"]) for r in learner.history] == [
        (4.0, 2.0), (4.0, 2.0)]
    assert not hasattr(metric, "seen")  # the learner measured with copies


def test_early_stopping_ends_the_run_where_the_value_stops_improving(backend, tmp_path):
    """No learning at all (lr 0): the validation loss never beats epoch 1's, so the run stops
    after 1 + patience epochs; a resumed run stops at once where the first stopped."""
    def learner(lr, stop, folder=None):
        return Learner(small_mlp(backend), optim.SGD(lr=lr), nn.cross_entropy, schedule=lr,
                       early_stopping=stop, checkpoints=folder, dashboard=False)

    stuck = learner(0.0, EarlyStopping("valid.loss", patience=2), tmp_path / "stuck")
    valid = loader(backend, seed=1, shuffle=False)  # one order: the same loss to the last bit
    stuck.fit(loader(backend), epochs=10, valid=valid)
    assert stuck.stopped_early and stuck.epochs_done == 3
    again = learner(0.0, EarlyStopping("valid.loss", patience=2), tmp_path / "stuck")
    again.fit(loader(backend), epochs=10, valid=valid, resume=True)
    assert again.stopped_early and again.epochs_done == 3 and again.step == stuck.step
    learning = learner(0.5, EarlyStopping("train.loss", patience=1))  # better every epoch
    learning.fit(loader(backend), epochs=4)
    assert not learning.stopped_early and learning.epochs_done == 4
    losses = [record["train"]["loss"] for record in learning.history]
    assert losses == sorted(losses, reverse=True)


def test_early_stopping_can_restore_the_best_epoch(backend, tmp_path):
    """Learning steadily (lr 0.5) while "best" is the highest training loss: epoch 1 stays the
    best, the run stops after epoch 3, and the model ends with epoch 1's parameters (those its
    checkpoint saved). Resumed, they come from that checkpoint, or, pruned, stay the last."""
    def learner(folder, keep=None, out=None):
        stop = EarlyStopping("train.loss", patience=2, mode="max", restore_best=True)
        return Learner(small_mlp(backend), optim.SGD(lr=0.5), nn.cross_entropy,
                       early_stopping=stop, checkpoints=Checkpointer(folder, keep=keep),
                       dashboard=Dashboard(out, log_every=0) if out else False)

    out = io.StringIO()
    run = learner(tmp_path / "all", out=out)
    model = run.fit(loader(backend), epochs=10)
    assert run.stopped_early and run.epochs_done == 3 and model is run.model
    first = run.checkpoints.parameters(0)
    last = run.checkpoints.parameters(2)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, first[name])
        assert not np.array_equal(value, last[name])
    assert "restored the parameters of epoch 1 (train.loss " in out.getvalue()
    assert all(p.requires_grad for p in model.parameters())  # it trains on from there

    resumed = learner(tmp_path / "all")
    again = resumed.fit(loader(backend), epochs=10, resume=True)  # stops at once
    for name, value in again.state_dict().items():
        np.testing.assert_array_equal(value, first[name])

    out = io.StringIO()
    learner(tmp_path / "pruned", keep=1).fit(loader(backend), epochs=10)
    pruned = learner(tmp_path / "pruned", keep=1, out=out)
    kept = pruned.fit(loader(backend), epochs=10, resume=True)
    assert "its checkpoint is gone (Checkpointer(keep=None) keeps every one)" in out.getvalue()
    for name, value in kept.state_dict().items():
        np.testing.assert_array_equal(value, pruned.checkpoints.parameters(2)[name])


def test_early_stopping_rules_and_errors():
    stop = EarlyStopping("valid.accuracy", patience=2, min_delta=0.05)
    assert stop.mode == "max"
    history = [{"epoch": e, "valid": {"accuracy": v}} for e, v in
               enumerate([0.5, 0.8, 0.84, 0.83])]  # 0.84 is within min_delta of 0.8
    assert stop.best_epoch(history) == 1 and stop.should_stop(history)
    assert not stop.should_stop(history[:3]) and stop.best_epoch([]) is None
    assert "the best was 0.8 in epoch 2" in stop.message(history)
    nan_first = [{"epoch": 0, "train": {"loss": float("nan")}}, {"epoch": 1, "train": {"loss": 1}}]
    assert EarlyStopping("train.loss", patience=1).best_epoch(nan_first) == 1
    with pytest.raises(burn.BurnError, match=r"measured no 'valid.loss' \(pass valid= to "
                                             r"Learner.fit\); it has train.loss"):
        EarlyStopping().value({"epoch": 0, "train": {"loss": 1.0}})
    for bad, message in [(lambda: EarlyStopping("loss"), "monitor must name a phase"),
                         (lambda: EarlyStopping(patience=0), "patience must be an int >= 1"),
                         (lambda: EarlyStopping(mode="up"), "mode must be 'min' or 'max'"),
                         (lambda: EarlyStopping(min_delta=-1), "min_delta must be >= 0"),
                         (lambda: Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss,
                                          early_stopping="valid.loss"),
                          "early_stopping must be a burn.train.EarlyStopping")]:
        with pytest.raises(burn.BurnError, match=message):
            bad()


def test_accumulated_batches_step_as_one_larger_batch(backend):
    """Two batches of 12 per step train as batches of 24 do (a mean loss's gradient is the
    mean of its halves'), up to float32 rounding; a short last group steps on its own mean."""
    def fit(batch_size, accumulate, n=16):  # 48 items: 2 batches of 24 an epoch
        learner = Learner(small_mlp(backend), optim.SGD(lr=0.3), nn.cross_entropy,
                          accumulate=accumulate, dashboard=False)
        model = learner.fit(loader(backend, n=n, batch_size=batch_size, shuffle=False),
                            epochs=2)
        return learner, model.state_dict()

    whole, expected = fit(24, 1)
    halves, got = fit(12, 2)
    assert whole.step == halves.step == 4
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    ragged, _ = fit(12, 3)  # 4 batches an epoch: a group of 3, then one of 1
    assert ragged.step == 4
    with pytest.raises(burn.BurnError, match=r"accumulate must be an int >= 1"):
        Learner(nn.Linear(1, 1), optim.SGD(lr=0.1), nn.mse_loss, accumulate=0)
