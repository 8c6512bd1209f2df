"""burn.train.CapturedStep and the capturable optimizers it relies on.

- On every backend: an optimizer set ``capturable`` (updates in place, per-step numbers read
  from a device buffer) follows the plain one step for step, a learning-rate change included,
  and its steps launch the same numbers each time (what a replay needs), where the plain
  one's do not.
- ``CapturedStep`` on every backend: captured and replayed where CUDA graphs exist (the Cuda
  backend on a GPU), where the steps must match the same steps run eagerly; elsewhere a clear
  refusal at the first call.
- Dropout in a captured step draws as the eager steps do; the bookkeeping of its generators
  (``StepDraws``) on the CPU. Inputs of any layout are captured from copies (the caller's
  tensors are never written), and labels given to a replay are range-checked before it.
- On the GPU: a step whose launches change between warm-up steps is refused, naming its line;
  a step that reads a value back to the host fails to capture with an error saying why.
"""

from __future__ import annotations

import numpy as np
import pytest

import burn
from burn import nn, optim
from burn.backend.base import BurnError
from burn.backend.cube.graphs import graph_support
from burn.train.captured import StepDraws
from cubepy.runtime.trace import first_difference, record_launches
from kernels.optim import adam_numbers

OPTIMIZERS = {
    "adam": lambda: optim.Adam(lr=0.05, weight_decay=0.01),
    "adamw": lambda: optim.AdamW(lr=0.05),
    "sgd": lambda: optim.SGD(lr=0.1),
    "sgd_nesterov": lambda: optim.SGD(lr=0.1, momentum=0.9, nesterov=True),
}
STEPS = 6


class Mlp(nn.Module):
    def __init__(self, backend, dtype=burn.float32):
        generator = burn.Generator(3)
        self.hidden = nn.Linear(8, 16, dtype=dtype, backend=backend, generator=generator)
        self.out = nn.Linear(16, 4, dtype=dtype, backend=backend, generator=generator)

    def forward(self, x):
        return self.out(self.hidden(x).gelu())


class DropoutMlp(Mlp):
    """Dropout from the global generator and from a module's own generator."""

    def __init__(self, backend):
        super().__init__(backend)
        self.drop = nn.Dropout(0.25)
        self.drop_own = nn.Dropout(0.5, generator=burn.Generator(9))

    def forward(self, x):
        return self.out(self.drop_own(self.drop(self.hidden(x)).gelu()))


def capture_refusal(backend):
    """Why a step on ``backend`` cannot be captured (None when it can): ``Fusion`` is
    captured where the backend it wraps is."""
    return graph_support(backend.inner if isinstance(backend, burn.Fusion) else backend)


def batches(backend, dtype=burn.float32):
    rng = np.random.default_rng(7)
    return [burn.tensor(rng.normal(size=(5, 8)).astype(np.float32), backend=backend).to(dtype)
            for _ in range(STEPS)]


def train_step(optimizer):
    def step(model, x):
        loss = (model(x) * model(x)).mean()
        return optimizer.step(model, loss.backward()), loss

    return step


def eager_run(backend, optimizer, capturable):
    ad = burn.Autodiff(backend)
    model, xs = Mlp(ad).require_grad(), batches(ad)
    optimizer.capturable = capturable
    step, losses = train_step(optimizer), []
    for index, x in enumerate(xs):
        if index == STEPS - 2:
            optimizer.lr *= 0.5  # a schedule's change, between steps
        model, loss = step(model, x)
        losses.append(float(loss.numpy()))
    return model, losses


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_capturable_optimizer_follows_the_plain_one(name, backend):
    plain, plain_losses = eager_run(backend, OPTIMIZERS[name](), capturable=False)
    optimizer = OPTIMIZERS[name]()
    captured, losses = eager_run(backend, optimizer, capturable=True)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)
    for (path, p), (_, q) in zip(captured.named_parameters(), plain.named_parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-7, err_msg=path)
    assert {k: v for k, v in optimizer.state_dict().items() if k.endswith("/step")} == \
        {f"{path}/step": STEPS for path, _ in captured.named_parameters()}


def test_capturable_updates_in_place(backend):
    ad = burn.Autodiff(backend)
    model, x = Mlp(ad).require_grad(), batches(ad)[0]
    optimizer = optim.AdamW(lr=0.05)
    optimizer.capturable = True
    before, start = model, model.state_dict()
    model, _ = train_step(optimizer)(model, x)
    for (path, old), (_, new) in zip(before.named_parameters(), model.named_parameters()):
        assert not np.array_equal(new.numpy(), start[path]), path  # the step moved it...
        np.testing.assert_array_equal(old.numpy(), new.numpy(), err_msg=path)  # ...in place


