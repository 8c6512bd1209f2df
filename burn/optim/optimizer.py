"""``Optimizer``: one step from a module and its gradients to the next module.

``step(module, grads)`` returns a new module: each parameter with a gradient is updated on
the Autodiff backend's inner backend and becomes a fresh leaf; a parameter without one (not
reached by the loss, or not tracked) is kept as it was. The optimizer's own state (momentum,
moments) is kept by parameter path (``"layers.0.weight"``), so it follows the parameter from
one step's module to the next. Each update is one kernel per parameter (the backend's
``adam_step``/``sgd_step``); 16-bit float parameters are updated in float32, with their state
in float32, and rounded once.

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
        return state["step"]


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
