"""``Learner``: the training loop, with metrics, a learning-rate schedule, gradient clipping,
validation, checkpoints and a terminal dashboard.

Batches are tuples ``(inputs..., target)`` of tensors (or NumPy arrays), as
``burn.data.DataLoader`` yields them; the model is called as ``model(*inputs)`` and the loss
as ``loss(output, target)``. Models are values (``burn.nn.Module``): each step makes the next
model, which the learner keeps as ``learner.model``, and ``fit`` returns the last one.

Example:
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(64, 3)).astype(np.float32)
    >>> y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32))
    >>> batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    >>> learner = burn.train.Learner(burn.nn.Linear(3, 1), burn.optim.Adam(lr=0.1),
    ...                              burn.nn.mse_loss, dashboard=False)
    >>> model = learner.fit(batches, epochs=30)
    >>> learner.history[-1]["train"]["loss"] < 0.01
    True
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..autodiff import Autodiff, Gradients
from ..backend.base import Backend, BurnError
from ..nn.module import Module
from ..optim.optimizer import Optimizer, clip_grad_norm
from ..optim.schedule import resolve
from ..tensor.tensor import Tensor
from .captured import CapturedStep
from .checkpoint import Checkpointer, generator_states, restore_generators
from .dashboard import Dashboard, Silent
from .metrics import Loss, Metric
from .precision import MixedPrecision, resolve_precision
from .stopping import EarlyStopping


class Learner:
    """Trains ``model`` with ``optimizer`` on ``loss(output, target)``.

    - ``schedule``: the learning rate of each step (a ``burn.optim`` schedule, any callable
      of the step number, or a number); the optimizer's ``lr`` when None.
    - ``metrics``: what to measure besides the loss (``burn.train.Accuracy()``, ...), on the
      training batches and on the validation set.
    - ``clip_grad_norm``: scale the gradients to this global L2 norm at most.
    - ``accumulate``: batches per optimizer step; their gradients are averaged (a larger
      batch in less memory when the loss is a mean). An epoch's last, shorter group steps
      with the mean of what it has.
    - ``checkpoints``: a folder (or a ``Checkpointer``) to save the run to after each epoch;
      ``fit(..., resume=True)`` continues from its newest checkpoint.
    - ``dashboard``: True (progress on standard error), False (silent) or a ``Dashboard``.
    - ``early_stopping``: a ``burn.train.EarlyStopping`` ending ``fit`` once its value stops
      improving (``stopped_early`` then says so); with its ``restore_best``, ``fit`` ends
      with the best epoch's parameters.
    - ``capture``: run the training steps as a ``burn.train.CapturedStep`` (three warm-up
      steps, then one CUDA graph replayed; the Cuda backend on a GPU). Batches shaped as the
      first replay it; others (a shorter last batch) run eagerly. One optimizer step per
      batch (``accumulate=1``); the schedule's rate is set as ``optimizer.lr``.
    - ``precision``: ``"bfloat16"`` or ``"float16"`` (or a ``burn.train.MixedPrecision``)
      runs the model in that dtype with its parameters kept and updated in float32, and
      the loss and metrics computed in float32; float16 scales the loss dynamically, and a
      step whose gradients overflow is skipped (the epoch's record counts them).

    The model's parameters are trained on an ``Autodiff`` backend: the one they live on, or
    one wrapped around their backend (``Autodiff(Fusion(Cuda()))`` keeps its fusion).
    """

    def __init__(self, model: Module, optimizer: Optimizer, loss: Callable[[Any, Any], Tensor],
                 *, schedule: Callable[[int], float] | float | None = None,
                 metrics: Sequence[Metric] = (), clip_grad_norm: float | None = None,
                 accumulate: int = 1,
                 checkpoints: str | Path | Checkpointer | None = None,
                 dashboard: bool | Dashboard = True,
                 early_stopping: EarlyStopping | None = None, capture: bool = False,
                 precision: MixedPrecision | str | None = None):
        if not isinstance(model, Module):
            raise BurnError(f"Learner: expected a burn.nn.Module to train, got "
                            f"{type(model).__name__}")
        if not isinstance(optimizer, Optimizer):
            raise BurnError(f"Learner: expected an optimizer such as burn.optim.Adam(lr=1e-3), "
                            f"got {type(optimizer).__name__}")
        if not callable(loss):
            raise BurnError(f"Learner: the loss must be a function of (output, target) such as "
                            f"burn.nn.cross_entropy, got {type(loss).__name__}")
        for metric in metrics:
            if not isinstance(metric, Metric):
                raise BurnError(f"Learner: metrics must be burn.train.Metric instances such as "
                                f"burn.train.Accuracy(), got {type(metric).__name__}")
        if early_stopping is not None and not isinstance(early_stopping, EarlyStopping):
            raise BurnError(f"Learner: early_stopping must be a burn.train.EarlyStopping such "
                            f"as EarlyStopping('valid.loss', patience=3), got "
                            f"{type(early_stopping).__name__}")
        if not isinstance(accumulate, int) or accumulate < 1:
            raise BurnError(f"Learner: accumulate must be an int >= 1 (batches per optimizer "
                            f"step), got {accumulate!r}")
        if clip_grad_norm is not None and not clip_grad_norm > 0:
            raise BurnError(f"Learner: clip_grad_norm must be > 0, got {clip_grad_norm}")
        if capture and accumulate != 1:
            raise BurnError(f"Learner: capture=True takes one optimizer step per batch; "
                            f"accumulate={accumulate} needs capture=False")
        self.precision = resolve_precision(precision)
        if capture and self.precision is not None and self.precision.dynamic:
            raise BurnError("Learner: capture=True replays steps without reading the device, "
                            "and a dynamic loss scale reads whether each step's gradients "
                            "overflowed; use precision='bfloat16', or MixedPrecision("
                            "'float16', loss_scale=1024.0) for a fixed scale")
        self.backend = _autodiff_backend(model)
        if self.precision is not None:
            self.precision.check_backend(self.backend.inner, "Learner(precision=...)")
        self.model = model.to(self.backend).require_grad()
        self.optimizer, self.loss = optimizer, loss
        self.schedule = resolve(schedule, optimizer.lr)
        self.metrics = [Loss(), *(m for m in metrics if not isinstance(m, Loss))]
        self.clip, self.accumulate = clip_grad_norm, accumulate
        self.checkpoints = (checkpoints if isinstance(checkpoints, Checkpointer) or checkpoints
                            is None else Checkpointer(checkpoints))
        self.dashboard = (dashboard if isinstance(dashboard, Dashboard)
                          else Dashboard() if dashboard else Silent())
        self.early_stopping = early_stopping
        #: optimizer steps taken, epochs finished, and one record per finished epoch
        self.step = 0
        self.epochs_done = 0
        self.history: list[dict[str, Any]] = []
        #: whether the last ``fit`` ended because ``early_stopping`` said so
        self.stopped_early = False
        self.capture = capture
        #: (epoch index in history, parameters on the host) of the best epoch so far, kept
        #: when ``early_stopping.restore_best`` is set
        self._best: tuple[int, dict[str, np.ndarray]] | None = None
        self._captured: CapturedStep | None = None
        self._captured_shapes: list[tuple] | None = None  # of the batches the graph takes

    # ---- the loop ----

    def fit(self, train: Iterable[Sequence[Any]], epochs: int, *,
            valid: Iterable[Sequence[Any]] | None = None, resume: bool = False) -> Module:
        """Train until ``epochs`` epochs are done in all (a learner that has done some, or
        resumes from a checkpoint, does only the rest) and return the model. ``train`` and
        ``valid`` are re-iterable collections of batches; a loader with ``set_epoch`` is told
        each epoch's number, so a resumed run shuffles as the uninterrupted one would."""
        if epochs < 0:
            raise BurnError(f"Learner.fit: epochs must be >= 0, got {epochs}")
        if resume:
            self._resume()
        self.stopped_early = False
        try:
            for epoch in range(self.epochs_done, epochs):
                if self._stops_early():  # before each epoch: a resumed run may have stopped
                    break
                self._fit_epoch(train, valid, epoch, epochs)
        except KeyboardInterrupt:
            self.dashboard.message(self._interrupted())
            raise
        if self.early_stopping is not None and self.early_stopping.restore_best:
            self._restore_best()
        return self.model

    def evaluate(self, batches: Iterable[Sequence[Any]], epoch: int | None = None
                 ) -> dict[str, float]:
        """The metrics (the loss first) of the current model over ``batches``, in inference
        mode (``model.eval()``) and without recording gradients."""
        model = self.model.eval().to(self.backend.inner)
        metrics = self._fresh_metrics()
        if epoch is not None and hasattr(batches, "set_epoch"):
            batches.set_epoch(epoch)
        for batch in batches:
            inputs, target = self._split(batch, self.backend.inner)
            output = self._forward(model, inputs)
            loss = self._checked_loss(output, target)
            for metric in metrics:
                metric.update(output, target, loss)
        return {m.name: m.value() for m in metrics}

    def _fit_epoch(self, train: Iterable[Sequence[Any]], valid: Iterable[Sequence[Any]] | None,
                   epoch: int, epochs: int) -> None:
        started = time.perf_counter()
        self.dashboard.start_epoch(epoch, epochs, _length(train))
        skipped = self.precision.skipped_steps if self.precision is not None else 0
        trained = self._train_epoch(train, epoch)
        record: dict[str, Any] = {"epoch": epoch, "step": self.step,
                                  "lr": self.schedule(max(self.step - 1, 0)),
                                  "train": trained}
        if self.precision is not None and self.precision.dynamic:
            record["loss_scale"] = self.precision.scale_factor
            record["skipped_steps"] = self.precision.skipped_steps - skipped
        if valid is not None:
            record["valid"] = self.evaluate(valid, epoch=epoch)
        record["seconds"] = time.perf_counter() - started
        if not math.isfinite(trained["loss"]):
            raise BurnError(
                f"Learner.fit: the training loss of epoch {epoch + 1} is {trained['loss']} "
                f"(the model diverged): lower the learning rate, or pass "
                f"clip_grad_norm=1.0 to the Learner"
                f"{'' if self.checkpoints is None else '; the last checkpoint is kept'}")
        self.history.append(record)
        self.epochs_done = epoch + 1
        stop = self.early_stopping
        if stop is not None and stop.restore_best and \
                stop.best_epoch(self.history) == len(self.history) - 1:
            self._best = (len(self.history) - 1, self.model.state_dict())
        self.dashboard.end_epoch(self._formatted(record), record["seconds"],
                                 f"lr {record['lr']:.3g}")
        if record.get("skipped_steps"):
            self.dashboard.message(
                f"{record['skipped_steps']} step(s) of epoch {epoch + 1} skipped: their "
                f"{self.precision.dtype.name} gradients overflowed; the loss scale is now "
                f"{record['loss_scale']:g}")
        if self.checkpoints is not None:
            state = {"step": self.step, "history": self.history,
                     "generators": generator_states(self.model)}
            if self.precision is not None:
                state["precision"] = self.precision.state_dict()
            self.checkpoints.save(epoch, self.model, self.optimizer, state)

    def _train_epoch(self, batches: Iterable[Sequence[Any]], epoch: int) -> dict[str, float]:
        metrics = self._fresh_metrics()
        if hasattr(batches, "set_epoch"):
            batches.set_epoch(epoch)
        self.model = self.model.train()
        done = items = 0
        pending, count = None, 0  # gradients summed since the last optimizer step
        for batch in batches:
            inputs, target = self._split(batch, self.backend)
            if self.capture:
                output, loss = self._captured_step(inputs, target)
            else:
                output = self._forward(self.model, inputs)
                loss = self._checked_loss(output, target)
                grads = self._backward(loss)
                pending, count = (grads if pending is None else pending + grads), count + 1
                if count == self.accumulate:
                    self._step(pending, count)
                    pending, count = None, 0
            output, target, loss = output.detach(), target.detach(), loss.detach()
            for metric in metrics:
                metric.update(output, target, loss)
            done += 1
            items += target.shape[0] if target.ndim else 1
            self.dashboard.batch(done, items, lambda: {
                m.name: m.format(m.value()) for m in metrics})
        if pending is not None:  # the epoch's last, shorter group
            self._step(pending, count)
        if done == 0:
            raise BurnError("Learner.fit: the training data yielded no batch (an empty loader, "
                            "or an iterator used up by an earlier epoch: pass a list or a "
                            "burn.data.DataLoader, which can be iterated again)")
        return {m.name: m.value() for m in metrics}

    # ---- pieces ----

    def _step(self, grads: Gradients, count: int) -> None:
        """One optimizer step with the mean of ``count`` batches' gradients (none when a
        dynamic loss scale finds that they overflowed)."""
        if self.precision is not None:
            grads = self.precision.unscale(grads, 1.0 / count)
            if grads is None:
                return
        elif count > 1:
            grads = grads.scaled(1.0 / count)
        if self.clip is not None:
            grads, _ = clip_grad_norm(grads, self.clip)
        self.model = self.optimizer.step(self.model, grads, lr=self.schedule(self.step))
        self.step += 1

    def _captured_step(self, inputs: list[Tensor], target: Tensor) -> tuple[Tensor, Tensor]:
        """One training step through the captured graph (or eagerly, for a batch shaped
        otherwise): (output, loss)."""
        batch = [*inputs, target]
        shapes = [(t.shape, t.dtype) for t in batch]
        if self._captured is None:
            self._captured = CapturedStep(self._train_step, self.optimizer)
            self._captured_shapes = shapes
        run = self._captured if shapes == self._captured_shapes else self._train_step
        self.optimizer.lr = self.schedule(self.step)
        self.model, output, loss = run(self.model, *batch)
        self.step += 1
        return output, loss

    def _train_step(self, model: Module, *batch: Tensor) -> tuple[Module, Tensor, Tensor]:
        """Forward, loss, backward (clipped) and update: what ``capture`` replays."""
        *inputs, target = batch
        output = self._forward(model, inputs)
        loss = self._checked_loss(output, target)
        grads = self._backward(loss)
        if self.precision is not None:  # a fixed scale (a dynamic one is refused above)
            grads = self.precision.unscale(grads)
        if self.clip is not None:
            grads, _ = clip_grad_norm(grads, self.clip)
        return self.optimizer.step(model, grads), output.detach(), loss.detach()

    def _forward(self, model: Module, inputs: list[Tensor]) -> Any:
        """The model's output (in float32 under ``precision``, computed in its dtype)."""
        amp = self.precision
        if amp is None:
            return model(*inputs)
        return amp.output(amp.compute_model(model)(*amp.inputs(inputs)))

    def _backward(self, loss: Tensor) -> Gradients:
        return (loss if self.precision is None else self.precision.scale(loss)).backward()

    def _fresh_metrics(self) -> list[Metric]:
        # shallow copies: reset() gives each its own state, and the user's metric objects
        # (which may hold device tensors from earlier use) are neither changed nor deep-copied
        metrics = [copy.copy(m) for m in self.metrics]
        for metric in metrics:
            metric.reset()
        return metrics

    def _split(self, batch: Sequence[Any], backend: Backend) -> tuple[list[Tensor], Tensor]:
        if not isinstance(batch, (tuple, list)) or len(batch) < 2:
            raise BurnError(f"Learner: a batch must be a tuple (inputs..., target), got "
                            f"{type(batch).__name__}"
                            f"{f' of {len(batch)}' if isinstance(batch, (tuple, list)) else ''}")
        values = [_on(value, backend) for value in batch]
        return values[:-1], values[-1]

    def _checked_loss(self, output: Any, target: Tensor) -> Tensor:
        loss = self.loss(output, target)
        if not isinstance(loss, Tensor) or loss.numel() != 1:
            raise BurnError(f"Learner: the loss function must return one number (a tensor of "
                            f"one element, such as a mean over the batch), got "
                            f"{getattr(loss, 'shape', type(loss).__name__)}")
        return loss

    def _resume(self) -> None:
        if self.checkpoints is None:
            raise BurnError("Learner.fit(resume=True) needs checkpoints: "
                            "Learner(..., checkpoints='runs/name')")
        if not self.checkpoints.epochs():
            self.dashboard.message(f"no checkpoint in {self.checkpoints.directory}: "
                                   f"starting from the first epoch")
            return
        model, state = self.checkpoints.load(self.model, self.optimizer)
        self._replace_model(model)
        restore_generators(self.model, state.get("generators", {}))  # none before they were kept
        self.step, self.history = state["step"], state["history"]
        if self.precision is not None and "precision" in state:
            self.precision.load_state_dict(state["precision"])
        self.epochs_done = state["epoch"] + 1
        self.dashboard.message(f"resumed from {self.checkpoints.path(state['epoch'])} "
                               f"(epoch {self.epochs_done}, step {self.step})")

    def _replace_model(self, model: Module) -> None:
        """Train ``model`` from here on (loaded parameters: new storage)."""
        self.model = model.require_grad()
        if self._captured is not None:  # the graph would read the old storage
            self.optimizer.release_capture()
            self._captured = self._captured_shapes = None

    def _restore_best(self) -> None:
        """Give the model the best epoch's parameters (kept in memory, or in that epoch's
        checkpoint after a resume); the optimizer's state stays the last step's."""
        best = self.early_stopping.best_epoch(self.history)
        if best is None or best == len(self.history) - 1:
            return
        saved = self._best[1] if self._best is not None and self._best[0] == best else (
            self.checkpoints.parameters(self.history[best]["epoch"])
            if self.checkpoints is not None else None)
        value = self.early_stopping.value(self.history[best])
        if saved is None:
            self.dashboard.message(f"the best epoch ({best + 1}, {self.early_stopping.monitor} "
                                   f"{value:.4g}) was before a resume and its checkpoint is "
                                   f"gone (Checkpointer(keep=None) keeps every one): the "
                                   f"model is the last epoch's")
            return
        self._replace_model(self.model.load_state_dict(saved))
        self.dashboard.message(f"restored the parameters of epoch {best + 1} "
                               f"({self.early_stopping.monitor} {value:.4g})")

    def _stops_early(self) -> bool:
        if self.early_stopping is None or not self.early_stopping.should_stop(self.history):
            return False
        if not self.stopped_early:
            self.dashboard.message(self.early_stopping.message(self.history))
        self.stopped_early = True
        return True

    def _interrupted(self) -> str:
        where = f"interrupted in epoch {self.epochs_done + 1} at step {self.step}"
        saved = self.checkpoints.epochs() if self.checkpoints is not None else []
        if not saved:
            return (f"{where}; no checkpoint was written (Learner(..., checkpoints='runs/name') "
                    f"saves one after each epoch, to resume from)")
        return (f"{where}; fit(..., resume=True) goes on from the newest checkpoint, "
                f"{self.checkpoints.path(saved[-1])}")

    def _formatted(self, record: dict[str, Any]) -> dict[str, dict[str, str]]:
        formats = {m.name: m.format for m in self.metrics}
        return {phase: {name: formats[name](value) for name, value in record[phase].items()}
                for phase in ("train", "valid") if phase in record}


def _autodiff_backend(model: Module) -> Autodiff:
    backends = {id(p.backend): p.backend for p in model.parameters()}
    if not backends:
        raise BurnError(f"Learner: {type(model).__name__} has no parameter to train")
    if len(backends) > 1:
        raise BurnError(f"Learner: the model's parameters live on several backends "
                        f"({', '.join(sorted(repr(b) for b in backends.values()))}); move it "
                        f"to one with model.to(backend)")
    backend = next(iter(backends.values()))
    return backend if isinstance(backend, Autodiff) else Autodiff(backend)


def _on(value: Any, backend: Backend) -> Tensor:
    if isinstance(value, Tensor):
        return value.to(backend)
    if isinstance(value, np.ndarray):
        return Tensor(backend.from_numpy(value), backend)
    raise BurnError(f"Learner: batch values must be tensors or NumPy arrays, got "
                    f"{type(value).__name__}")


def _length(batches: Any) -> int | None:
    try:
        return len(batches)
    except TypeError:
        return None