@pytest.mark.parametrize("capturable", [False, True])
def test_launches_repeat_only_when_capturable(capturable, backend):
    ad = burn.Autodiff(backend)
    model, xs = Mlp(ad).require_grad(), batches(ad)
    optimizer = optim.Adam(lr=0.05)
    optimizer.capturable = capturable
    step, records = train_step(optimizer), []
    for x in xs[:3]:
        with record_launches() as launches:
            model, _ = step(model, x)
        records.append(launches)
    difference = first_difference(records[1], records[2])
    if capturable:
        assert difference is None
    else:  # the bias corrections change with the step count
        assert difference is not None and "adam_kernel" in difference
        assert "step_size=" in difference


@pytest.mark.parametrize("fusion", [False, True], ids=["plain", "fusion"])
def test_captured_step_matches_eager_steps(backend, fusion):
    """The GPU test: six captured steps (three warm-up, the capture, two replays) against six
    plain eager ones, also under ``Fusion`` (its fused kernels are captured too); elsewhere
    the refusal."""
    reason = capture_refusal(backend)
    if fusion and not isinstance(backend, burn.Fusion):
        backend = burn.Fusion(backend)
    ad = burn.Autodiff(backend)
    model, xs = Mlp(ad).require_grad(), batches(ad)
    optimizer = optim.AdamW(lr=0.05)
    step = burn.train.CapturedStep(train_step(optimizer), optimizer)
    if reason is not None:
        with pytest.raises(BurnError, match="CUDA graphs need") as info:
            step(model, xs[0])
        assert reason in str(info.value)
        return
    plain, plain_losses = eager_run(backend, optim.AdamW(lr=0.05), capturable=False)
    losses = []
    for index, x in enumerate(xs):
        if index == STEPS - 2:
            optimizer.lr *= 0.5
        model, loss = step(model, x)
        losses.append(loss)
    np.testing.assert_allclose([float(v.numpy()) for v in losses], plain_losses, rtol=1e-5)
    for (path, p), (_, q) in zip(model.named_parameters(), plain.named_parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-7, err_msg=path)


def test_captured_step_with_dropout_draws_as_eager_steps(backend):
    """Dropout inside a captured step: each replay draws new masks (from the global
    generator and a module's own), the masks the eager steps draw, so losses and parameters
    match; both generators end where the eager run leaves them."""
    reason = capture_refusal(backend)
    ad = burn.Autodiff(backend)
    optimizer = optim.SGD(lr=0.1)
    step = burn.train.CapturedStep(train_step(optimizer), optimizer)
    burn.manual_seed(5)
    model, xs = DropoutMlp(ad).require_grad(), batches(ad)
    if reason is not None:
        with pytest.raises(BurnError, match="CUDA graphs need"):
            step(model, xs[0])
        return
    given = [x.numpy() for x in xs]
    losses = [float(step(model, x)[1].numpy()) for x in xs]
    for x, values in zip(xs, given):  # replays copy into the graph's own inputs
        np.testing.assert_array_equal(x.numpy(), values)
    captured_states = burn.default_generator().get_state(), model.drop_own.generator.get_state()
    burn.manual_seed(5)
    plain, plain_step = DropoutMlp(ad).require_grad(), train_step(optim.SGD(lr=0.1))
    plain_losses = []
    for x in xs:
        plain, loss = plain_step(plain, x)
        plain_losses.append(float(loss.numpy()))
    assert captured_states == (burn.default_generator().get_state(),
                               plain.drop_own.generator.get_state())
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)
    assert len(set(losses)) == len(losses)  # new masks each step
    for (path, p), (_, q) in zip(model.named_parameters(), plain.named_parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-7, err_msg=path)


