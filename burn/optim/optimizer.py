"""``Optimizer``: one step from a module and its gradients to the next module.

``step(module, grads)`` returns a new module: each parameter with a gradient is updated on
the Autodiff backend's inner backend and becomes a fresh leaf; a parameter without one (not
reached by the loss, or not tracked) is kept as it was. The optimizer's own state (momentum,
moments) is kept by parameter path (``"layers.0.weight"``), so it follows the parameter from
one step's module to the next. Each update is one kernel per parameter (the backend's
``adam_step``/``sgd_step``); 16-bit float parameters are updated in float32, with their state
in float32, and rounded once.

With ``capturable`` set (``burn.train.CapturedStep`` sets it) an update is written in place
and reads the numbers that change from step to step (the learning rate, Adam's bias
corrections) from a small device buffer per backend and dtype, which the host rewrites: so a
step captured as a CUDA graph and replayed keeps counting steps and follows ``opt.lr``.

Example:
    >>> opt = burn.optim.SGD(lr=0.1)
    >>> model = opt.step(model, loss.backward())  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubepy.ir import dtypes as dt

from ..autodiff import Autodiff, Gradients
from ..backend.base import BurnError
from ..nn.module import Module
from ..tensor.tensor import Tensor


class Optimizer:
    """Base of the optimizers: subclasses define ``update``."""

    def __init__(self, lr: float):
        if not lr >= 0.0:
            raise BurnError(f"{type(self).__name__}: the learning rate must be >= 0, got {lr}")
        self.lr = lr
        #: per parameter path: the step count and the update rule's buffers (momentum,
        #: moments), kept as inner-backend views (``kernels.layout.View``), not tensors: they
        #: go straight to and come back from the backend's ``sgd_step``/``adam_step``
        self.state: dict[str, dict[str, Any]] = {}
        #: per parameter path: the inner backend its state views live on (for state_dict)
        self._backends: dict[str, Any] = {}
        #: update in place, reading the per-step numbers from device buffers (see above)
        self.capturable = False
        #: (inner backend, compute dtype name) -> [the buffer of per-step numbers, the step
        #: count and learning rate its numbers are for]
        self._numbers: dict[tuple[int, str], list[Any]] = {}
        #: while a step is being captured: buffers are kept (the graph reads them), and the
        #: parameters updated are noted (a replay counts their steps)
        self._capturing: set[str] | None = None
        #: the parameters the captured step updates, once captured, and how numbers are
        #: written into the buffers its graph reads
        self._captured: list[str] | None = None
        self._write: Any = None

    def update(self, name: str, param: Tensor, grad: Tensor, lr: float) -> Tensor:
        """The new value of ``param`` (a tensor of the inner backend) from its gradient, and
        the parameter's state kept in ``self.state[name]``."""
        raise NotImplementedError

    def step(self, module: Module, grads: Gradients, lr: float | None = None) -> Module:
        """The module after one update (``lr`` overrides the optimizer's for this step, as a
        schedule would)."""
        if not isinstance(grads, Gradients):
            raise BurnError(f"{type(self).__name__}.step: expected the Gradients that "
                            f"backward() returned, got {type(grads).__name__}")
        rate = self.lr if lr is None else lr
        if self._capturing is not None and rate != self.lr:
            raise BurnError(f"{type(self).__name__}.step: a captured step replays with "
                            f"opt.lr; set opt.lr = {rate} between calls instead of passing "
                            f"lr= inside the step")

        def updated(name: str, p: Tensor) -> Tensor:
            if not p.requires_grad:
                return p
            grad = grads.get(p)
            if grad is None:
                return p
            inner = p.inner()
            self._backends[name] = inner.backend
            new = self.update(name, inner, grad, rate)
            return new.to(p.backend).require_grad()

        return module.map_parameters(updated)

    def state_dict(self) -> dict[str, np.ndarray]:
        """The optimizer's state as NumPy arrays named ``"<parameter path>/<buffer>"``
        (``"layers.0.weight/exp_avg"``, ``".../step"``), to save beside the model
        (``burn.record.save_file``); the hyperparameters are not in it.

        Example:
            >>> ad = burn.Autodiff(burn.Cpu())
            >>> model, opt = burn.nn.Linear(2, 1).to(ad).require_grad(), burn.optim.Adam()
            >>> loss = model(burn.ones((3, 2), backend=ad)).sum()
            >>> model = opt.step(model, loss.backward())
            >>> sorted(opt.state_dict())[:3]
            ['bias/exp_avg', 'bias/exp_avg_sq', 'bias/step']
        """
        arrays = {}
        for name, entries in self.state.items():
            for key, value in entries.items():
                if key == "step":
                    arrays[f"{name}/step"] = np.array(value, np.int64)
                elif value is not None:
                    arrays[f"{name}/{key}"] = self._backends[name].to_numpy(value)
        return arrays

    def load_state_dict(self, arrays: dict[str, np.ndarray], module: Module) -> None:
        """Restore ``state_dict()``'s arrays; their buffers go to the backend of ``module``'s
        parameter of the same path (the module being trained, as ``step`` will receive it)."""
        params = dict(module.named_parameters())
        state: dict[str, dict[str, Any]] = {}
        backends = {}
        for key, array in arrays.items():
            name, _, buffer = key.rpartition("/")
            if name not in params:
                raise BurnError(f"{type(self).__name__}.load_state_dict: {key!r} belongs to no "
                                f"parameter of the module (it has {sorted(params)})")
            owner = params[name].backend
            # step() updates a parameter on its Autodiff backend's inner backend
            backend = owner.inner if isinstance(owner, Autodiff) else owner
            backends[name] = backend
            array = np.asarray(array)
            state.setdefault(name, {})[buffer] = (
                int(array) if buffer == "step" else backend.from_numpy(array))
        self.state, self._backends = state, backends

    def count(self, name: str) -> int:
        """The step number of parameter ``name`` (1 at its first update)."""
        state = self.state.setdefault(name, {})
        state["step"] = state.get("step", 0) + 1
        if self._capturing is not None:
            self._capturing.add(name)
        return state["step"]

    def step_numbers(self, lr: float, step: int) -> list[float]:
        """The numbers of step ``step`` that ``capturable`` updates read from the device."""
        raise NotImplementedError

    def numbers(self, backend: Any, compute: dt.DType, lr: float, step: int) -> Any:
        """The device buffer (a view on ``backend``) of ``step_numbers(lr, step)`` in
        ``compute``: a fresh one when the numbers change, the same one while capturing."""
        key = (id(backend), compute.name)
        entry = self._numbers.get(key)
        if self._capturing is None:
            if self._captured is not None and entry is not None:
                # a graph reads this buffer: an eager step (a batch of another shape) writes
                # its numbers into it, in stream order, rather than replacing it
                if entry[1:] != [step, lr]:
                    self._write(entry[0], np.array(self.step_numbers(lr, step),
                                                   compute.numpy))
                    entry[1:] = [step, lr]
            elif entry is None or entry[1:] != [step, lr]:
                values = np.array(self.step_numbers(lr, step), compute.numpy)
                entry = self._numbers[key] = [backend.from_numpy(values), step, lr]
            return entry[0]
        if entry is None:
            raise BurnError(f"{type(self).__name__}: a {compute.name} parameter took its "
                            f"first step inside a captured step; run the step uncaptured "
                            f"first (CapturedStep's warm-up does)")
        if entry[1] not in (step, None):
            raise BurnError(f"{type(self).__name__}: a captured step updates parameters at "
                            f"different step counts ({entry[1]} and {step}), which one "
                            f"buffer of numbers cannot serve; capture from a fresh optimizer")
        entry[1:] = [step, lr]
        return entry[0]

    def begin_capture(self) -> None:
        """Keep the buffers of numbers from here on (a graph being captured reads them)."""
        if self._captured is not None:
            # a second graph's warm-up would have replaced the buffers the first one reads
            raise BurnError(f"{type(self).__name__}: this optimizer already serves a captured "
                            f"step; give each CapturedStep its own optimizer (or "
                            f"release_capture() the one no longer used)")
        self.capturable = True
        self._capturing = set()
        for entry in self._numbers.values():
            entry[1] = None  # set again by the captured step's updates

    def end_capture(self, write: Any) -> None:
        """Stop noting updates; ``replayed`` then stands for the captured step, and numbers
        change by ``write(view, values)`` into the buffers the graph reads."""
        self._captured = sorted(self._capturing or ())
        self._capturing = None
        self._write = write

    def release_capture(self) -> None:
        """Forget the captured step (its graph is no longer replayed): buffers of numbers
        may be replaced again, and another step captured."""
        self._captured = None

    def abort_capture(self) -> None:
        """Undo ``begin_capture`` after a capture that failed: its updates never ran."""
        for name in self._capturing or ():
            self.state[name]["step"] -= 1
        self._capturing = None

    def replayed(self, write: Any, first: bool = False) -> None:
        """Before a replay of the captured step: count a step for each parameter it updates
        (not on the ``first`` replay, whose step the capture counted) and ``write(view,
        values)`` the step's numbers into the buffers the graph reads."""
        if not first:
            for name in self._captured:
                self.state[name]["step"] += 1
            for entry in self._numbers.values():
                if entry[1] is not None:
                    entry[1] += 1
        for view, step, _lr in self._numbers.values():
            if step is not None:
                write(view, np.array(self.step_numbers(self.lr, step), view.dtype.numpy))


def clip_grad_norm(grads: Gradients, max_norm: float) -> tuple[Gradients, Tensor]:
    """Gradients scaled so that their global L2 norm is at most ``max_norm``, and that norm
    before scaling (a one-element tensor; nothing is read back to the host).

    Example:
        >>> grads, norm = burn.optim.clip_grad_norm(loss.backward(), 1.0)  # doctest: +SKIP
    """
    leaves = grads.leaves()
    if not leaves:
        raise BurnError("clip_grad_norm: the gradients hold no tensor (the loss depends on no "
                        "parameter)")
    squares = [(g.to(dt.float32) * g.to(dt.float32)).sum() for g in leaves.values()]
    total = squares[0]
    for s in squares[1:]:
        total = total + s
    norm = total.sqrt()
    scale = (max_norm / (norm + 1e-6)).clamp(max=1.0)
    return Gradients({node: g * scale.to(g.dtype) for node, g in leaves.items()}), norm