def test_captured_step_takes_inputs_of_any_layout(backend):
    """Transposed inputs (the graph keeps their layout, so the capture launches as the
    warm-up did): the captured losses are the eager ones, and the inputs are not written."""
    reason = capture_refusal(backend)
    ad = burn.Autodiff(backend)
    xs = [x.T.contiguous().T for x in batches(ad)]  # columns of (8, 5) tensors
    assert not any(x.prim.is_contiguous for x in xs)
    given = [x.numpy() for x in xs]
    optimizer = optim.SGD(lr=0.1)
    step = burn.train.CapturedStep(train_step(optimizer), optimizer)
    model = Mlp(ad).require_grad()
    if reason is not None:
        with pytest.raises(BurnError, match="CUDA graphs need"):
            step(model, xs[0])
        return
    losses = [float(step(model, x)[1].numpy()) for x in xs]
    plain, plain_step, plain_losses = Mlp(ad).require_grad(), train_step(optim.SGD(lr=0.1)), []
    for x, values in zip(xs, given):
        np.testing.assert_array_equal(x.numpy(), values)
        plain, loss = plain_step(plain, x)
        plain_losses.append(float(loss.numpy()))
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)


class Classifier(nn.Module):
    def __init__(self, backend):
        self.out = nn.Linear(8, 4, backend=backend, generator=burn.Generator(3))

    def forward(self, x):
        return self.out(x)


def test_replayed_labels_are_range_checked(backend):
    """A replay runs no index check: labels out of the range the captured step indexes are
    refused before the replay, and the step goes on with good ones."""
    reason = capture_refusal(backend)
    ad = burn.Autodiff(backend)
    model, xs = Classifier(ad).require_grad(), batches(ad)
    optimizer = optim.SGD(lr=0.1)

    def step(model, x, y):
        loss = nn.cross_entropy(model(x), y)
        return optimizer.step(model, loss.backward()), loss

    captured = burn.train.CapturedStep(step, optimizer)
    labels = [burn.tensor(np.array([0, 3, 1, 2, i % 4]), backend=ad) for i in range(STEPS)]
    if reason is not None:
        with pytest.raises(BurnError, match="CUDA graphs need"):
            captured(model, xs[0], labels[0])
        return
    for x, y in zip(xs[:4], labels):  # warm-up and capture
        model, _ = captured(model, x, y)
    before = model.out.weight.numpy()
    with pytest.raises(BurnError, match=r"input 1 holds values in \[0, 4\], and the captured "
                                        r"step indexes an axis of size 4 with them"):
        captured(model, xs[4], burn.tensor(np.array([0, 4, 1, 2, 3]), backend=ad))
    computed = burn.tensor(np.array([0, 3, 1, 2, 3]), backend=ad) * 2  # no bounds: read
    with pytest.raises(BurnError, match=r"input 1 holds values in \[0, 6\]"):
        captured(model, xs[4], computed)
    np.testing.assert_array_equal(model.out.weight.numpy(), before)  # no step ran
    _, loss = captured(model, xs[4], labels[4])
    assert np.isfinite(float(loss.numpy()))
    assert not np.array_equal(model.out.weight.numpy(), before)


def test_step_draws_bookkeeping():
    """What a captured step does with its generators, on the CPU: each step draws from the
    state words written before it; the capture draws nothing (the first replay makes its
    draws), a replay writes its words and moves the generator on; a step drawing a
    different count is refused."""
    backend = burn.Cpu()
    generator = burn.Generator(4, 100)
    writes = []

    def write(view, values):
        view.storage[:4] = values
        writes.append(values.tolist())

    draws = StepDraws(backend, [generator], write)
    with draws.step():
        eager = burn.rand(10, backend=backend, generator=generator).numpy()
    np.testing.assert_array_equal(
        eager, burn.rand(10, backend=backend, generator=burn.Generator(4, 100)).numpy())
    assert writes == [[4, 0, 100, 0]] and generator.offset == 110
    with draws.step(captured=True):
        burn.rand(10, backend=backend, generator=generator)
    assert writes[-1] == [4, 0, 110, 0] and generator.offset == 110
    draws.replayed()
    draws.replayed()
    assert writes[-2:] == [[4, 0, 110, 0], [4, 0, 120, 0]] and generator.offset == 130
    with pytest.raises(BurnError, match="drew 11 random numbers, the one before it 10"):
        with draws.step():
            burn.rand(11, backend=backend, generator=generator)


def test_captured_step_refuses_bad_calls():
    ad = burn.Autodiff(burn.Cpu())
    model = Mlp(ad).require_grad()
    with pytest.raises(BurnError, match="warmup must be at least 3"):
        burn.train.CapturedStep(lambda m: m, warmup=2)
    step = burn.train.CapturedStep(lambda m, *xs: m)
    with pytest.raises(BurnError, match="must be the model"):
        step(np.zeros(3))
    with pytest.raises(BurnError, match="input 0 is a float"):
        step(model, 0.5)
    with pytest.raises(BurnError, match="CUDA graphs need the Cuda backend; this step runs "
                                        "on cpu"):
        step(model, batches(ad)[0])


def test_optimizer_refuses_a_learning_rate_passed_while_capturing():
    ad = burn.Autodiff(burn.Cpu())
    model, x = Mlp(ad).require_grad(), batches(ad)[0]
    optimizer = optim.SGD(lr=0.1)
    optimizer.capturable = True
    model = optimizer.step(model, (model(x) * 1.0).sum().backward())
    optimizer.begin_capture()
    try:
        with pytest.raises(BurnError, match=r"set opt.lr = 0.2 between calls"):
            optimizer.step(model, (model(x) * 1.0).sum().backward(), lr=0.2)
    finally:
        optimizer.abort_capture()
    assert optimizer.state_dict()["hidden.weight/step"] == 1


@pytest.mark.gpu
def test_captured_step_names_a_number_that_changes():
    ad = burn.Autodiff(burn.Cuda())
    model, xs = Mlp(ad).require_grad(), batches(ad)
    optimizer = optim.SGD(lr=0.1)
    calls = []

    def step(model, x):
        calls.append(1)
        loss = (model(x) * float(len(calls))).mean()  # a number that changes every step
        return optimizer.step(model, loss.backward()), loss

    captured = burn.train.CapturedStep(step, optimizer)
    with pytest.raises(BurnError, match=r"two warm-up steps launched differently: .*"
                                        r"test_captured\.py:\d+"):
        for x in xs:
            model, _ = captured(model, x)


@pytest.mark.gpu
def test_captured_step_that_reads_the_host_fails_clearly():
    ad = burn.Autodiff(burn.Cuda())
    model, xs = Mlp(ad).require_grad(), batches(ad)
    optimizer = optim.SGD(lr=0.1)

    def step(model, x):
        loss = (model(x) * model(x)).mean()
        loss.numpy()  # a read back to the host: allowed eagerly, not in a graph
        return optimizer.step(model, loss.backward()), loss

    captured = burn.train.CapturedStep(step, optimizer)
    with pytest.raises(BurnError, match="nothing may be read back to the host"):
        for x in xs:
            model, _ = captured(model, x)
    assert optimizer.state_dict()["hidden.weight/step"] == 3  # the warm-up's; nothing lost


def test_a_number_made_a_tensor_is_recorded(backend):
    """``x * v`` makes ``v`` a tensor (uploaded once per value, then kept): a recording
    notes each such number, so one that changes between steps shows."""
    x = burn.tensor(np.ones(3, np.float32), backend=burn.Autodiff(backend))
    records = []
    for value in (2.0, 3.0, 3.0):
        with record_launches() as launches:
            (x * value).numpy()
        records.append(launches)
    difference = first_difference(records[0], records[1])
    assert difference is not None and "(a number as a tensor, from " in difference
    assert difference.endswith("passed value=2.0, then value=3.0")
    assert first_difference(records[1], records[2]) is None


def test_optimizer_bookkeeping_around_a_capture():
    """What ``CapturedStep`` asks of an optimizer, without a GPU: during the capture it keeps
    its buffers of numbers and notes what it updates; before each replay it counts a step
    and writes that step's numbers (learning rate as set then) into the same buffers, as an
    eager step in between does; a second capture waits for ``release_capture``."""
    ad = burn.Autodiff(burn.Cpu())
    model, xs = Mlp(ad).require_grad(), batches(ad)
    optimizer = optim.AdamW(lr=0.05)
    optimizer.capturable = True
    step = train_step(optimizer)
    for x in xs[:2]:
        model, _ = step(model, x)
    optimizer.begin_capture()
    buffers = [entry[0] for entry in optimizer._numbers.values()]
    model, _ = step(model, xs[2])  # what a capture records (here it runs, on the CPU)
    writes = []

    def write(view, values):
        writes.append((view, values))

    optimizer.end_capture(write)
    assert [entry[0] for entry in optimizer._numbers.values()] == buffers

    optimizer.replayed(write, first=True)  # the capture counted this step already
    optimizer.lr = 0.02
    optimizer.replayed(write)
    assert [view for view, _ in writes] == buffers * 2
    np.testing.assert_allclose(writes[0][1], adam_numbers(0.05, (0.9, 0.999), 0.01, 3),
                               rtol=1e-7)
    np.testing.assert_allclose(writes[1][1], adam_numbers(0.02, (0.9, 0.999), 0.01, 4),
                               rtol=1e-7)
    assert {int(v) for k, v in optimizer.state_dict().items() if k.endswith("/step")} == {4}
    model, _ = step(model, xs[3])  # an eager step (another shape, say) writes into them too
    assert [view for view, _ in writes[2:]] == buffers
    np.testing.assert_allclose(writes[2][1], adam_numbers(0.02, (0.9, 0.999), 0.01, 5),
                               rtol=1e-7)
    optimizer.replayed(write)
    np.testing.assert_allclose(writes[3][1], adam_numbers(0.02, (0.9, 0.999), 0.01, 6),
                               rtol=1e-7)
    with pytest.raises(BurnError, match="already serves a captured step"):
        optimizer.begin_capture()
    optimizer.release_capture()
    optimizer.begin_capture()  # another step may be captured now


def learner_run(backend, capture, precision=None):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(72, 8)).astype(np.float32)
    y = rng.normal(size=(72, 4)).astype(np.float32)
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 72, 16)]  # the last has 8
    learner = burn.train.Learner(
        Mlp(burn.Autodiff(backend)), optim.AdamW(lr=0.02), nn.mse_loss,
        schedule=optim.CosineDecay(0.02, total_steps=15), clip_grad_norm=1.0,
        dashboard=False, capture=capture, precision=precision)
    return learner.fit(batches, epochs=3), learner


def test_learner_captures_its_steps(backend):
    """Three epochs of five batches (the last shorter, so run eagerly between replays),
    with a schedule and clipping: the captured learner's losses and model are the eager
    one's; where CUDA graphs do not exist, the first step says so."""
    if capture_refusal(backend) is not None:
        with pytest.raises(BurnError, match="CUDA graphs need"):
            learner_run(backend, capture=True)
        return
    eager_model, eager = learner_run(backend, capture=False)
    model, captured = learner_run(backend, capture=True)
    np.testing.assert_allclose([r["train"]["loss"] for r in captured.history],
                               [r["train"]["loss"] for r in eager.history], rtol=1e-5)
    for (path, p), (_, q) in zip(model.named_parameters(), eager_model.named_parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-7, err_msg=path)
    assert captured.optimizer.state_dict()["out.weight/step"] == 15


@pytest.mark.gpu
def test_learner_captures_mixed_precision_steps():
    """``precision="bfloat16"`` captured: the casts of the parameters and their gradients'
    casts back are in the graph, and the run equals the eager one."""
    eager_model, eager = learner_run(burn.Cuda(), capture=False, precision="bfloat16")
    model, captured = learner_run(burn.Cuda(), capture=True, precision="bfloat16")
    np.testing.assert_allclose([r["train"]["loss"] for r in captured.history],
                               [r["train"]["loss"] for r in eager.history], rtol=1e-5)
    for (path, p), (_, q) in zip(model.named_parameters(), eager_model.named_parameters()):
        assert str(p.dtype) == "f32", path
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-7, err_msg=path)


@pytest.mark.gpu
@pytest.mark.parametrize("momentum", [0.1, None])
def test_captured_step_updates_batch_norm_statistics(momentum):
    """BatchNorm's in-place updates of its running statistics and its batch count are part
    of the graph (momentum=None: the rate 1/count too): after captured steps they are those
    of the same steps run eagerly."""
    def run(capture):
        generator = burn.Generator(2)
        model = nn.Sequential(nn.Linear(8, 16, generator=generator),
                              nn.BatchNorm(16, momentum=momentum),
                              nn.Linear(16, 4, generator=generator)).to(burn.Cuda())
        optimizer = optim.AdamW(lr=0.02)
        step = burn.train.CapturedStep(train_step(optimizer), optimizer) if capture else \
            train_step(optimizer)
        model = model.to(burn.Autodiff(burn.Cuda())).require_grad()
        for x in batches(model.layers[0].weight.backend):
            model, _ = step(model, x)
        return model.state_dict()

    eager, captured = run(False), run(True)
    for name, value in eager.items():
        np.testing.assert_allclose(captured[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    assert not np.allclose(eager["layers.1.running_var"], 1.0)
    assert captured["layers.1.num_batches_tracked"] == 2 * STEPS  # two forwards a step


def test_learner_capture_takes_one_step_per_batch():
    with pytest.raises(BurnError, match="capture=True takes one optimizer step per batch"):
        burn.train.Learner(Mlp(burn.Cpu()), optim.SGD(lr=0.1), nn.mse_loss, accumulate=2,
                           capture=True)
